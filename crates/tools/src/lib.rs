//! The agent's tools: the [`Tool`] trait, the [`ToolContext`] every call gets, the error
//! taxonomy, and (as they are written) one module per tool.
//!
//! A tool is a unit struct implementing [`Tool`]: its [`ToolSpec`] (name, description,
//! JSON Schema) is what the model sees; [`Tool::is_mutating`] decides whether the
//! orchestrator may run it in parallel with others; [`Tool::call`] returns a
//! [`ToolOutput`] or a classified [`ToolError`] written for the model.
//!
//! **Invariants.**
//! - Every call returns exactly one result; failures are data, never panics.
//! - Tools never write files: edits go to the [`EditSink`] as validated plans, commands
//!   run in the sandbox and their file changes come back the same way.
//! - Reads see live buffers first (the editor's truth), through the document store.
//! - Paths may not leave the workspace root.

mod context;
mod error;
mod tool;

pub use context::{Approver, DiagnosticsSource, EditSink, SubagentRunner, ToolContext};
pub use error::{ErrorClass, ToolError};
pub use tool::{Tool, ToolOutput, ToolSpec, parse_args};
