//! The `agent/*` extension: sessions, prompts, streaming events, review.
//!
//! A client that speaks it says so with `capabilities.experimental.agent = { "version": 1 }`
//! in `initialize`; the server answers with the same key, listing the methods. Without
//! that, the server never sends `agent/event` and clients use the standard surface
//! (code actions, `workspace/executeCommand`, `$/progress`).
//!
//! Field names are camelCase on the wire, like LSP's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version of this extension; bumped on incompatible changes.
pub const VERSION: u32 = 1;

/// The key under `capabilities.experimental` on both sides.
pub const CAPABILITY: &str = "agent";

/// Every request method of the extension.
pub const METHODS: &[&str] = &[
    new_session::METHOD,
    prompt::METHOD,
    cancel::METHOD,
    list_sessions::METHOD,
    get_transcript::METHOD,
    set_model::METHOD,
    list_models::METHOD,
    review::METHOD,
    list_changes::METHOD,
    compact::METHOD,
];

/// What a front end sends a session: the operations of its submission queue. The
/// session answers with its [`Event`]s (one stream); no front end reaches around it
/// (a cancel token, an approver, a save hook): an interrupt, an approval's answer, a
/// change of model or mode, a compaction and the front end's part of the saved record
/// are operations like a prompt.
pub mod ops {
    use super::*;

    /// One entry of a session's submission queue.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Submission {
        /// Chosen by the front end; the events of the turn it starts carry it.
        pub id: String,
        /// What to do.
        pub op: Op,
    }

    /// An operation on a session.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(tag = "type", rename_all = "camelCase")]
    pub enum Op {
        /// A turn on `text` (queued behind the turn that runs, if one does).
        #[serde(rename_all = "camelCase")]
        Prompt {
            /// The message the model gets.
            text: String,
            /// The user's own words, when they are not the whole message (judged for
            /// `[stats] satisfaction`).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            user_text: Option<String>,
        },
        /// Stops the turn that runs; its transcript is kept. Nothing when none runs.
        Interrupt,
        /// The user's answer to the approval request `id` (an [`Event::Approval`]).
        #[serde(rename_all = "camelCase")]
        Approval {
            /// The request's id.
            id: String,
            /// Allowed or not.
            approved: bool,
            /// Allowed, to run in the user's own terminal rather than the sandbox (only
            /// where the request offered it: `inTerminal` on the event).
            #[serde(default, skip_serializing_if = "std::ops::Not::not")]
            in_terminal: bool,
        },
        /// The model and the mode from the next turn on (`None`: unchanged).
        #[serde(rename_all = "camelCase")]
        OverrideTurnContext {
            /// A configured model's name, or `auto`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            model: Option<String>,
            /// Agent, ask or plan.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            mode: Option<Mode>,
        },
        /// Compacts the conversation now, as when it nears the model's window: old
        /// tool outputs masked, older messages folded into a summary. Answered with a
        /// `compacted` event (zeros when there was nothing to fold); waits for the turn
        /// that runs, if one does.
        Compact,
        /// The front end's part of the session's record (an editor's changes pending
        /// review), which the host saves with the conversation: at once (while a turn
        /// runs, with the conversation as of the turn before) and after every turn.
        #[serde(rename_all = "camelCase")]
        Save {
            /// The title lists show (`None`: the first prompt's).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            title: Option<String>,
            /// In the front end's own format; `null` for none.
            #[serde(default)]
            front_end: serde_json::Value,
        },
    }
}

/// The notification that streams a session's events.
pub const EVENT: &str = "agent/event";

/// What a session does with writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Reads, edits and runs commands.
    #[default]
    Agent,
    /// Read-only: answers questions.
    Ask,
    /// Read-only: writes a plan.
    Plan,
}

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// Waiting for a prompt.
    Idle,
    /// A run is going on.
    Running,
    /// The last run finished with an answer.
    Done,
    /// The last run was cancelled.
    Cancelled,
    /// The last run stopped at a budget limit.
    BudgetExhausted,
    /// The last run failed (the model provider, most often). Nothing is lost: a new
    /// prompt goes on from there.
    Failed,
}

