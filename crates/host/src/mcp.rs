//! The tools sessions get: the standard registry and those of the user's `[mcp]`
//! servers (connected once per host, then shared), plus a session's own servers (an
//! ACP client's).

use agentls_agent::ToolSet;

/// The standard tools and those of `servers`' (each connected within its timeout; one
/// that fails costs its own tools, with a warning).
pub async fn tools_with(servers: &agentls_mcp::McpConfig) -> ToolSet {
    let mut tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    for tool in connect(servers).await {
        tools.insert(tool);
    }
    tools
}

/// The tools of `servers`, connected now.
pub async fn connect(
    servers: &agentls_mcp::McpConfig,
) -> Vec<std::sync::Arc<dyn agentls_tools::Tool>> {
    let (connected, _failed) = agentls_mcp::connect_all(servers).await;
    let mut tools = Vec::new();
    for server in connected {
        tracing::info!("mcp server {}: {} tool(s)", server.name, server.tools.len());
        tools.extend(server.tools);
    }
    tools
}
