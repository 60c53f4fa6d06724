//! The `workspace/executeCommand` commands: the standard-LSP way to drive the agent, for
//! clients without the `agent/*` extension (Helix, plain Neovim). Code actions carry
//! them; every one answers at once and the work goes on behind `$/progress`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::Range;

/// Implement what the selection, stub or `agent:` comment asks.
pub const IMPLEMENT: &str = "agentls.implement";
/// Fix a diagnostic.
pub const FIX: &str = "agentls.fix";
/// Explain the code (read-only).
pub const EXPLAIN: &str = "agentls.explain";
/// Write tests for the code.
pub const WRITE_TESTS: &str = "agentls.writeTests";
/// Free-form request: `{ "instruction": ... }` with optional document context.
pub const ASK: &str = "agentls.ask";
/// Cancel a session's run: `{ "session": id }`, or every running session without one.
pub const CANCEL: &str = "agentls.cancel";
/// Accept review changes: `{ "session": id, "change"?: id }`.
pub const ACCEPT: &str = "agentls.accept";
/// Reject review changes: `{ "session": id, "change"?: id }`.
pub const REJECT: &str = "agentls.reject";
/// Land an edit written in one of the edit engine's formats (see PROTOCOL.md).
pub const APPLY_EDIT: &str = "agentls.applyEdit";

/// Every command, as the server lists them in `executeCommandProvider`.
pub const ALL: &[&str] = &[
    IMPLEMENT,
    FIX,
    EXPLAIN,
    WRITE_TESTS,
    ASK,
    CANCEL,
    ACCEPT,
    REJECT,
    APPLY_EDIT,
];

/// The argument of the session-starting commands (`implement`, `fix`, `explain`,
/// `writeTests`, `ask`): one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskArgs {
    /// The document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The range the task is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    /// The document version `range` refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// What to do, in words (the `agent:` comment's text, the diagnostic's message, ...).
    #[serde(default)]
    pub instruction: String,
    /// A configured model name or `auto`; the default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// What a session-starting command answers, at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    /// The new session.
    pub session: String,
    /// The `$/progress` token its progress is reported under, if the client shows
    /// progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<String>,
}

/// The argument of `cancel`, `accept` and `reject`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionArgs {
    /// The session; for `cancel`, every running session when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// One change; all of the session's pending changes when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<u64>,
}
