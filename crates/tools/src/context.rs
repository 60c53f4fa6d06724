//! What a tool call can reach: the workspace as the editor shows it, the index, the
//! sandbox, and the sinks through which its effects leave (edits, approvals, plan).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use agentls_index::Index;
use agentls_model::CancellationToken;
use agentls_text::{DocumentStore, ReadLimits};
use async_trait::async_trait;

use crate::ToolError;

/// A client that holds the user's files.
#[async_trait]
pub trait ClientFiles: Send + Sync {
    /// The text of `path` as the client shows it, or why it cannot say.
    async fn read(&self, path: &Path) -> Result<String, String>;
}

/// Where validated edits go: the editor (`workspace/applyEdit`, in the server) or the
/// disk (headless). `apply` returns once the edit has landed, so the next read sees it.
#[async_trait]
pub trait EditSink: Send + Sync {
    /// Lands a plan whole, or refuses it with a model-readable reason. `tool` names
    /// the tool that made it (Keep Rate is kept per tool).
    async fn apply(&self, tool: &str, plan: agentls_edit::Plan) -> Result<(), ToolError>;
}

/// Asks the user to allow something (a command the policy marks `ask`, an escalation out
/// of the sandbox). No answer means no.
#[async_trait]
pub trait Approver: Send + Sync {
    /// `true` when the user allowed `what`: what the agent wants to do, as a verb
    /// phrase ("run `cargo publish`"), for "The agent wants to {what}".
    async fn approve(&self, what: &str) -> bool;

    /// Asks about a command the policy marks `ask` (`what` as for [`Approver::approve`]);
    /// with `terminal`, the user may also choose to run it in their own terminal.
    async fn approve_command(&self, what: &str, terminal: bool) -> CommandChoice {
        let _ = terminal;
        if self.approve(what).await {
            CommandChoice::Sandbox
        } else {
            CommandChoice::Refuse
        }
    }
}

/// The user's answer about a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandChoice {
    /// Run it in the sandbox.
    Sandbox,
    /// Run it in the user's own terminal ([`UserTerminal`]), outside the sandbox.
    Terminal,
    /// Do not run it.
    Refuse,
}

/// How a command run in the user's terminal ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRun {
    /// Its output (stdout and stderr as the terminal shows them).
    pub output: String,
    /// The terminal dropped the output's start to keep within its limit.
    pub truncated: bool,
    /// The exit code, when it exited.
    pub exit_code: Option<u32>,
    /// The signal that ended it, when one did.
    pub signal: Option<String>,
}

/// The user's own terminal (an ACP client's `terminal/*`): where a command runs when
/// the user chooses it, outside the sandbox, in plain view.
#[async_trait]
pub trait UserTerminal: Send + Sync {
    /// Runs `command` (`bash -c`) in `cwd` until it exits or `cancel` fires (then it is
    /// killed).
    async fn run(
        &self,
        command: &str,
        cwd: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Result<TerminalRun, String>;
}

/// Diagnostics the client sent for a file, when there is a client.
pub trait DiagnosticsSource: Send + Sync {
    /// `(1-based line, severity, message)` for `path`.
    fn diagnostics(&self, path: &std::path::Path) -> Vec<(usize, String, String)>;
}

/// One diagnostic of a checker: 1-based line, severity (`error`, `warning`, `info`,
/// `hint`), message.
pub type Problem = (usize, String, String);

/// What a [`Checker`] said about one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckResult {
    /// No language server checks this file type here.
    NoServer,
    /// `server` checked the text.
    Problems {
        /// Which server.
        server: String,
        /// What it found, every severity.
        problems: Vec<Problem>,
        /// From sending the text to its answer.
        took: std::time::Duration,
    },
    /// `server` gave no answer in time, or is not running: `why`, for the model.
    Unavailable {
        /// Which server.
        server: String,
        /// Why.
        why: String,
    },
}

/// What the `navigate` tool asks a language server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NavAsk {
    /// Where the symbol at the position is defined.
    Definition,
    /// Where it is used, its definition included.
    References,
    /// Its type and documentation.
    Hover,
    /// The file's symbols (the position is ignored).
    Outline,
}

/// A navigation question about one file: `line` 0-based, `character` in UTF-16 code
/// units (what language servers count by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NavQuery {
    /// What to ask.
    pub ask: NavAsk,
    /// 0-based line.
    pub line: u32,
    /// UTF-16 code units from the start of the line.
    pub character: u32,
}