/// A session as lists show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// A short title (the first prompt, cut).
    pub title: String,
    /// The model in use (a configured name, or `auto`).
    pub model: String,
    /// The mode.
    pub mode: Mode,
    /// Where it is.
    pub status: SessionStatus,
    /// Changes landed for review and not yet accepted or rejected.
    pub pending_changes: u32,
}

/// Where in a document a prompt is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentContext {
    /// The document's URI.
    pub uri: String,
    /// The selection, in the negotiated position encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    /// The document version the range refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
}

/// A document reference, as LSP's `TextDocumentIdentifier` (kept local so this crate
/// stands alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TextDocumentIdentifier {
    /// The document's URI.
    pub uri: String,
}

/// An LSP range (kept local so this crate stands alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Range {
    /// Start, inclusive.
    pub start: Position,
    /// End, exclusive.
    pub end: Position,
}

/// An LSP position (zero-based line, column in the negotiated encoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Position {
    /// Line.
    pub line: u32,
    /// Column.
    pub character: u32,
}

/// `agent/newSession`: starts a session (no run yet).
pub mod new_session {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/newSession";

    /// Parameters.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// A configured model name or `auto`; the default model when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub model: Option<String>,
        /// The mode; `agent` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub mode: Option<Mode>,
    }

    /// The result: the new session.
    pub type Result = SessionInfo;
}

/// `agent/prompt`: adds a user message to a session and starts a run. Answers at once;
/// the run streams through `agent/event` and ends with a `finished` event.
pub mod prompt {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/prompt";

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// The session.
        pub session: String,
        /// The user's message.
        pub text: String,
        /// The document and selection it is about, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub context: Option<DocumentContext>,
    }

    /// The result: the session, now running.
    pub type Result = SessionInfo;
}

/// `agent/compact`: compacts an idle session's conversation now (the session's
/// compaction op): everything before the last exchange folded into a summary, old tool
/// outputs masked. A session that has not run in this server has nothing to compact.
pub mod compact {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/compact";

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// The session.
        pub session: String,
    }

    /// The result: what the compaction did (zeros when there was nothing to fold).
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// Tool outputs masked.
        pub masked: u32,
        /// Messages folded into a summary.
        pub summarized: u32,
    }
}

/// `agent/cancel`: stops a session's run. Running tools stop; edits already landed stay.
pub mod cancel {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/cancel";

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// The session.
        pub session: String,
    }

    /// The result.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// `false` when no run was going on.
        pub cancelled: bool,
    }
}

/// `agent/listSessions`: every session of this server, oldest first.
pub mod list_sessions {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/listSessions";

    /// The result.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// The sessions.
        pub sessions: Vec<SessionInfo>,
    }
}

/// `agent/getTranscript`: a session's conversation so far.
pub mod get_transcript {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/getTranscript";

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// The session.
        pub session: String,
    }

    /// The result.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// The session.
        pub session: SessionInfo,
        /// Its messages, oldest first (compacted history shows as its summary).
        pub messages: Vec<Message>,
    }

    /// One message.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Message {
        /// `user`, `assistant` or `tool`.
        pub role: String,
        /// Its parts, in order.
        pub parts: Vec<Part>,
    }

    /// A piece of a message.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(tag = "type", rename_all = "camelCase")]
    pub enum Part {
        /// Text.
        Text {
            /// The text.
            text: String,
        },
        /// A tool call the model made.
        #[serde(rename_all = "camelCase")]
        ToolCall {
            /// Call id.
            id: String,
            /// Tool name.
            name: String,
            /// Arguments as the model wrote them (JSON text).
            arguments: String,
        },
        /// A tool call's result.
        #[serde(rename_all = "camelCase")]
        ToolResult {
            /// The call it answers.
            call_id: String,
            /// Output (or error) text.
            content: String,
            /// Whether the call failed.
            is_error: bool,
        },
    }
}

