//! The registry and dispatcher, and the tools that talk to the session: todo and task.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;

use agentls_model::{CancellationToken, EditFormat};
use agentls_tools::{
    ErrorClass, Registry, SubagentRunner, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use async_trait::async_trait;
use common::ws;
use serde_json::{Value, json};

#[test]
fn profiles_get_one_edit_tool_and_ask_mode_reads_only() {
    let all = Registry::standard();
    let patch = all.for_profile(EditFormat::ApplyPatch);
    assert!(patch.get("apply_patch").is_some());
    assert!(patch.get("str_replace").is_none() && patch.get("insert").is_none());
    let sr = all.for_profile(EditFormat::StrReplace);
    assert!(sr.get("str_replace").is_some() && sr.get("insert").is_some());
    assert!(sr.get("apply_patch").is_none());
    let ro = sr.read_only();
    assert_eq!(
        ro.names(),
        [
            "read_file",
            "list_dir",
            "find_files",
            "grep",
            "symbols",
            "navigate",
            "repo_map",
            "semantic_search",
            "diagnostics",
            "todo"
        ]
    );
    assert!(all.is_mutating("run_command") && all.is_mutating("no_such_tool"));
    assert!(!all.is_mutating("grep"));
}

#[test]
fn every_spec_is_an_object_schema_with_a_description() {
    let specs = Registry::standard().specs();
    let mut names: Vec<&str> = specs.iter().map(|s| s.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), specs.len(), "duplicate tool names");
    for s in &specs {
        assert!(
            s.description.len() > 30,
            "{}: description too short",
            s.name
        );
        assert_eq!(s.parameters["type"], "object", "{}", s.name);
        assert_eq!(s.parameters["additionalProperties"], false, "{}", s.name);
        let props = s.parameters["properties"].as_object().unwrap();
        for r in s.parameters["required"].as_array().into_iter().flatten() {
            assert!(props.contains_key(r.as_str().unwrap()), "{}: {r}", s.name);
        }
    }
}

/// The schemas are derived from the argument types (`schemars`) in the shape models
/// take: flat, inlined, no `null` unions, every property described.
#[test]
fn derived_schemas_are_flat_described_and_null_free() {
    fn walk(name: &str, v: &Value) {
        match v {
            Value::Object(map) => {
                for key in ["$ref", "$defs", "$schema", "title", "definitions"] {
                    assert!(!map.contains_key(key), "{name}: {key} in {v}");
                }
                match map.get("type") {
                    Some(Value::String(t)) => assert_ne!(t, "null", "{name}: {v}"),
                    Some(other) => panic!("{name}: a type that is not one name: {other}"),
                    None => {}
                }
                for key in ["anyOf", "oneOf"] {
                    assert!(!map.contains_key(key), "{name}: {key} in {v}");
                }
                if let Some(Value::Array(values)) = map.get("enum") {
                    assert!(values.iter().all(Value::is_string), "{name}: {v}");
                }
                if let Some(Value::Object(props)) = map.get("properties") {
                    assert_eq!(map["additionalProperties"], false, "{name}: {v}");
                    for (prop, schema) in props {
                        if !prop.is_empty() {
                            assert!(
                                schema["description"].is_string(),
                                "{name}.{prop} has no description"
                            );
                        }
                    }
                }
                map.values().for_each(|v| walk(name, v));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(name, v)),
            _ => {}
        }
    }
    for s in Registry::standard().specs() {
        walk(s.name, &s.parameters);
    }
}

