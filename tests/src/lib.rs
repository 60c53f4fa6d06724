//! Test support for agentls: what tests use to drive the real binary and a real model
//! endpoint, with nothing mocked in between.
//!
//! - [`lsp`]: an LSP client over stdio that starts the built `agentls` and checks every
//!   frame it prints.
//! - [`model_server`]: a fixture model server on 127.0.0.1 speaking the OpenAI chat,
//!   Responses and Anthropic wire formats over SSE, replaying scripted turns, recording
//!   requests and injecting faults.
//! - [`editor`]: an editor's side of the buffers: types, answers `workspace/applyEdit`.
//! - [`fs_tree`]: folders as comparable values, for tests that edit files.
//! - [`edit_corpus`]: the edit conformance corpus, run through any way of applying edits.

pub mod edit_corpus;
pub mod editor;
pub mod fs_tree;
pub mod lsp;
pub mod model_server;