/// `agent/setModel`: hands a session to another model (takes effect at the next run).
pub mod set_model {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/setModel";

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// The session.
        pub session: String,
        /// A configured model name.
        pub model: String,
    }

    /// The result: the session with its new model.
    pub type Result = SessionInfo;
}

/// `agent/listModels`: the configured models.
pub mod list_models {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/listModels";

    /// The result.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// The models, by configured name.
        pub models: Vec<ModelInfo>,
        /// The model new sessions use by default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub default: Option<String>,
    }

    /// One configured model.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct ModelInfo {
        /// Configured name (what `model` fields take).
        pub name: String,
        /// The provider's model id.
        pub model: String,
        /// Wire format (`openai_chat`, `openai_responses`, `anthropic`, ...).
        pub wire: String,
    }
}

/// `agent/diagnostics` (client to server, a notification): the diagnostics the editor
/// shows for one file, from every source (other language servers, linters), so the
/// agent sees the type errors the user sees. Each notification replaces what the
/// client sent earlier for that file; an empty list clears it.
pub mod diagnostics {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/diagnostics";

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Params {
        /// The document's URI.
        pub uri: String,
        /// The document version the diagnostics are for, when known.
        #[serde(default)]
        pub version: Option<i32>,
        /// The diagnostics, as LSP's `Diagnostic`.
        pub diagnostics: Vec<Diagnostic>,
    }

    /// One diagnostic, with LSP's fields and meanings.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Diagnostic {
        /// Where.
        pub range: Range,
        /// 1 error, 2 warning, 3 information, 4 hint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub severity: Option<u8>,
        /// The source's code for it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub code: Option<Code>,
        /// Who reported it (`rustc`, `pyright`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub source: Option<String>,
        /// The message.
        pub message: String,
    }

    /// A diagnostic's code: a number or a string, as in LSP.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(untagged)]
    pub enum Code {
        /// A number.
        Number(i64),
        /// A string.
        String(String),
    }
}

/// `agent/review`: accepts or rejects changes a session landed for review.
/// Rejecting restores the text the user had, keeping their later typing.
pub mod review {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/review";

    /// What to do.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub enum Action {
        /// Keep the change.
        Accept,
        /// Undo the change.
        Reject,
    }

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// The session.
        pub session: String,
        /// One change (an id from an `edit` event); every pending change when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub change: Option<u64>,
        /// Accept or reject.
        pub action: Action,
    }

    /// The result.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// Changes accepted.
        pub accepted: Vec<u64>,
        /// Changes rejected (their old text restored).
        pub rejected: Vec<u64>,
        /// Changes that could not be rejected, with the reason (the user rewrote the
        /// same lines, say).
        pub failed: Vec<(u64, String)>,
    }
}

/// `agent/listChanges`: the changes sessions landed for review and nobody accepted or
/// rejected yet, where they are now. Clients show review from this (and act with
/// `agent/review` or the `agentls.accept`/`agentls.reject` commands by `id`), never from
/// the titles of code actions, which are for people.
pub mod list_changes {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agent/listChanges";

    /// Parameters (send `{}` for every pending change).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// Only this session's changes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub session: Option<String>,
        /// Only changes in this document.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub uri: Option<String>,
    }

    /// The result.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// The pending changes, by document (`uri` order), then by position.
        pub changes: Vec<Change>,
    }

    /// What a change did to its lines.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub enum ChangeKind {
        /// Only added text.
        Insert,
        /// Replaced text.
        Replace,
        /// Only removed text.
        Delete,
    }

    /// One pending change: a cluster of nearby edits in one document.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Change {
        /// The change's id, as `agent/review`, `agentls.accept` and `agentls.reject` take
        /// it and `edit` events list it; it stays the same while the server runs.
        pub id: u64,
        /// The session that made it.
        pub session: String,
        /// The document.
        pub uri: String,
        /// The document version `ranges` refer to: the open buffer's. Absent when the
        /// document is not open: the ranges are then in the file on disk.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub version: Option<i32>,
        /// Where the agent's text is now, in the negotiated position encoding: one range
        /// per edit of the change, in document order (an empty range where it only
        /// removed text). Empty when the user has rewritten those lines since: the
        /// change can still be accepted, but rejecting it fails.
        pub ranges: Vec<Range>,
        /// Insert, replace or delete.
        pub kind: ChangeKind,
        /// Lines the change added, as a line diff counts them.
        pub lines_added: u32,
        /// Lines the change removed, as a line diff counts them.
        pub lines_removed: u32,
    }
}

