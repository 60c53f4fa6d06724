//! Test support for agentls: what end-to-end tests use to drive the real binary.
//!
//! - [`lsp`]: an LSP client over stdio that starts the built `agentls` and checks every
//!   frame it prints.
//! - [`fs_tree`]: folders as comparable values, for tests that edit files.

pub mod fs_tree;
pub mod lsp;
