//! The registry of sessions: what lists, cancels, reviews and progress tokens look up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agentls_host::{Emitted, SessionHandle, Submitter};
use agentls_protocol::agent::ops::Op;
use agentls_protocol::agent::{Event, Mode, SessionInfo, SessionStatus, get_transcript};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use agentls_agent::SavedSession;

use super::review::{PendingChange, SavedChange};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every session of this server, oldest first.
#[derive(Default)]
pub struct Sessions {
    list: Mutex<Vec<Arc<Entry>>>,
    /// `$/progress` token → session id, for `window/workDoneProgress/cancel`.
    progress: Mutex<HashMap<String, String>>,
    next_change: AtomicU64,
    /// Set once the workspace's saved sessions are registered.
    saved_loaded: tokio::sync::OnceCell<()>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("count", &lock(&self.list).len())
            .finish_non_exhaustive()
    }
}

impl Sessions {
    /// Registers the sessions saved for `root` in `store` (once per server; every later
    /// call waits for the first): each idle, with its conversation and pending changes.
    /// Expired sessions are removed first. A session already registered stays as it is.
    pub async fn load_saved(
        &self,
        store: Option<(agentls_agent::SessionStore, agentls_agent::Retention)>,
        root: Option<std::path::PathBuf>,
        default_model: Option<String>,
    ) {
        self.saved_loaded
            .get_or_init(|| async {
                let (Some((store, retention)), Some(root)) = (store, root) else {
                    return;
                };
                let live: Vec<String> = self.all().iter().map(|e| e.id.clone()).collect();
                let found = tokio::task::spawn_blocking(move || {
                    let keep: Vec<&str> = live.iter().map(String::as_str).collect();
                    let pruned = store.prune(retention, &keep);
                    if pruned != agentls_agent::Pruned::default() {
                        tracing::info!(
                            "saved sessions: {} expired, {} removed for space",
                            pruned.expired.len(),
                            pruned.evicted.len()
                        );
                    }
                    store.list_in(&root)
                })
                .await
                .unwrap_or_default();
                let mut list = lock(&self.list);
                // Oldest first, as the list keeps them, and before this server's own.
                let mut loaded = Vec::new();
                for mut saved in found.into_iter().rev() {
                    if list.iter().any(|e| e.id == saved.id) {
                        continue;
                    }
                    if saved.model.as_deref().is_none_or(str::is_empty) {
                        saved.model.clone_from(&default_model);
                    }
                    loaded.push(Arc::new(Entry::from_saved(saved, || self.next_change_id())));
                }
                list.splice(0..0, loaded);
            })
            .await;
    }

    /// Adds a session.
    pub fn insert(&self, entry: Arc<Entry>) {
        lock(&self.list).push(entry);
    }

    /// The session with `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Entry>> {
        lock(&self.list).iter().find(|e| e.id == id).cloned()
    }

    /// Every session.
    pub fn all(&self) -> Vec<Arc<Entry>> {
        lock(&self.list).clone()
    }

    /// Remembers which session reports under a progress token.
    pub fn bind_progress(&self, token: String, session: String) {
        lock(&self.progress).insert(token, session);
    }

    /// The session reporting under `token`.
    pub fn by_progress(&self, token: &str) -> Option<Arc<Entry>> {
        let id = lock(&self.progress).get(token).cloned()?;
        self.get(&id)
    }

    /// A fresh id for a reviewable change, unique across sessions.
    pub fn next_change_id(&self) -> u64 {
        self.next_change.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The session holding pending change `id`.
    pub fn by_change(&self, id: u64) -> Option<Arc<Entry>> {
        lock(&self.list)
            .iter()
            .find(|e| lock(&e.pending).iter().any(|c| c.id == id))
            .cloned()
    }
}

/// A built session's queue and the channels its events arrive on: owned by whichever
/// run holds the entry's lock. The session itself runs in the host's task.
pub struct Live {
    /// The session's submission queue.
    pub handle: SessionHandle,
    /// What the session emits: its events, approval requests, the ends of turns.
    pub events: UnboundedReceiver<Emitted>,
    /// Events from the server's side of the run (edits landed).
    pub server_events: UnboundedReceiver<Event>,
}

