//! The Model Context Protocol, both ways.
//!
//! - [`server::WorkspaceServer`]: agentls's own workspace tools (read, grep, symbols,
//!   repo map, validated edits, the sandboxed command runner) served to other agents
//!   (`agentls mcp`), with the same path rules, sandbox and command policy as the agent's.
//!
//! Built on `rmcp`, the protocol's Rust SDK.

pub mod server;
