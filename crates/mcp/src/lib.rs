//! The Model Context Protocol, both ways.
//!
//! - [`server::WorkspaceServer`]: agentls's own workspace tools (read, grep, symbols,
//!   repo map, validated edits, the sandboxed command runner) served to other agents
//!   (`agentls mcp`), with the same path rules, sandbox and command policy as the agent's.
//! - [`client`]: MCP servers' tools offered to agentls's model (`[mcp.servers.NAME]`,
//!   and the servers an ACP client passes), prefixed with the server's name, asked
//!   about unless allowed, each call bounded in time.
//!
//! Built on `rmcp`, the protocol's Rust SDK.

pub mod client;
pub mod server;

pub use client::{Connected, McpConfig, ServerSpec, connect, connect_all};
