//! agentls's workspace tools as an MCP server. Every call runs through the same
//! [`ToolContext`] as the agent's own: paths resolve beneath the workspace root, edits
//! are validated and land whole or not at all, commands run in the sandbox and the
//! command policy refuses what it would ask about (there is nobody to ask). Calls that
//! change the workspace run one at a time.

use std::sync::Arc;

use agentls_tools::{Registry, Tool, ToolContext};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// Tools not served: they only make sense inside an agent's own loop.
const NOT_SERVED: [&str; 2] = ["task", "todo"];

/// The server: tools over one workspace.
pub struct WorkspaceServer {
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
    /// Held by calls that change the workspace.
    writes: tokio::sync::Mutex<()>,
}

impl WorkspaceServer {
    /// The standard tools over `ctx`; only read-only ones when `read_only`.
    pub fn new(ctx: ToolContext, read_only: bool) -> Self {
        let registry = Registry::standard();
        let tools = registry
            .names()
            .into_iter()
            .filter(|n| !NOT_SERVED.contains(n))
            .filter_map(|n| registry.get(n).cloned())
            .filter(|t| !read_only || !t.is_mutating())
            .collect();
        Self {
            ctx,
            tools,
            writes: tokio::sync::Mutex::new(()),
        }
    }

    /// The names served, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }

    /// Runs `name` on `args`: the tool's text, and whether it failed.
    pub async fn call(&self, name: &str, args: Value) -> (String, bool) {
        let Some(tool) = self.tools.iter().find(|t| t.spec().name == name) else {
            return (
                format!("no tool {name:?}; tools: {}", self.names().join(", ")),
                true,
            );
        };
        let _guard = if tool.is_mutating() {
            Some(self.writes.lock().await)
        } else {
            None
        };
        match tool.call(&self.ctx, args).await {
            Ok(out) => (out.content, out.failed),
            Err(e) => (e.to_string(), true),
        }
    }

    /// The tool list as MCP shows it: name, description, schema, read-only hint.
    pub fn list(&self) -> Value {
        let tools: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                let spec = t.spec();
                json!({
                    "name": spec.name,
                    "description": spec.description,
                    "inputSchema": spec.parameters,
                    "annotations": {
                        "readOnlyHint": !t.is_mutating(),
                        "destructiveHint": t.is_mutating(),
                    },
                })
            })
            .collect();
        json!({ "tools": tools })
    }
}

/// Serves `server` on stdin/stdout until the client closes them.
pub async fn serve_stdio(server: WorkspaceServer) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let running = server.serve(rmcp::transport::stdio()).await?;
    let reason = running.waiting().await?;
    tracing::info!("mcp: connection ended ({reason:?})");
    Ok(())
}

impl ServerHandler for WorkspaceServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentls", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Tools over the workspace {}: paths are relative to it; edits are validated \
                 and land whole or not at all; commands run in a sandbox.",
                self.ctx.root.display()
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        serde_json::from_value(self.list())
            .map_err(|e| ErrorData::internal_error(format!("tool list: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        tracing::info!(tool = %request.name, "mcp: call");
        let (text, failed) = self.call(&request.name, args).await;
        let content = vec![ContentBlock::text(text)];
        Ok(if failed {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(read_only: bool) -> (tempfile::TempDir, WorkspaceServer) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        let ctx = ToolContext::on_disk(&root);
        (dir, WorkspaceServer::new(ctx, read_only))
    }

    #[tokio::test]
    async fn read_only_serves_no_tool_that_writes() {
        let (_d, all) = server(false);
        let (_d2, ro) = server(true);
        assert!(all.names().contains(&"str_replace"), "{:?}", all.names());
        assert!(!all.names().contains(&"task"));
        assert!(!ro.names().contains(&"str_replace"));
        assert!(!ro.names().contains(&"run_command"));
        assert!(ro.names().contains(&"read_file"));
        let (text, failed) = ro
            .call("write_file", json!({"path": "b", "content": "x"}))
            .await;
        assert!(failed, "{text}");
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let (dir, s) = server(false);
        let (text, failed) = s
            .call("read_file", json!({"path": "../../etc/passwd"}))
            .await;
        assert!(failed, "{text}");
        let (text, failed) = s
            .call(
                "str_replace",
                json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
            )
            .await;
        assert!(!failed, "{text}");
        let now = std::fs::read_to_string(dir.path().join("a.txt")).unwrap();
        assert_eq!(now, "one\n2\n");
    }
}
