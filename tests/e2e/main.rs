//! End-to-end tests: the built `agentls` binary, driven over stdio by a scripted client.
//!
//! Compiled as an integration test of the server package (see server/Cargo.toml), so
//! cargo builds the binary first and passes its path in `CARGO_BIN_EXE_agentls`.

// Test code: a failed unwrap is a failed test, with the reason in the panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod agent_lsp;
mod apply_edit;
mod cli;
mod completion;
mod docs_commands;
mod edit_cli;
mod eval_cli;
mod eval_hidden;
mod helix_real;
mod keystrokes;
mod mcp;
mod memory;
mod neovim;
mod neovim_complete;
mod neovim_next_edit;
mod neovim_plugin;
mod neovim_typing;
mod next_edit;
mod next_edit_model;
mod read_your_writes;
mod robustness;
mod run_cli;
mod support;
mod symbols;
mod text_sync;
mod verify_edit;
