//! The context every session without a front end's own starts from: edits on disk,
//! nobody to approve. Apart from [`crate::context`], which the approvers and the
//! sinks build on, so that the context need not know them.

use std::path::Path;
use std::sync::{Arc, RwLock};

use agentls_index::Index;
use agentls_model::CancellationToken;
use agentls_text::{DocumentStore, ReadLimits};

use crate::ToolContext;

impl ToolContext {
    /// A context on `root` with edits landing on disk (through the disk sink, which
    /// keeps the index current), an empty index, no sandbox, nobody to approve
    /// ([`crate::DenyAll`]). What a session without a front end's own context starts
    /// from (the agent's `workspace_context` crawls and adds the sandbox), what
    /// `agentls replay` runs tool calls in, and what tests use.
    pub fn on_disk(root: &Path) -> Self {
        let index = Arc::new(RwLock::new(Index::default()));
        Self {
            root: root.to_path_buf(),
            store: Arc::new(DocumentStore::new()),
            read_limits: ReadLimits::default(),
            index: index.clone(),
            semantic: Default::default(),
            sandbox: None,
            policy: Arc::new(agentls_sandbox::Policy::default()),
            edits: Arc::new(crate::DiskSink::with_index(index)),
            approver: Arc::new(crate::DenyAll),
            diagnostics: None,
            checker: None,
            subagents: None,
            cancel: CancellationToken::new(),
            progress: None,
            reads: Arc::new(crate::ReadVersions::new()),
            client_files: None,
            terminal: None,
        }
    }
}
