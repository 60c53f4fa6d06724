//! MCP servers' tools offered to agentls's model. `[mcp.servers.NAME]` in the user
//! config (never the workspace's: a repository must not pick programs to run) names a
//! server run over stdio (`command`, `args`, `env`) or reached over streamable HTTP
//! (`url`, `headers_env` mapping header names to environment variables). An ACP client
//! may pass more for its session.
//!
//! Each of a server's tools becomes `NAME__tool`. `deny` hides tools; a call to a tool
//! not in `allow` asks the user first (the session's approver), as commands the policy
//! marks `ask` do. A call that outlives `timeout_secs` fails with a timeout; a server
//! that does not start, crashes or hangs costs its own tools, never the session.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agentls_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use async_trait::async_trait;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `[mcp]`: MCP servers whose tools the agent gets (never from a workspace file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// `[mcp.servers.NAME]`: one server each, run over stdio (`command`) or reached
    /// over streamable HTTP (`url`); its tools become `NAME__tool`.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerSpec>,
}

/// `[mcp.servers.NAME]`: one server, run over stdio (`command`) or reached over
/// streamable HTTP (`url`); its tools become `NAME__tool`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// The program, for a stdio server.
    #[serde(default)]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment, added to ours.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The endpoint, for a streamable-HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP headers whose values are read from environment variables: header → variable
    /// (keys stay out of the config file).
    #[serde(default)]
    pub headers_env: BTreeMap<String, String>,
    /// HTTP headers given as values (an ACP client's servers); never read from a file.
    #[serde(skip)]
    pub headers: BTreeMap<String, String>,
    /// Tools that run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Tools never offered.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Longest a call or the start may take.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// `false` keeps the server configured but off.
    #[serde(default = "default_true")]
    pub enabled: bool,
}

fn default_timeout() -> u64 {
    60
}

fn default_true() -> bool {
    true
}

impl ServerSpec {
    /// A stdio server.
    pub fn stdio(command: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            command: Some(command.into()),
            args,
            env: BTreeMap::new(),
            url: None,
            headers_env: BTreeMap::new(),
            headers: BTreeMap::new(),
            allow: Vec::new(),
            deny: Vec::new(),
            timeout_secs: default_timeout(),
            enabled: true,
        }
    }
}

/// A connected server and the tools it offers.
pub struct Connected {
    /// Its configured name.
    pub name: String,
    /// Its tools as the model sees them.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Keeps the connection (and a stdio server's process) alive.
    _service: Arc<RunningService<RoleClient, ()>>,
}

impl std::fmt::Debug for Connected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connected")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// Connects every enabled server of `config`, each within its timeout, in parallel:
/// the servers that answered, and for each one that did not, why.
pub async fn connect_all(config: &McpConfig) -> (Vec<Connected>, Vec<(String, String)>) {
    let attempts = config
        .servers
        .iter()
        .filter(|(_, spec)| spec.enabled)
        .map(|(name, spec)| async move { (name.clone(), connect(name, spec).await) });
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (name, result) in futures_join_all(attempts).await {
        match result {
            Ok(c) => ok.push(c),
            Err(e) => {
                tracing::warn!("mcp server {name}: {e:#}; its tools are not offered");
                failed.push((name, format!("{e:#}")));
            }
        }
    }
    (ok, failed)
}

/// Awaits all of `futures` (a tiny `join_all`; the crate needs no more of `futures`).
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let handles: Vec<_> = futures.map(Box::pin).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await);
    }
    out
}