/// One session as the server keeps it.
pub struct Entry {
    /// The session id (also the agent session's id once built).
    pub id: String,
    /// Read-only or not.
    pub mode: Mode,
    title: Mutex<String>,
    model: Mutex<String>,
    status: Mutex<SessionStatus>,
    /// The session itself, built at the first run.
    pub live: tokio::sync::Mutex<Option<Live>>,
    server_tx: UnboundedSender<Event>,
    server_rx: Mutex<Option<UnboundedReceiver<Event>>>,
    /// The built session's queue, for cancels and saves while a run holds `live`.
    submitter: Mutex<Option<Submitter>>,
    cancel_requested: AtomicBool,
    seq: AtomicU64,
    /// The conversation as of the end of the last run (or as saved): what transcripts
    /// show, saves hold, and a session built again after a restart goes on from.
    messages: Mutex<Vec<agentls_model::Message>>,
    /// Changes landed for review, not yet accepted or rejected.
    pub pending: Mutex<Vec<PendingChange>>,
    /// A model switch asked for while the session was not built or running.
    pub pending_model: Mutex<Option<String>>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// A new, idle session entry.
    pub fn new(id: String, title: String, model: String, mode: Mode) -> Self {
        let (server_tx, server_rx) = tokio::sync::mpsc::unbounded_channel();
        Self {
            id,
            mode,
            title: Mutex::new(title),
            model: Mutex::new(model),
            status: Mutex::new(SessionStatus::Idle),
            live: tokio::sync::Mutex::new(None),
            server_tx,
            server_rx: Mutex::new(Some(server_rx)),
            submitter: Mutex::new(None),
            cancel_requested: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            messages: Mutex::new(Vec::new()),
            pending: Mutex::new(Vec::new()),
            pending_model: Mutex::new(None),
        }
    }

