//! What the server holds between requests.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use agentls_index::{FileWatcher, Index};
use agentls_text::{DocUri, DocumentStore, PositionEncoding};

use crate::config;

/// Shared server state. Locks here are std locks, held briefly and never across `.await`.
#[derive(Debug, Default)]
pub struct State {
    /// Open documents: the live buffers. Shared with the agent's tools.
    pub store: Arc<DocumentStore>,
    encoding: RwLock<PositionEncoding>,
    config: RwLock<config::Merged>,
    root: RwLock<Option<PathBuf>>,
    client_caps: RwLock<ClientCaps>,
    index: Arc<RwLock<Index>>,
    /// Semantic search over the index's files, shared with the agent's tools and the
    /// `agentls/semanticSearch` request.
    pub semantic: Arc<agentls_semantic::Service>,
    index_pending: Mutex<HashSet<DocUri>>,
    /// Index work that follows the editor, one job at a time.
    pub index_jobs: crate::indexing::jobs::Jobs,
    watcher: Mutex<Option<FileWatcher>>,
    tokens: AtomicU64,
    /// What the client reported while agent edits were in flight, and when.
    pub journals: crate::journal::Journals,
    /// Found while initializing, said once the client is initialized (it takes no
    /// messages before): what this client's settings cost the edit path
    /// (`client_advice`), the workspace folders beyond the first, which the server does
    /// not work in (`from_lsp::other_folders_note`).
    pub startup_notes: Mutex<Vec<StartupNote>>,
    /// Held while an edit lands: one edit (and its repair) goes out at a time.
    pub landing: tokio::sync::Mutex<()>,
    /// Pinged after every change to the store, for whoever waits for an edit to land.
    pub changed: tokio::sync::Notify,
    /// The agent sessions of this server.
    pub sessions: crate::agent::Sessions,
    /// Diagnostics the client showed us (in code action requests), for the agent.
    pub diagnostics: crate::agent::ClientDiagnostics,
    /// The workspace's language servers, detected and started with the first agent
    /// session and shared by all: `None` inside until then, `Some(None)` when there are
    /// none (or they are disabled).
    pub checker: tokio::sync::Mutex<Option<Option<Arc<agentls_agent::LspChecker>>>>,
    /// The session host: the configuration in force, models, stats, session store and
    /// the user's `[mcp]` servers' tools, as for every other front end.
    pub host: agentls_host::Host,
    /// The (model, tool) failure-rate alerts already shown to the user: each once per
    /// server process, however many runs take part in it.
    pub alerts_shown: Mutex<HashSet<(String, String)>>,
    /// Code completion: the newest request, recently edited places, the backend.
    pub completions: crate::completion::Completions,
    /// The agent's landed edits, for their Keep Rate look at session end.
    pub keep_followed: crate::agent::keep_rate::followed::Followed,
}

/// What the client said it can do, in the terms the server needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientCaps {
    /// `window.workDoneProgress`: it shows `$/progress`.
    pub work_done_progress: bool,
    /// `workspace.didChangeWatchedFiles.dynamicRegistration`: it watches files for us.
    pub watched_files_registration: bool,
    /// `workspace.workspaceEdit.documentChanges`: versioned edits.
    pub document_changes: bool,
    /// `workspace.workspaceEdit.resourceOperations` has create, rename and delete.
    pub resource_operations: bool,
    /// `workspace.workspaceEdit.changeAnnotationSupport`: it can ask the user to confirm
    /// annotated edits.
    pub change_annotations: bool,
    /// `workspace.workspaceEdit.failureHandling` is `transactional` or `undo`: a refused
    /// edit left nothing applied. Otherwise (`abort`, `textOnlyTransactional`, unset) the
    /// changes before the failed one may have landed.
    pub atomic_edits: bool,
    /// `experimental.agent`: it speaks the `agent/*` extension and wants `agent/event`.
    pub agent_extension: bool,
    /// `window.showDocument.support`: it opens a document the server names.
    pub show_document: bool,
}

/// Reads a lock, recovering from poisoning: the values behind these locks are replaced
/// whole, so a panic elsewhere cannot leave them half-written.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    /// The position encoding negotiated in `initialize`.
    pub fn encoding(&self) -> PositionEncoding {
        *read(&self.encoding)
    }

    /// Sets the position encoding (once, in `initialize`).
    pub fn set_encoding(&self, encoding: PositionEncoding) {
        *write(&self.encoding) = encoding;
    }

    /// The workspace root, when the client named one.
    pub fn root(&self) -> Option<PathBuf> {
        read(&self.root).clone()
    }

    /// Sets the workspace root.
    pub fn set_root(&self, root: Option<PathBuf>) {
        *write(&self.root) = root;
    }

    /// The client's capabilities.
    pub fn client_caps(&self) -> ClientCaps {
        *read(&self.client_caps)
    }

    /// Records the client's capabilities (in `initialize`).
    pub fn set_client_caps(&self, caps: ClientCaps) {
        *write(&self.client_caps) = caps;
    }

    /// The symbol index, shared with the agent's tools.
    pub fn index_handle(&self) -> Arc<RwLock<Index>> {
        self.index.clone()
    }

    /// The symbol index, for reading. Held briefly; never across `.await`.
    pub fn index(&self) -> RwLockReadGuard<'_, Index> {
        read(&self.index)
    }

    /// The symbol index, for updating (from blocking threads).
    pub fn index_mut(&self) -> RwLockWriteGuard<'_, Index> {
        write(&self.index)
    }

    /// Marks a document as queued for re-indexing; `false` if it already was.
    pub fn mark_index_pending(&self, uri: &DocUri) -> bool {
        self.index_pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uri.clone())
    }

    /// Unmarks a document queued for re-indexing.
    pub fn clear_index_pending(&self, uri: &DocUri) {
        self.index_pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(uri);
    }

    /// Keeps a file watcher alive for the server's lifetime.
    pub fn set_watcher(&self, watcher: FileWatcher) {
        *self.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(watcher);
    }

    /// A fresh number for progress tokens and registrations.
    pub fn next_token(&self) -> u64 {
        self.tokens.fetch_add(1, Ordering::Relaxed)
    }

    /// A copy of the merged configuration and its provenance.
    pub fn config(&self) -> config::Merged {
        read(&self.config).clone()
    }

    /// Changes the configuration under the lock; returns the problems after the change.
    pub fn update_config(&self, f: impl FnOnce(&mut config::Merged)) -> Vec<String> {
        let mut guard = write(&self.config);
        f(&mut guard);
        self.host.reconfigure(guard.config.clone());
        guard.problems.clone()
    }
}

/// A message for the client from `initialize`, sent at `initialized`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupNote {
    /// Shown to the user (`window/showMessage`) rather than logged (`window/logMessage`).
    pub shown: bool,
    /// A warning, either way.
    pub text: String,
}