/// A language server's answer to a [`NavQuery`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NavAnswer {
    /// Definition or references: files and 1-based lines.
    Places(Vec<(std::path::PathBuf, u32)>),
    /// Hover text.
    Hover(String),
    /// Outline: name, kind, 1-based line, nesting depth.
    Outline(Vec<(String, String, u32, usize)>),
}

/// The workspace's own language servers, run as children (`agentls-lspclient`): they
/// check a file's text within a bounded wait.
#[async_trait]
pub trait Checker: Send + Sync {
    /// Checks `path` as `text` (the editor's buffer, the agent's edited text), waiting
    /// at most the configured bound.
    async fn check(&self, path: &std::path::Path, text: &str) -> CheckResult;
    /// Whether edit results list warnings too (errors only by default).
    fn warnings_on_edit(&self) -> bool {
        false
    }
    /// Asks the server for `path`'s type about `text`: `None` when no server takes
    /// the file, otherwise the server's name and answer, or why it gave none.
    async fn navigate(
        &self,
        _path: &std::path::Path,
        _text: &str,
        _query: NavQuery,
    ) -> Option<Result<(String, NavAnswer), String>> {
        None
    }
}

/// Runs a subagent for the `task` tool: a fresh context and budget, returning a summary.
#[async_trait]
pub trait SubagentRunner: Send + Sync {
    /// Runs `prompt` to completion (optionally on `model`) and returns its final summary.
    /// What the subagent does streams to `progress` (the `task` call's) as it happens.
    async fn run(
        &self,
        prompt: String,
        model: Option<String>,
        cancel: CancellationToken,
        progress: Option<Arc<dyn crate::ToolProgress>>,
    ) -> Result<String, ToolError>;
}

/// Everything a tool call can use. Cheap to clone; shared by parallel calls.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace root; tool paths are relative to it and may not leave it.
    pub root: PathBuf,
    /// Open documents: reads see live buffers first.
    pub store: Arc<DocumentStore>,
    /// Limits for reading files from disk.
    pub read_limits: ReadLimits,
    /// The symbol index.
    pub index: Arc<RwLock<Index>>,
    /// Semantic search over the index's files (chunks follow the index; vectors when an
    /// embedding model is set).
    pub semantic: Arc<agentls_semantic::Service>,
    /// The command sandbox; `None` where commands are not allowed (ask mode).
    pub sandbox: Option<Arc<agentls_sandbox::Sandbox>>,
    /// The command policy (allow / ask / forbid by prefix).
    pub policy: Arc<agentls_sandbox::Policy>,
    /// Where edits land.
    pub edits: Arc<dyn EditSink>,
    /// Who is asked for approvals.
    pub approver: Arc<dyn Approver>,
    /// Client diagnostics, if any.
    pub diagnostics: Option<Arc<dyn DiagnosticsSource>>,
    /// The workspace's language servers: edits are checked by them, and so is the
    /// `diagnostics` tool's answer for files the editor reported nothing on.
    pub checker: Option<Arc<dyn Checker>>,
    /// Runs subagents for the `task` tool, if allowed.
    pub subagents: Option<Arc<dyn SubagentRunner>>,
    /// Fires when the user cancels; running tools stop.
    pub cancel: CancellationToken,
    /// Where this call reports progress (command output, plan changes); the
    /// orchestrator sets one per call. `None`: nobody listens.
    pub progress: Option<Arc<dyn crate::ToolProgress>>,
    /// The text the model last saw of each file (whole-file reads, its own landed
    /// edits); whole-file writes merge from it instead of overwriting later changes.
    /// One per session: subagents and parallel calls share it.
    pub reads: Arc<crate::ReadVersions>,
    /// A client holding the user's files (ACP): the files a call names are read
    /// through it first (see [`ClientFiles`]). `None`: the store and the disk.
    pub client_files: Option<Arc<dyn ClientFiles>>,
    /// The user's own terminal, offered for commands the policy asks about.
    pub terminal: Option<Arc<dyn UserTerminal>>,
}

impl ToolContext {
    /// Every open buffer under the root, as the sandbox lays it over the disk: a
    /// command (or a candidate's check) sees what the editor shows.
    pub fn dirty_buffers(&self) -> Vec<agentls_sandbox::DirtyBuffer> {
        self.store
            .snapshots()
            .into_iter()
            .filter_map(|s| {
                let path = s.uri.to_file_path()?;
                path.starts_with(&self.root)
                    .then(|| agentls_sandbox::DirtyBuffer::new(path, s.rope.to_string()))
            })
            .collect()
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}
