//! The configuration reference, generated from [`super::Config`]'s types: their doc
//! comments, types and defaults (schemars). `docs/config-reference.md` is this page; a
//! test fails when it is stale (`UPDATE_DOCS=1 cargo test -p agentls-host` writes it).

use serde_json::Value;

use super::{entries, resolve};

/// The whole page, in Markdown: a section for every table (`[models.NAME]` and the
/// tables inside tables too), then the top-level keys.
pub fn markdown() -> String {
    let root = super::schema();
    let mut out = String::from(
        "# Configuration reference\n\n\
         <!-- Generated from crates/host/src/config.rs by `UPDATE_DOCS=1 cargo test -p agentls-host`; do not edit. -->\n\n\
         One file configures every entry point: the language server, `agentls run`, `eval`, `acp` and `mcp`.\n\
         Layers, later ones winning key by key: built-in defaults; the user file (`$AGENTLS_CONFIG`, else\n\
         `~/.config/agentls/config.toml`, or `--config FILE`); the workspace's `agentls.toml` (which may not\n\
         choose models, programs or where agentls writes, and may only lower limits); the editor's\n\
         `initializationOptions` and `workspace/didChangeConfiguration`; the command line's flags.\n\
         Every table below is a type the loader parses once; a key no type reads is reported with\n\
         its path and ignored, a value of the wrong type skips its layer and names the key.\n\
         `agentls doctor` prints the layers found and any problem.\n\n\
         An example, parsed by a test through the same loader:\n\n```toml\n",
    );
    out.push_str(EXAMPLE);
    out.push_str("```\n");
    let mut top = Vec::new();
    for (key, prop) in sorted_properties(root) {
        if !section(&mut out, &key, &prop, root) {
            top.push((key, prop));
        }
    }
    out.push_str("\n## Top-level keys\n\n");
    out.push_str(HEADER);
    for (key, prop) in top {
        out.push_str(&row(&key, &prop, root));
    }
    out
}

const HEADER: &str = "| key | type | default | meaning |\n|---|---|---|---|\n";

/// The table `prop` at `path` (a map of tables is `path.NAME`), with its keys and then
/// the tables inside it; `false` when `prop` is no table.
fn section(out: &mut String, path: &str, prop: &Value, root: &Value) -> bool {
    let def = resolve(prop, root);
    let (path, table) = match (def.get("properties"), entries(def)) {
        (Some(_), _) => (path.to_owned(), def),
        (None, Some(entry)) if resolve(entry, root).get("properties").is_some() => {
            (format!("{path}.NAME"), resolve(entry, root))
        }
        _ => return false,
    };
    out.push_str(&format!("\n## `[{path}]`\n"));
    if let Some(d) = description(prop).or_else(|| description(def)) {
        out.push_str(&format!("\n{}\n", one_paragraph(&d)));
    }
    let required: Vec<&str> = table
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut inner = Vec::new();
    let mut rows = String::new();
    for (name, field) in sorted_properties(table) {
        if is_table(&field, root) {
            inner.push((name, field));
        } else {
            let field = match required.contains(&name.as_str()) {
                true => with_default(field, "required"),
                false => field,
            };
            rows.push_str(&row(&name, &field, root));
        }
    }
    if !rows.is_empty() {
        out.push('\n');
        out.push_str(HEADER);
        out.push_str(&rows);
    }
    for (name, field) in inner {
        section(out, &format!("{path}.{name}"), &field, root);
    }
    true
}

/// `field` with its default column saying `what` (a key without a default).
fn with_default(mut field: Value, what: &str) -> Value {
    if let Some(f) = field.as_object_mut() {
        f.insert("x-default".into(), Value::from(what));
    }
    field
}

/// Whether `prop` is a table, or a map of tables, with a section of its own.
fn is_table(prop: &Value, root: &Value) -> bool {
    let def = resolve(prop, root);
    def.get("properties").is_some()
        || entries(def).is_some_and(|e| resolve(e, root).get("properties").is_some())
}

/// The example configuration shown first on the page (and parsed by a test).
pub const EXAMPLE: &str = r#"# ~/.config/agentls/config.toml
[agent]
model = "local"              # new sessions' model; else the first configured
review = "direct"            # or "review": edits wait for accept/reject

[models.local]
wire = "local"               # the embedded model (a build with --features local)
model = "qwen2.5-coder-0.5b"

[models.sonnet]
wire = "anthropic"
base_url = "https://api.anthropic.com/v1"
api_key_env = "ANTHROPIC_API_KEY"