/// Connects one server and lists its tools.
pub async fn connect(name: &str, spec: &ServerSpec) -> anyhow::Result<Connected> {
    use rmcp::ServiceExt;
    anyhow::ensure!(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "server names are letters, digits, `_` and `-`"
    );
    let timeout = Duration::from_secs(spec.timeout_secs.max(1));
    let service = match (&spec.command, &spec.url) {
        (Some(command), None) => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&spec.args).envs(&spec.env).kill_on_drop(true);
            let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()?;
            tokio::time::timeout(timeout, ().serve(transport)).await??
        }
        (None, Some(url)) => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut values = spec.headers.clone();
            for (header, var) in &spec.headers_env {
                let value = std::env::var(var)
                    .map_err(|_| anyhow::anyhow!("header {header}: ${var} is not set"))?;
                values.insert(header.clone(), value);
            }
            let mut headers = std::collections::HashMap::new();
            for (header, value) in &values {
                headers.insert(
                    reqwest::header::HeaderName::from_bytes(header.as_bytes())?,
                    reqwest::header::HeaderValue::from_str(value)?,
                );
            }
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
            // reqwest is built without a default TLS provider (see the workspace
            // Cargo.toml): install ring's, as the model client does.
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                let _ = rustls::crypto::ring::default_provider().install_default();
            }
            let http = reqwest::Client::builder()
                .connect_timeout(timeout)
                .build()?;
            let transport =
                rmcp::transport::StreamableHttpClientTransport::with_client(http, config);
            tokio::time::timeout(timeout, ().serve(transport)).await??
        }
        _ => anyhow::bail!("give either `command` (stdio) or `url` (streamable HTTP)"),
    };
    let listed = tokio::time::timeout(timeout, service.list_all_tools()).await??;
    let service = Arc::new(service);
    let tools = listed
        .into_iter()
        .filter(|t| !spec.deny.iter().any(|d| d == t.name.as_ref()))
        .map(|t| {
            let read_only = t
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            Arc::new(McpTool {
                server: name.to_owned(),
                tool: t.name.to_string(),
                spec: ToolSpec {
                    name: intern(&format!("{name}__{}", t.name)),
                    description: intern(t.description.as_deref().unwrap_or_default()),
                    parameters: Value::Object((*t.input_schema).clone()),
                },
                read_only,
                allowed: spec.allow.iter().any(|a| a == t.name.as_ref()),
                timeout,
                service: service.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    Ok(Connected {
        name: name.to_owned(),
        tools,
        _service: service,
    })
}

/// Tool specs hold `&'static str`: each distinct name or description is leaked once.
fn intern(s: &str) -> &'static str {
    static SEEN: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(known) = seen.get(s) {
        return known;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    seen.insert(leaked);
    leaked
}

/// One tool of an MCP server.
struct McpTool {
    server: String,
    tool: String,
    spec: ToolSpec,
    read_only: bool,
    /// Runs without asking.
    allowed: bool,
    timeout: Duration,
    service: Arc<RunningService<RoleClient, ()>>,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn is_mutating(&self) -> bool {
        !self.read_only
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let Value::Object(arguments) = args else {
            return Err(ToolError::invalid_arguments(format!(
                "{}: arguments must be a JSON object",
                self.spec.name
            )));
        };
        if !self.allowed {
            let shown: String = Value::Object(arguments.clone())
                .to_string()
                .chars()
                .take(200)
                .collect();
            let what = format!(
                "call the MCP tool {} of server {} with {shown}",
                self.tool, self.server
            );
            if !ctx.approver.approve(&what).await {
                return Err(ToolError::aborted(format!(
                    "the user did not allow the MCP tool {}; do without it or ask them",
                    self.spec.name
                )));
            }
        }
        let params = CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments);
        let call = self.service.call_tool(params);
        let result = tokio::select! {
            r = tokio::time::timeout(self.timeout, call) => r,
            () = ctx.cancel.cancelled() => {
                return Err(ToolError::aborted("cancelled"));
            }
        };
        let result = match result {
            Err(_) => {
                return Err(ToolError::timeout(format!(
                    "{}: no answer from MCP server {} within {} s",
                    self.spec.name,
                    self.server,
                    self.timeout.as_secs()
                )));
            }
            Ok(Err(e)) => {
                return Err(ToolError::environment(format!(
                    "{}: MCP server {} failed: {e}",
                    self.spec.name, self.server
                )));
            }
            Ok(Ok(r)) => r,
        };
        let mut text = String::new();
        for block in &result.content {
            let v = serde_json::to_value(block).unwrap_or(Value::Null);
            match v["text"].as_str() {
                Some(t) => text.push_str(t),
                None => text.push_str(&format!(
                    "[{} content]",
                    v["type"].as_str().unwrap_or("other")
                )),
            }
        }
        if let Some(structured) = &result.structured_content
            && text.is_empty()
        {
            text = structured.to_string();
        }
        let failed = result.is_error.unwrap_or(false);
        Ok(ToolOutput::text(text).failed(failed))
    }
}