/// A sample value for property `name` with `schema`: what a model filling in the schema
/// would send. Strings are distinct per property (so no edit is a no-op), integers the
/// minimum (at least 1), enums their first value; `all` fills in the optional
/// properties of objects too, not only the required ones.
fn sample(name: &str, schema: &Value, all: bool) -> Value {
    if let Some(first) = schema["enum"].get(0) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("integer") => schema["minimum"].as_i64().unwrap_or(1).max(1).into(),
        Some("boolean") => all.into(),
        Some("array") => json!([sample(name, &schema["items"], all)]),
        Some("object") => {
            let props = schema["properties"].as_object().unwrap();
            let required: Vec<&str> = schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            props
                .iter()
                .filter(|(p, _)| all || required.contains(&p.as_str()))
                .map(|(p, s)| (p.clone(), sample(p, s, all)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        }
        // A string with a grammar of its own, which a schema does not say.
        Some("string") if name == "patch" => SAMPLE_PATCH.into(),
        Some("string") => format!("{name}-value").into(),
        other => panic!("{name}: no sample for type {other:?}"),
    }
}

/// A patch that adds a file (the workspace has no `added.txt`).
const SAMPLE_PATCH: &str = "*** Begin Patch\n*** Add File: added.txt\n+added\n*** End Patch\n";

/// The files the samples name, so that a sample is a call that can succeed.
const SAMPLE_FILES: &[(&str, &str)] = &[
    ("path-value", "old_string-value symbol-value\n"),
    ("from-value", "moved\n"),
];

/// Tools whose required properties alone are not a valid call: `navigate`'s first
/// action, `definition`, also needs `line` and `symbol` (said in the descriptions; a
/// flat schema cannot say "required for some actions"). Their required-only sample must
/// still parse; the sample with every property must be a valid call.
const REQUIRED_IS_NOT_ENOUGH: &[&str] = &["navigate"];

/// `args` once per object in it, each time with one property no schema names added.
fn with_unknown_property(args: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match args {
        Value::Object(map) => {
            let mut extra = map.clone();
            extra.insert("zz_not_in_schema".to_owned(), json!(1));
            out.push(extra.into());
            for (k, v) in map {
                for inner in with_unknown_property(v) {
                    let mut m = map.clone();
                    m.insert(k.clone(), inner);
                    out.push(m.into());
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                for inner in with_unknown_property(v) {
                    let mut a = items.clone();
                    a[i] = inner;
                    out.push(a.into());
                }
            }
        }
        _ => {}
    }
    out
}

/// Every schema describes what its tool parses: an object built from the schema (its
/// required properties, then all of them) is not refused as invalid arguments, and a
/// property the schema does not name, at any level, is, by name (every argument type
/// denies unknown fields, as every schema says with `additionalProperties: false`).
#[tokio::test]
async fn what_each_schema_describes_is_what_its_tool_parses() {
    for spec in Registry::standard().specs() {
        let tool = spec.name;
        for all in [false, true] {
            // A workspace per call: the samples edit, move and delete files.
            let w = ws(SAMPLE_FILES);
            // Read first, as write_file wants of a file it replaces whole.
            let read = r#"{"path": "path-value"}"#;
            w.registry.call(&w.ctx, "read_file", read).await.unwrap();
            let args = sample(tool, &spec.parameters, all);
            if let Err(e) = w.registry.call(&w.ctx, tool, &args.to_string()).await {
                // The parsers' refusals (`parse_args`, the edit tools' `parse_ops`).
                let unparsed = e
                    .message
                    .starts_with(&format!("{tool}: invalid arguments:"));
                let only_parse_checked = !all && REQUIRED_IS_NOT_ENOUGH.contains(&tool);
                assert!(
                    e.class != ErrorClass::InvalidArguments || (only_parse_checked && !unparsed),
                    "{tool}: the schema's sample {args} was refused: {}",
                    e.message
                );
            }
            for extra in with_unknown_property(&args) {
                let e = w
                    .registry
                    .call(&w.ctx, tool, &extra.to_string())
                    .await
                    .expect_err(tool);
                assert_eq!(
                    e.class,
                    ErrorClass::InvalidArguments,
                    "{tool}: {}",
                    e.message
                );
                assert!(
                    e.message.contains("unknown field `zz_not_in_schema`"),
                    "{tool}: {extra} was refused without naming the property: {}",
                    e.message
                );
            }
        }
    }
}

#[tokio::test]
async fn broken_calls_are_invalid_arguments() {
    let w = ws(&[("a.txt", "a\n")]);
    let r = &w.registry;
    let e = r.call(&w.ctx, "raed_file", "{}").await.unwrap_err();
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(
        e.message.contains("available tools: read_file"),
        "{}",
        e.message
    );
    let e = r
        .call(&w.ctx, "read_file", r#"{"path": "a.txt""#)
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(e.message.contains("not valid JSON"), "{}", e.message);
    let e = r.call(&w.ctx, "read_file", "[1]").await.unwrap_err();
    assert!(e.message.contains("an array"), "{}", e.message);
    let e = r.call(&w.ctx, "read_file", "").await.unwrap_err();
    assert!(e.message.contains("missing field `path`"), "{}", e.message);
    // Empty arguments are an empty object for tools without required fields.
    assert!(r.call(&w.ctx, "list_dir", "").await.is_ok());
}

struct Panics;

#[async_trait]
impl Tool for Panics {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "panics",
            description: "always panics",
            parameters: json!({"type": "object"}),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        panic!("boom")
    }
}

struct Sleeps;

#[async_trait]
impl Tool for Sleeps {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "sleeps",
            description: "sleeps a minute",
            parameters: json!({"type": "object"}),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        Ok(ToolOutput::text("woke"))
    }
}

#[tokio::test]
async fn a_panic_is_unknown_and_cancellation_is_user_aborted() {
    let w = ws(&[]);
    let r = Registry::from_tools(vec![Arc::new(Panics), Arc::new(Sleeps)]);
    let e = r.call(&w.ctx, "panics", "{}").await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Unknown);
    let cancel = w.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let e = r.call(&w.ctx, "sleeps", "{}").await.unwrap_err();
    assert_eq!(e.class, ErrorClass::UserAborted);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let e = r.call(&w.ctx, "sleeps", "{}").await.unwrap_err();
    assert_eq!(e.class, ErrorClass::UserAborted, "already cancelled");
}

