//! The agent's tools: the [`Tool`] trait, the [`ToolContext`] every call gets, the error
//! taxonomy, one module per tool, and the [`Registry`] that dispatches a model's calls.
//!
//! A tool is a unit struct implementing [`Tool`]: its [`ToolSpec`] (name, description,
//! JSON Schema) is what the model sees, the schema derived from the struct its
//! arguments are parsed into (`schemars`, in `schema.rs`), so the two cannot drift;
//! [`Tool::is_mutating`] decides whether the orchestrator may run it in parallel with
//! others; [`Tool::call`] returns a [`ToolOutput`] or a classified [`ToolError`] written
//! for the model.
//! [`Registry::call`] takes the raw name and argument text the model emitted.
//! A call reports progress through [`ToolContext::progress`] ([`ToolProgress`]):
//! `run_command` streams its output there while the command runs (coalesced by
//! [`forward_output`]), `todo` reports the new plan.
//!
//! Tools: reading ([`ReadFile`], [`ListDir`], [`FindFiles`], [`Grep`], [`Symbols`],
//! [`RepoMap`], [`Diagnostics`]); editing through `agentls-edit` ([`StrReplace`],
//! [`Insert`], [`ApplyPatch`], [`WriteFile`], [`DeleteFile`], [`MoveFile`]); running
//! ([`RunCommand`]); the plan ([`Todo`]); subagents ([`Task`]). Sinks without an
//! editor: [`DiskSink`] (headless), [`MemorySink`] (tests). [`TreeSitterCheck`] lets the
//! edit engine report syntax errors an edit introduced.
//!
//! Cost: `cargo bench -p agentls-tools --bench dispatch` times [`Registry::call`] (raw
//! JSON text in) against calling the same tool directly with parsed arguments, in the
//! same run; on the shared 2-core machine the dispatcher added about 1.5 µs per call
//! (5.7 µs against 4.2 µs for `todo`, ratio 1.36).
//!
//! **Invariants.**
//! - Every call returns exactly one result; failures are data, never panics (a panic
//!   inside a tool becomes an `Unknown` error in [`Registry::call`]).
//! - Tools never write files: edits go to the [`EditSink`] as validated plans, commands
//!   run in the sandbox and their file changes come back the same way.
//! - Reads see live buffers first (the editor's truth), through the document store.
//! - Paths may not leave the workspace root.
//! - A model is given `apply_patch` or `str_replace`, never both ([`Registry::for_profile`]).
//!
//! ```
//! use agentls_tools::Registry;
//! use agentls_model::EditFormat;
//!
//! let tools = Registry::standard().for_profile(EditFormat::ApplyPatch);
//! assert!(tools.get("apply_patch").is_some());
//! assert!(tools.get("str_replace").is_none());
//! let ask = tools.read_only();
//! assert!(ask.get("read_file").is_some() && ask.get("write_file").is_none());
//! ```

mod approvers;
mod blind;
pub mod client_files;
mod context;
mod error;
mod land;
mod on_disk;
mod paths;
mod progress;
mod read_versions;
mod registry;
mod schema;
mod sinks;
mod syntax_check;
mod tool;
mod util;
mod verify;

mod apply_patch;
mod delete_file;
mod diagnostics;
mod find_files;
mod grep;
mod insert;
mod list_dir;
mod move_file;
mod navigate;
mod read_file;
mod repo_map;
mod run_command;
mod semantic_search;
mod str_replace;
mod symbols;
mod task;
mod todo;
mod todo_list;
mod write_file;

pub use approvers::{AllowAll, DenyAll};
pub use blind::{read_before_edit, seen_texts};
pub use context::{
    Approver, CheckResult, Checker, ClientFiles, CommandChoice, DiagnosticsSource, EditSink,
    NavAnswer, NavAsk, NavQuery, Problem, SubagentRunner, TerminalRun, ToolContext, UserTerminal,
};
pub use error::{ErrorClass, ToolError};
pub use progress::{OUTPUT_BATCH, OUTPUT_REPORT_LIMIT, ToolProgress, forward_output};
pub use read_versions::ReadVersions;
pub use registry::Registry;
pub use sinks::{Changed, DiskSink, MemorySink, Recording};
pub use syntax_check::TreeSitterCheck;
pub use tool::{Tool, ToolOutput, ToolSpec, parse_args};

pub use apply_patch::ApplyPatch;
pub use delete_file::DeleteFile;
pub use diagnostics::Diagnostics;
pub use find_files::FindFiles;
pub use grep::Grep;
pub use insert::Insert;
pub use list_dir::ListDir;
pub use move_file::MoveFile;
pub use navigate::Navigate;
pub use read_file::ReadFile;
pub use repo_map::RepoMap;
pub use run_command::RunCommand;
pub use semantic_search::SemanticSearch;
pub use str_replace::StrReplace;
pub use symbols::Symbols;
pub use task::Task;
pub use todo::Todo;
pub use todo_list::{TodoItem, TodoList, TodoStatus};
pub use write_file::WriteFile;