[router]
fast = "local"
strong = "sonnet"

[completion]
model = "local"              # ghost text from this model (default: the embedded one)
languages = { markdown = false }
"#;

/// A schema's `properties`, sorted by name: with serde_json's `preserve_order` (which
/// other crates of the workspace may turn on) a map keeps declaration order, and the
/// page must not depend on which crates were built with it.
fn sorted_properties(schema: &Value) -> std::collections::BTreeMap<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn description(v: &Value) -> Option<String> {
    v.get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn one_paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn row(name: &str, field: &Value, root: &Value) -> String {
    let ty = type_of(field, root);
    let default = match (field.get("default"), field.get("x-default")) {
        (_, Some(Value::String(what))) => what.clone(),
        (None | Some(Value::Null), _) => "unset".to_owned(),
        (Some(v), _) => format!("`{v}`"),
    };
    let meaning = description(field).unwrap_or_default();
    format!(
        "| `{name}` | {ty} | {default} | {} |\n",
        one_paragraph(&meaning).replace('|', "\\|")
    )
}

fn type_of(field: &Value, root: &Value) -> String {
    let def = resolve(field, root);
    if !std::ptr::eq(def, field) {
        return type_of(def, root);
    }
    if let Some(options) = field.get("oneOf").or_else(|| field.get("anyOf")) {
        let parts: Vec<String> = options
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| match o.get("const").or_else(|| o.pointer("/enum/0")) {
                Some(c) => format!("`{c}`"),
                None => type_of(o, root),
            })
            .filter(|t| t != "null")
            .collect();
        return parts.join(" or ");
    }
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let parts: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        return parts.join(" or ");
    }
    match field.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page in docs/ is what the types say today.
    #[test]
    fn the_reference_page_is_generated_from_the_types() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config-reference.md");
        let want = markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is stale: run `UPDATE_DOCS=1 cargo test -p agentls-host`",
            path.display()
        );
        // Every key of the settings has its section (a table, or a map of tables by
        // NAME) or its row among the top-level keys.
        let top = &want[want.find("## Top-level keys").unwrap()..];
        for key in sorted_properties(super::super::schema()).keys() {
            let sections = [format!("## `[{key}]`"), format!("## `[{key}.NAME]`")];
            assert!(
                sections.iter().any(|s| want.contains(s.as_str()))
                    || top.contains(&format!("| `{key}` |")),
                "{key}"
            );
        }
        for table in [
            "[agent]",
            "[models.NAME]",
            "[models.NAME.profile]",
            "[router]",
            "[verify]",
            "[language_servers.NAME]",
            "[mcp.servers.NAME]",
        ] {
            assert!(want.contains(&format!("## `{table}`")), "{table}");
        }
        assert!(want.contains("| `max_steps` | integer | `50` |"), "{want}");
        assert!(top.contains("| `summarizer` | string | unset |"), "{top}");
    }

    /// The example on the page goes through the one loader without a problem, and
    /// its models through the model layer's checks.
    #[test]
    fn the_documented_example_loads_through_the_loader() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, EXAMPLE).unwrap();
        let merged = super::super::load(&super::super::LoadOptions {
            user_file: Some(file.clone()),
            ..Default::default()
        });
        assert!(merged.problems.is_empty(), "{:?}", merged.problems);
        let config = merged.strict(Some(&file)).unwrap();
        assert_eq!(config.agent.model.as_deref(), Some("local"));
        let models = config.models().unwrap();
        assert_eq!(models.models.len(), 2);
        assert!(models.router().unwrap().is_some());
    }

    /// The README's minimal config goes through the same loader without a problem.
    #[test]
    fn the_readmes_config_loads_through_the_loader() {
        let readme = include_str!("../../../../README.md");
        let rest = &readme[readme.find("## Configure a model").unwrap()..];
        let start = rest.find("```toml\n").unwrap() + "```toml\n".len();
        let block = &rest[start..start + rest[start..].find("```").unwrap()];
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, block).unwrap();
        let merged = super::super::load(&super::super::LoadOptions {
            user_file: Some(file.clone()),
            ..Default::default()
        });
        assert!(merged.problems.is_empty(), "{:?}", merged.problems);
        let config = merged.strict(Some(&file)).unwrap();
        assert_eq!(config.default_model().as_deref(), Some("gpt"));
        assert_eq!(config.models().unwrap().models.len(), 2);
    }
}
