//! Test tools and helpers shared by the end-to-end tests.
#![allow(dead_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentls_agent::{Session, SessionConfig, StaticContext, ToolSet};
use agentls_model::{
    ClientOptions, HttpProvider, ModelProfile, ProviderSpec, RetryPolicy, WireFormat,
};
use agentls_testkit::model_server::{ModelServer, Turn};
use agentls_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};
use async_trait::async_trait;
use serde_json::{Value, json};

/// Start/end of every call, by tool name, relative to `epoch`.
#[derive(Clone)]
pub struct Spans {
    pub epoch: Instant,
    pub spans: Arc<Mutex<Vec<(String, Duration, Duration)>>>,
}

impl Default for Spans {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            spans: Arc::default(),
        }
    }
}

impl Spans {
    fn push(&self, name: &str, start: Instant) {
        self.spans.lock().unwrap().push((
            name.to_owned(),
            start - self.epoch,
            self.epoch.elapsed(),
        ));
    }
    pub fn get(&self) -> Vec<(String, Duration, Duration)> {
        self.spans.lock().unwrap().clone()
    }
}

fn schema() -> Value {
    json!({"type": "object"})
}

/// `read_file {path, delay_ms?}`: reads a file under the root (read-only).
pub struct ReadFile(pub Spans);

#[derive(serde::Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    delay_ms: u64,
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file",
            description: "Read a file.",
            parameters: schema(),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let start = Instant::now();
        let a: ReadArgs = parse_args("read_file", args)?;
        tokio::time::sleep(Duration::from_millis(a.delay_ms)).await;
        let r = tokio::fs::read_to_string(ctx.root.join(&a.path))
            .await
            .map(ToolOutput::text)
            .map_err(|e| ToolError::environment(format!("{}: {e}", a.path)));
        self.0.push("read_file", start);
        r
    }
}

/// `grep {pattern}`: lines containing `pattern` in files directly under `src/`.
pub struct Grep;

#[async_trait]
impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep",
            description: "Search.",
            parameters: schema(),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let pattern = args["pattern"]
            .as_str()
            .ok_or_else(|| ToolError::invalid_arguments("pattern missing"))?;
        let mut out = String::new();
        for e in std::fs::read_dir(ctx.root.join("src"))
            .map_err(|e| ToolError::environment(e.to_string()))?
        {
            let p = e.map_err(|e| ToolError::environment(e.to_string()))?.path();
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for (i, l) in text.lines().enumerate() {
                if l.contains(pattern) {
                    let rel = p.strip_prefix(&ctx.root).unwrap().display();
                    out.push_str(&format!("{rel}:{}:{l}\n", i + 1));
                }
            }
        }
        Ok(ToolOutput::text(out))
    }
}

/// `str_replace {path, old, new}`: mutating; fails when `old` is not found.
pub struct StrReplace(pub Spans, pub u64);

#[async_trait]
impl Tool for StrReplace {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "str_replace",
            description: "Replace text.",
            parameters: schema(),
        }
    }
    fn is_mutating(&self) -> bool {
        true
    }
    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(self.1)).await;
        let path = ctx.root.join(args["path"].as_str().unwrap_or_default());
        let old = args["old"].as_str().unwrap_or_default();
        let new = args["new"].as_str().unwrap_or_default();
        let text =
            std::fs::read_to_string(&path).map_err(|e| ToolError::environment(e.to_string()))?;
        let r = if old.is_empty() || !text.contains(old) {
            Err(ToolError::invalid_arguments(format!(
                "old text {old:?} not found in the file"
            )))
        } else {
            std::fs::write(&path, text.replacen(old, new, 1)).unwrap();
            Ok(ToolOutput::text("replaced 1 occurrence"))
        };
        self.0.push("str_replace", start);
        r
    }
}

/// `run_tests`: "FAILED" unless src/lib.rs has no `a - b`.
pub struct RunTests;

#[async_trait]
impl Tool for RunTests {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_tests",
            description: "Run the tests.",
            parameters: schema(),
        }
    }
    fn is_mutating(&self) -> bool {
        true
    }
    async fn call(&self, ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        let text = std::fs::read_to_string(ctx.root.join("src/lib.rs")).unwrap_or_default();
        if text.contains("a - b") {
            Ok(ToolOutput::text(
                "running 1 test\ntest tests::adds ... FAILED\ntest result: FAILED. 0 passed; 1 failed",
            ))
        } else {
            Ok(ToolOutput::text(
                "running 1 test\ntest tests::adds ... ok\ntest result: ok. 1 passed",
            ))
        }
    }
}

/// `wait`: runs until cancelled (honours ctx.cancel), reporting that it saw the cancel.
pub struct Wait(pub Arc<Mutex<bool>>);

#[async_trait]
impl Tool for Wait {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "wait",
            description: "Wait.",
            parameters: schema(),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(&self, ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        ctx.cancel.cancelled().await;
        *self.0.lock().unwrap() = true;
        Err(ToolError::aborted("stopped"))
    }
}

/// `boom`: panics.
pub struct Boom;

#[async_trait]
impl Tool for Boom {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "boom",
            description: "Panics.",
            parameters: schema(),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        panic!("a bug in a tool")
    }
}

pub fn tools(spans: &Spans, write_delay_ms: u64) -> ToolSet {
    ToolSet::new(vec![
        Arc::new(ReadFile(spans.clone())),
        Arc::new(Grep),
        Arc::new(StrReplace(spans.clone(), write_delay_ms)),
        Arc::new(RunTests),
        Arc::new(Boom),
    ])
}

pub fn provider(
    server: &ModelServer,
    wire: WireFormat,
    profile: ModelProfile,
) -> Arc<HttpProvider> {
    let spec = ProviderSpec {
        name: "fixture".into(),
        wire,
        base_url: server.url(),
        model_id: "fixture-model".into(),
        key: None,
        profile,
    };
    let options = ClientOptions {
        retry: RetryPolicy::fast(0),
        ..ClientOptions::default()
    };
    Arc::new(HttpProvider::new(spec, options).unwrap())
}

/// A fixture crate with a failing test: `add` subtracts.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"calc\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("AGENTS.md"),
        "Run the tests after every edit.",
    )
    .unwrap();
    dir
}

pub async fn session(
    server: &ModelServer,
    root: &Path,
    tools: ToolSet,
    config: SessionConfig,
    profile: ModelProfile,
) -> Session {
    let ctx = agentls_tools::ToolContext::on_disk(root);
    let static_ctx = StaticContext::gather(root, &[]).await;
    Session::new(
        provider(server, WireFormat::OpenaiChat, profile),
        tools,
        ctx,
        config,
        static_ctx,
    )
}

pub fn call(id: &str, name: &str, args: Value) -> Turn {
    Turn::default()
        .tool_call(id, name, args)
        .usage(1000, 800, 20)
}

/// Tool-result texts the server saw in the last request (chat wire: role "tool").
pub fn tool_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            m["content"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| m["content"].to_string())
        })
        .collect()
}