    /// What lists show.
    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id.clone(),
            title: lock(&self.title).clone(),
            model: lock(&self.model).clone(),
            mode: self.mode,
            status: *lock(&self.status),
            pending_changes: u32::try_from(lock(&self.pending).len()).unwrap_or(u32::MAX),
        }
    }

    /// The model name.
    pub fn model(&self) -> String {
        lock(&self.model).clone()
    }

    /// Sets the model name shown.
    pub fn set_model(&self, model: String) {
        *lock(&self.model) = model;
    }

    /// The status.
    pub fn status(&self) -> SessionStatus {
        *lock(&self.status)
    }

    /// Sets the status.
    pub fn set_status(&self, status: SessionStatus) {
        *lock(&self.status) = status;
    }

    /// Marks the session running; `false` if it already was (one run at a time).
    pub fn try_start(&self, title: &str) -> bool {
        let mut status = lock(&self.status);
        if *status == SessionStatus::Running {
            return false;
        }
        *status = SessionStatus::Running;
        self.cancel_requested.store(false, Ordering::SeqCst);
        let mut t = lock(&self.title);
        if t.is_empty() {
            *t = title.to_owned();
        }
        true
    }

    /// The next event number.
    pub fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Sends an event from the server's side of a run (edits, approvals).
    pub fn emit(&self, event: Event) {
        // Outside a run nobody listens; the event has no one to reach.
        let _ = self.server_tx.send(event);
    }

    /// Takes the receiving end of server events, once, when the session is built.
    pub fn take_server_events(&self) -> Option<UnboundedReceiver<Event>> {
        lock(&self.server_rx).take()
    }

    /// The session is built and on its queue: cancels and saves go there, and its
    /// record (title, review changes) is handed over now.
    pub fn connect(&self, submitter: Submitter) {
        submitter.submit(self.save_op());
        *lock(&self.submitter) = Some(submitter);
    }

    /// Cancels the run (an interrupt op); `false` if none was going on. A cancel that
    /// comes while the run is starting is sent after its prompt
    /// ([`Entry::interrupt_if_asked`]).
    pub fn cancel(&self) -> bool {
        if self.status() != SessionStatus::Running {
            return false;
        }
        self.cancel_requested.store(true, Ordering::SeqCst);
        if let Some(session) = lock(&self.submitter).as_ref() {
            session.submit(Op::Interrupt);
        }
        true
    }

    /// Sends an interrupt if a cancel came before the run's prompt was queued.
    pub fn interrupt_if_asked(&self) {
        if self.cancel_requested.load(Ordering::SeqCst)
            && let Some(session) = lock(&self.submitter).as_ref()
        {
            session.submit(Op::Interrupt);
        }
    }

    /// The conversation as of the end of the last run, as `agent/getTranscript` shows it.
    pub fn transcript(&self) -> Vec<get_transcript::Message> {
        crate::convert::to_lsp::transcript(&lock(&self.messages))
    }

    /// The conversation as of the end of the last run.
    pub fn messages(&self) -> Vec<agentls_model::Message> {
        lock(&self.messages).clone()
    }

    /// Keeps the conversation at the end of a run.
    pub fn set_messages(&self, messages: Vec<agentls_model::Message>) {
        *lock(&self.messages) = messages;
    }

    /// Saves the session (a change landed for review, a review): a restart of the
    /// server loses neither the conversation nor the review state. A built session's
    /// host saves it, handed the entry's part with a save op (at once, while a run
    /// goes on too); one not built in this server (listed from the store) is only this
    /// registry's record, written through `host`. Nothing without a workspace `root`;
    /// a failure is logged, and the session goes on unsaved.
    pub fn save(&self, host: &agentls_host::Host, root: Option<&std::path::Path>) {
        if let Some(session) = lock(&self.submitter).as_ref() {
            session.submit(self.save_op());
        } else if let Some(root) = root {
            host.save(&self.to_saved(root));
        }
    }

    /// The entry's part of the saved record: its title and pending review changes.
    fn save_op(&self) -> Op {
        let title = lock(&self.title).clone();
        Op::Save {
            title: (!title.is_empty()).then_some(title),
            front_end: self.front_end_part(),
        }
    }

    fn front_end_part(&self) -> serde_json::Value {
        let pending: Vec<SavedChange> = self.pending().iter().map(|c| c.to_saved()).collect();
        serde_json::json!({ "pending": pending })
    }

    /// The session as a save in workspace `root`: its conversation, model, mode and the
    /// changes pending review.
    pub fn to_saved(&self, root: &std::path::Path) -> SavedSession {
        let messages = lock(&self.messages);
        let mut saved = SavedSession::new(&self.id, root, &messages);
        let title = lock(&self.title).clone();
        if !title.is_empty() {
            saved.title = title;
        }
        saved.model = Some(self.model());
        saved.mode = serde_json::to_value(self.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        saved.front_end = self.front_end_part();
        saved
    }

    /// A session saved earlier, idle until its next run, which goes on from its
    /// conversation; its pending changes get fresh ids from `next_change`.
    pub fn from_saved(saved: SavedSession, next_change: impl FnMut() -> u64) -> Self {
        let mode = saved
            .mode
            .as_deref()
            .and_then(|m| serde_json::from_value(serde_json::Value::from(m)).ok())
            .unwrap_or_default();
        let entry = Self::new(saved.id, saved.title, saved.model.unwrap_or_default(), mode);
        let mut next_change = next_change;
        let pending: Vec<SavedChange> = saved
            .front_end
            .get("pending")
            .cloned()
            .and_then(|p| serde_json::from_value(p).ok())
            .unwrap_or_default();
        entry.pending().extend(
            pending
                .into_iter()
                .filter_map(|c| PendingChange::from_saved(c, next_change())),
        );
        entry.set_messages(saved.messages);
        entry
    }

    /// The session's pending review changes.
    pub fn pending(&self) -> MutexGuard<'_, Vec<PendingChange>> {
        lock(&self.pending)
    }
}
