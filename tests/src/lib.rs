//! Test support for agentls: what end-to-end tests use to drive the real binary.
//!
//! - [`lsp`]: an LSP client over stdio that starts the built `agentls` and checks every
//!   frame it prints.

pub mod lsp;