#[tokio::test]
async fn todo_keeps_the_plan_where_the_session_can_show_it() {
    let mut w = ws(&[]);
    let rec = Arc::new(common::Recorder::default());
    w.ctx.progress = Some(rec.clone());
    let out = w
        .ok(
            "todo",
            json!({"todos": [
                {"content": "find the bug", "status": "completed"},
                {"content": "fix it", "status": "in_progress"},
                {"content": "run the tests", "status": "pending"}
            ]}),
        )
        .await;
    assert_eq!(
        out,
        "1. [x] find the bug\n2. [>] fix it\n3. [ ] run the tests"
    );
    let items = w.registry.todos().items();
    assert_eq!(items.len(), 3);
    assert_eq!(
        rec.plans.lock().unwrap().clone(),
        vec![items.clone()],
        "the new plan is reported"
    );
    assert_eq!(items[0].status.as_str(), "completed");
    assert_eq!(items[1].content, "fix it");
    // Profile subsets share the plan.
    let sub = w.registry.for_profile(EditFormat::ApplyPatch).read_only();
    assert_eq!(sub.todos().items().len(), 3);
    let e = w
        .err(
            "todo",
            json!({"todos": [{"content": "x", "status": "doing"}]}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
}

struct Echo;

#[async_trait]
impl SubagentRunner for Echo {
    async fn run(
        &self,
        prompt: String,
        model: Option<String>,
        _cancel: CancellationToken,
        _progress: Option<std::sync::Arc<dyn agentls_tools::ToolProgress>>,
    ) -> Result<String, ToolError> {
        Ok(format!("did `{prompt}` on {}", model.unwrap_or_default()))
    }
}

#[tokio::test]
async fn task_runs_a_subagent_when_there_is_one() {
    let mut w = ws(&[]);
    let e = w.err("task", json!({"prompt": "look around"})).await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
    w.ctx.subagents = Some(Arc::new(Echo));
    let out = w
        .ok("task", json!({"prompt": "look around", "model": "small"}))
        .await;
    assert_eq!(out, "did `look around` on small");
}

/// Small models copy examples from tool descriptions word for word (a `cargo test -p foo
/// | tail` ran 37 times in a Python repository): descriptions say what to pass, with no
/// sample value to copy.
#[test]
fn no_tool_description_carries_a_value_to_copy() {
    fn texts(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    if k == "description"
                        && let Some(s) = v.as_str()
                    {
                        out.push(s.to_owned());
                    }
                    texts(v, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| texts(v, out)),
            _ => {}
        }
    }
    for spec in Registry::standard().specs() {
        let mut all = vec![spec.description.to_owned()];
        texts(&spec.parameters, &mut all);
        for text in all {
            for marker in ["e.g.", "for example", "such as `"] {
                assert!(
                    !text.contains(marker),
                    "{}: {marker:?} in {text:?}",
                    spec.name
                );
            }
        }
    }
}