/// `agent/event` parameters: one event of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventParams {
    /// The session.
    pub session: String,
    /// 1-based, increasing by one per event of the session: a gap means a lost event.
    pub seq: u64,
    /// The event.
    pub event: Event,
}

/// One item of the agent's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanItem {
    /// What to do.
    pub text: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// What a session reports while it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Event {
    /// The session's status changed.
    Status {
        /// The new status.
        status: SessionStatus,
        /// The model running it.
        model: String,
    },
    /// A step (one model call) begins.
    Step {
        /// 1-based step number.
        step: u32,
    },
    /// A piece of the model's answer.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning, when the provider streams it.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// A tool call starts.
    ToolStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Its arguments (long strings cut).
        arguments: Value,
    },
    /// Output of a running tool (a command's stdout or stderr).
    ToolOutput {
        /// Call id.
        id: String,
        /// `stdout` or `stderr`.
        stream: String,
        /// The text.
        text: String,
    },
    /// A tool call ended (every started call ends exactly once).
    ToolFinished {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// One line for people.
        summary: String,
        /// The error class, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The tool worked but what it ran failed: a command exited non-zero (a failing
        /// test run). Not a harness error, and not a success either.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        failed: bool,
        /// Time it took.
        ms: u64,
    },
    /// The agent's plan changed.
    Plan {
        /// The whole plan.
        items: Vec<PlanItem>,
    },
    /// An edit landed in a document.
    #[serde(rename_all = "camelCase")]
    Edit {
        /// The document.
        uri: String,
        /// A unified diff of the edit.
        diff: String,
        /// The reviewable changes it made (ids for `agent/review`); empty when edits land
        /// without review.
        change_ids: Vec<u64>,
    },
    /// A command waits for the user's approval, or got an answer.
    #[serde(rename_all = "camelCase")]
    Approval {
        /// The request's id, when the answer comes back as an [`ops::Op::Approval`]
        /// with it (a front end driving the session through its submission queue).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// What is asked.
        what: String,
        /// `None` while waiting; then the answer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        granted: Option<bool>,
        /// A command the user may also run in their own terminal: the answer may say
        /// `inTerminal`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_terminal: bool,
    },
    /// Tokens of the last model call.
    #[serde(rename_all = "camelCase")]
    Usage {
        /// Prompt tokens.
        input: u64,
        /// Of which read from the provider's cache.
        cached_input: u64,
        /// Generated tokens.
        output: u64,
    },
    /// The history was compacted.
    Compacted {
        /// Tool outputs masked.
        masked: usize,
        /// Messages folded into a summary.
        summarized: usize,
    },
    /// Under the `auto` model: the model this step goes to, and why.
    Routed {
        /// The configured model name.
        model: String,
        /// Why the router chose it.
        reason: String,
    },
    /// Something went wrong (the run may go on, or end with `finished`).
    Error {
        /// Error class (`ProviderError`, `Timeout`, ...).
        class: String,
        /// What happened.
        message: String,
    },
    /// The run ended.
    #[serde(rename_all = "camelCase")]
    Finished {
        /// How.
        status: SessionStatus,
        /// The model's final answer, or why it stopped.
        message: String,
        /// Steps taken so far in the session.
        steps: u32,
        /// Wall time of the session so far, ms.
        wall_ms: f64,
        /// Tokens so far: input, cached input, output.
        tokens: [u64; 3],
        /// Cost of the session so far in US dollars, where the model's prices are known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
}
