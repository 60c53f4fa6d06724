//! `agentls mcp`: the workspace tools served over MCP on stdio, for other agents.

use std::process::ExitCode;

use anyhow::Context;

use crate::cli::McpArgs;

/// Serves until the client closes stdin.
pub fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init(args.log_file.as_deref())?;
    let config = agentls_host::config::load_for_cli(
        args.config.as_deref(),
        Some(&args.workspace),
        serde_json::Value::Null,
    )?;
    let verify = config.verify();
    let root = args
        .workspace
        .canonicalize()
        .with_context(|| format!("workspace {}", args.workspace.display()))?;
    anyhow::ensure!(
        root.is_dir(),
        "workspace {} is not a directory",
        root.display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let ctx = agentls_agent::workspace_context(&root, &verify, !args.read_only).await;
        let server = agentls_mcp::server::WorkspaceServer::new(ctx, args.read_only);
        tracing::info!(
            "mcp: serving {} tool(s) over {}",
            server.names().len(),
            root.display()
        );
        agentls_mcp::server::serve_stdio(server).await
    });
    runtime.shutdown_background();
    result?;
    Ok(ExitCode::SUCCESS)
}
