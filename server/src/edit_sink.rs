//! Landing edits in the editor: a validated plan becomes a `WorkspaceEdit`, sent with
//! `workspace/applyEdit`, and the sink follows it through the client's `didChange`s
//! until it can prove where it landed (read your own writes).
//!
//! No client is trusted to check versions. Before sending, every document version is
//! checked against the store and each edit is rebased over what the user typed since
//! the plan's snapshot, or refused when the two overlap. Clients that cannot refuse a
//! stale edit (no versioned `documentChanges`, or Neovim's version-0 shortcut) get it
//! only after their buffer has been quiet for a spell (Neovim sends every change within
//! 150 ms of the previous send). Whatever the client answers, the sink then finds the
//! edit in the changes the client reports ([`agentls_edit::track`]): landed where meant;
//! landed at stale positions, repaired at once (the user's text kept) before anything
//! else goes out; skipped (Neovim answers `applied: true` for a stale versioned edit),
//! rebased and sent again; or unprovable, when the file's agent edits pause until the
//! client reports its whole text. What the model is told is what the client reported.
//!
//! Landings are serialised server-wide: an edit and its repair go out before the next
//! edit. The client's `workspaceEdit` capabilities decide the shape: `documentChanges`
//! (versioned) or the unversioned `changes` map, and resource operations or, without
//! them, creations, moves and deletions carried out on disk (files the editor does not
//! hold open).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentls_edit::track::{self, Sighting, Verdict};
use agentls_edit::{FileChange, Plan, Source, TextChange, apply_edits};
use agentls_text::{DocUri, PositionEncoding, position::to_position};
use tokio::time::Instant;
use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

use crate::convert::to_lsp;
use crate::state::{ClientCaps, State};

/// How long to wait for the editor's `didChange` after it said it applied an edit.
const LAND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a buffer that changed without the edit may stay quiet before we take it
/// that the editor dropped the edit (Neovim answers `applied: true` but skips edits for
/// an older version of a buffer, and sends changes at most 150 ms late).
const DROPPED_AFTER: Duration = Duration::from_millis(300);
/// How long a buffer must have been quiet before an edit a client cannot check goes out:
/// Neovim's default debounce (150 ms) has then sent whatever was typed.
const QUIET: Duration = Duration::from_millis(160);
/// The longest wait for that quiet; past it the edit goes out and is checked afterwards.
const QUIET_MAX: Duration = Duration::from_millis(190);
/// Repairs of a misplaced edit tried before the file is paused. A repair can itself land
/// at stale positions (the user typed again between the editor getting it and applying
/// it); each is seen and repaired in turn, after a quiet spell, so only a user typing
/// into every one of these windows in a row exhausts them.
const MAX_REPAIRS: usize = 6;
/// Sends of an edit the editor dropped or refused.
const MAX_ATTEMPTS: usize = 3;

/// The id of the change annotation agent edits carry in review mode.
const ANNOTATION_ID: &str = "agentls";

/// Lands plans in the editor.
#[derive(Clone)]
pub struct LspEditSink {
    client: Client,
    state: Arc<State>,
    annotation: Option<String>,
}

/// What happened to a plan.
#[derive(Debug, Clone)]
pub struct Landed {
    /// Files whose edits were rebased over the user's typing first.
    pub rebased: Vec<String>,
    /// Whether a first attempt was refused or dropped by the editor and retried.
    pub retried: bool,
    /// Files where the editor applied the edit at stale positions and the sink moved it
    /// where it was meant.
    pub repaired: Vec<String>,
    /// The plan as it landed (rebased), for review and diffs.
    pub plan: Plan,
}

/// Why a plan did not land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandError {
    /// For the model or the user.
    pub message: String,
    /// The user declined an edit the editor asked them to confirm.
    pub by_user: bool,
}

impl std::fmt::Display for LandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for LandError {
    fn from(message: String) -> Self {
        Self {
            message,
            by_user: false,
        }
    }
}

/// What following one document's edit found.
enum Followed {
    /// Landed where meant (after a repair, if `repaired`); the change as it landed.
    Landed { change: TextChange, repaired: bool },
    /// The editor skipped it: send it again.
    Dropped(TextChange),
    /// It did not land, or not provably: why, for the model.
    Failed(String),
}

/// Open documents watched while an edit is in flight; unwatched when dropped.
struct Watched<'a> {
    state: &'a State,
    uris: Vec<DocUri>,
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        for uri in &self.uris {
            self.state.journals.unwatch(uri);
        }
    }
}

impl LspEditSink {
    /// A sink that speaks to `client`.
    pub fn new(client: Client, state: Arc<State>) -> Self {
        Self {
            client,
            state,
            annotation: None,
        }
    }

    /// Edits carry a change annotation with `needsConfirmation`, labelled `label`, when
    /// the client supports annotations: the editor asks the user before applying.
    pub fn confirming(mut self, label: String) -> Self {
        self.annotation = Some(label);
        self
    }

    /// Lands `plan` whole or not at all; the error says why, for the model or the user.
    pub async fn land(&self, plan: Plan, label: &str) -> Result<Landed, LandError> {
        let _one_at_a_time = self.state.landing.lock().await;
        let mut landed = Landed {
            rebased: vec![],
            retried: false,
            repaired: vec![],
            plan: Plan::default(),
        };
        let meta = Plan {
            changes: Vec::new(),
            ..plan.clone()
        };
        let mut pending = plan;
        let mut done: Vec<FileChange> = Vec::new();
        for attempt in 0..MAX_ATTEMPTS {
            let caps = self.state.client_caps();
            // Neovim skips its version check for version 0: such an edit is as
            // unversioned as one sent without `documentChanges`.
            let checkable = caps.document_changes
                && !pending
                    .changes
                    .iter()
                    .any(|c| matches!(c, FileChange::Edit(t) if t.version.is_some_and(|v| v <= 0)));
            if !checkable {
                self.wait_quiet(&pending).await;
            }
            let mut watched = Watched {
                state: &self.state,
                uris: Vec::new(),
            };
            pending = self.rebase_onto_store(pending, &mut landed.rebased, &mut watched)?;
            let (plan_for_editor, on_disk) =
                if pending.has_resource_operations() && !caps.resource_operations {
                    let (text, rest) = pending.clone().split_resource_operations();
                    (
                        Plan {
                            changes: text.into_iter().map(FileChange::Edit).collect(),
                            ..Plan::default()
                        },
                        Some(rest),
                    )
                } else {
                    (pending.clone(), None)
                };
            let annotation = self
                .annotation
                .as_deref()
                .filter(|_| caps.change_annotations && caps.document_changes);
            let edit = workspace_edit(&plan_for_editor, self.state.encoding(), caps, annotation);
            let response = self
                .client
                .apply_edit(edit)
                .await
                .map_err(|e| format!("the editor did not answer workspace/applyEdit: {e}"))?;
            if !response.applied {
                drop(watched);
                let reason = response
                    .failure_reason
                    .unwrap_or_else(|| "no reason given".to_owned());
                tracing::info!(attempt, label, %reason, "the editor refused an edit");
                if annotation.is_some() {
                    // The editor asked the user to confirm: a refusal is their answer.
                    return Err(LandError {
                        message: format!("the user rejected the change ({reason})"),
                        by_user: true,
                    });
                }
                if attempt + 1 == MAX_ATTEMPTS {
                    return Err(format!(
                        "the editor refused the edit {MAX_ATTEMPTS} times: {reason}"
                    )
                    .into());
                }
                landed.retried = true;
                // The editor's `didChange` for whatever made it refuse was sent before its
                // answer, but tower-lsp hands answers over directly while notifications wait
                // in the handler queue: let the store catch up before rebasing.
                self.wait_for_newer_versions(&pending).await;
                continue;
            }
            if let Some(rest) = on_disk {
                // The client cannot create, move or delete files: do it on disk, where no
                // editor buffer holds them.
                agentls_edit::write_plan(&rest).map_err(|e| e.to_string())?;
            }
            let answered = Instant::now();
            let mut dropped = Vec::new();
            let mut failed = Vec::new();
            for change in pending.changes {
                let FileChange::Edit(t) = change else {
                    done.push(change);
                    continue;
                };
                let uri = DocUri::from_file_path(&t.path);
                let Some(uri) = uri.filter(|u| watched.uris.contains(u)) else {
                    // Not open in the editor: it applies the edit to the file itself.
                    done.push(FileChange::Edit(t));
                    continue;
                };
                match self.follow(&uri, t, answered, 0).await {
                    Followed::Landed { change, repaired } => {
                        if repaired {
                            landed.repaired.push(change.path.display().to_string());
                        }
                        done.push(FileChange::Edit(change));
                    }
                    Followed::Dropped(t) => dropped.push(FileChange::Edit(t)),
                    Followed::Failed(why) => failed.push(why),
                }
            }
            drop(watched);
            if !failed.is_empty() {
                let landed_files: Vec<String> = done
                    .iter()
                    .filter_map(|c| match c {
                        FileChange::Edit(t) => Some(t.path.display().to_string()),
                        _ => None,
                    })
                    .collect();
                let mut message = failed.join("; ");
                if !landed_files.is_empty() {
                    message.push_str(&format!(
                        " (the edits to {} did land)",
                        landed_files.join(", ")
                    ));
                }
                return Err(message.into());
            }
            if dropped.is_empty() {
                landed.plan = Plan {
                    changes: done,
                    ..meta
                };
                return Ok(landed);
            }
            if attempt + 1 == MAX_ATTEMPTS {
                return Err(format!(
                    "the editor dropped the edit {MAX_ATTEMPTS} times (its buffer kept moving past the edit's version)"
                )
                .into());
            }
            tracing::info!(
                attempt,
                label,
                "the editor dropped an edit; sending it again"
            );
            landed.retried = true;
            pending = Plan {
                changes: dropped,
                ..Plan::default()
            };
        }
        Err("unreachable: attempts exhausted".to_owned().into())
    }

    /// Waits until every open document the plan edits has been quiet for [`QUIET`]
    /// (at most [`QUIET_MAX`]): a client that cannot refuse stale edits has then sent
    /// whatever was typed.
    async fn wait_quiet(&self, plan: &Plan) {
        let started = Instant::now();
        let deadline = started + QUIET_MAX;
        loop {
            let last = plan
                .changes
                .iter()
                .filter_map(|c| match c {
                    FileChange::Edit(t) => DocUri::from_file_path(&t.path),
                    _ => None,
                })
                .filter_map(|uri| self.state.journals.last_user_change(&uri))
                .max();
            let Some(last) = last else { break };
            let quiet_at = Instant::from_std(last) + QUIET;
            if quiet_at <= Instant::now() {
                break;
            }
            if quiet_at > deadline {
                tokio::time::sleep_until(deadline).await;
                break;
            }
            tokio::time::sleep_until(quiet_at).await;
        }
        let waited = started.elapsed();
        if waited > Duration::ZERO {
            tracing::debug!(
                ?waited,
                "waited for a quiet buffer before an unversioned edit"
            );
        }
    }

    /// Moves every versioned change onto the store's current text of its document, and
    /// starts following the open ones (`watched`) from exactly that text. A change whose
    /// document already holds its new text landed in an earlier attempt (a client
    /// without transactional edits applies the changes before a failed one) and is
    /// dropped.
    fn rebase_onto_store(
        &self,
        mut plan: Plan,
        rebased: &mut Vec<String>,
        watched: &mut Watched<'_>,
    ) -> Result<Plan, String> {
        let partial = !self.state.client_caps().atomic_edits;
        plan.changes.retain(|change| {
            let FileChange::Edit(t) = change else {
                return true;
            };
            let done = DocUri::from_file_path(&t.path)
                .and_then(|uri| self.state.store.snapshot(&uri))
                .is_some_and(|s| {
                    !t.edits.is_empty() && s.rope == t.new_text.as_str() && s.rope != t.base
                });
            !(partial && done)
        });
        for change in &mut plan.changes {
            let FileChange::Edit(text_change) = change else {
                continue;
            };
            let Some(uri) = DocUri::from_file_path(&text_change.path) else {
                continue;
            };
            if let Some(why) = self.state.journals.paused(&uri) {
                return Err(format!(
                    "{}: agent edits to this file are paused until the editor reports its whole text (save or reopen it): {why}",
                    text_change.path.display()
                ));
            }
            let Some(current) = self.state.journals.watch(&self.state.store, &uri) else {
                continue;
            };
            watched.uris.push(uri);
            if !current.in_sync {
                return Err(format!(
                    "{} is out of sync with the editor; save or reopen it and try again",
                    text_change.path.display()
                ));
            }
            if text_change.version == Some(current.version) && text_change.base == current.rope {
                continue;
            }
            let source = Source {
                rope: current.rope.clone(),
                version: Some(current.version),
            };
            *text_change = text_change.rebase(&source).map_err(|conflict| {
                format!(
                    "{}: the user edited the same lines meanwhile: {conflict}",
                    text_change.path.display()
                )
            })?;
            rebased.push(text_change.path.display().to_string());
        }
        Ok(plan)
    }

    /// Waits (briefly) until some document the plan edits has a version other than the
    /// one the plan was made against.
    async fn wait_for_newer_versions(&self, plan: &Plan) {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let notified = self.state.changed.notified();
            let moved = plan.changes.iter().any(|c| match c {
                FileChange::Edit(t) => DocUri::from_file_path(&t.path)
                    .and_then(|uri| self.state.store.snapshot(&uri))
                    .is_some_and(|s| Some(s.version) != t.version),
                _ => false,
            });
            if moved || tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// Follows one open document's edit, sent against the text its journal starts at,
    /// through what the client reports, until it is proven landed, repaired, dropped or
    /// unprovable. `depth` counts repairs.
    async fn follow(
        &self,
        uri: &DocUri,
        sent: TextChange,
        answered: Instant,
        depth: usize,
    ) -> Followed {
        let encoding = self.state.encoding();
        let path = sent.path.display().to_string();
        if sent.edits.is_empty() {
            return Followed::Landed {
                change: sent,
                repaired: false,
            };
        }
        let deadline = answered + LAND_TIMEOUT;
        loop {
            let notified = self.state.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let Some(journal) = self.state.journals.journal(uri) else {
                let why = format!(
                    "{path}: lost track of the editor's buffer while the edit was in flight (a change could not be applied); whether the edit landed is unknown"
                );
                self.state.journals.pause(uri, why.clone());
                return Followed::Failed(why);
            };
            match track::sight(&journal, &sent.edits, encoding) {
                Sighting::Applied { at, end } => {
                    return self.judged(uri, &sent, &journal, at, end, depth).await;
                }
                Sighting::Ambiguous => {
                    let why = format!(
                        "{path}: the user typed text like the edit's while it was in flight, so where it landed cannot be proven; read the file before editing it again"
                    );
                    self.state.journals.pause(uri, why.clone());
                    return Followed::Failed(why);
                }
                Sighting::NotSeen => {}
            }
            let now = Instant::now();
            if now >= deadline {
                let why = format!(
                    "the editor said it applied the edit, but {path} did not show it within {LAND_TIMEOUT:?}"
                );
                self.state.journals.pause(uri, why.clone());
                return Followed::Failed(why);
            }
            // The buffer moved without the edit: if it stays quiet, the editor skipped it.
            // Only a versioned edit can be skipped; an unversioned one the editor said it
            // applied is in a change still on its way (a loaded machine can hold it back
            // past any quiet spell), so it is waited for until the deadline.
            let versioned =
                self.state.client_caps().document_changes && sent.version.is_some_and(|v| v > 0);
            let wake = if journal.is_empty() || !versioned {
                deadline
            } else {
                let last = self
                    .state
                    .journals
                    .last_change(uri)
                    .map_or(answered, Instant::from_std)
                    .max(answered);
                let skipped_at = last + DROPPED_AFTER;
                if skipped_at <= now {
                    tracing::info!(%path, "the editor skipped a stale edit");
                    return Followed::Dropped(sent);
                }
                skipped_at.min(deadline)
            };
            let _ = tokio::time::timeout_at(wake, notified).await;
        }
    }

    /// Acts on where the journal shows the edit applied: done, repaired, or refused.
    async fn judged(
        &self,
        uri: &DocUri,
        sent: &TextChange,
        journal: &track::Journal,
        at: usize,
        end: usize,
        depth: usize,
    ) -> Followed {
        let path = sent.path.display().to_string();
        let before = journal.state(at).clone();
        match track::judge(journal, &sent.edits, at, end, self.state.encoding()) {
            Verdict::Exact { landed } => {
                self.state.journals.settle(uri, at, end);
                let new_text = apply_edits(&before, &landed).to_string();
                Followed::Landed {
                    change: TextChange {
                        path: sent.path.clone(),
                        version: None,
                        base: before,
                        edits: landed,
                        new_text,
                    },
                    repaired: false,
                }
            }
            Verdict::Misplaced {
                repair,
                intended,
                applied,
                typed_into,
            } => {
                tracing::warn!(
                    %path, ?applied, ?intended, ?typed_into,
                    "the editor applied an edit at stale positions; repairing it"
                );
                if depth >= MAX_REPAIRS {
                    let why = format!(
                        "{path}: the editor kept applying the edit at stale positions while the user typed; it may stand at the wrong place: read the file"
                    );
                    self.state.journals.pause(uri, why.clone());
                    return Followed::Failed(why);
                }
                let latest = journal.latest().clone();
                let repaired = apply_edits(&latest, &repair);
                let new_text = repaired.to_string();
                let version = self.state.store.snapshot(uri).map(|s| s.version);
                let fix = TextChange {
                    path: sent.path.clone(),
                    version,
                    base: latest,
                    edits: repair,
                    new_text,
                };
                let resent = Box::pin(self.resend(uri, fix, depth + 1)).await;
                if resent.is_ok() && !typed_into.is_empty() {
                    self.tell_typed_into(&path, &repaired, &typed_into).await;
                }
                match resent {
                    Ok(()) => match intended {
                        Some(edits) => {
                            let new_text = apply_edits(&before, &edits).to_string();
                            Followed::Landed {
                                change: TextChange {
                                    path: sent.path.clone(),
                                    version: None,
                                    base: before,
                                    edits,
                                    new_text,
                                },
                                repaired: true,
                            }
                        }
                        None => Followed::Failed(format!(
                            "{path}: the user changed the lines the edit was for while it was in flight; it was not applied (read the file and redo it)"
                        )),
                    },
                    Err(why) => {
                        self.state.journals.pause(uri, why.clone());
                        Followed::Failed(why)
                    }
                }
            }
        }
    }

    /// Tells the user where keys they typed into a misplaced edit were kept: their place
    /// among the text the repair restored is a guess they should check.
    async fn tell_typed_into(&self, path: &str, repaired: &ropey::Rope, typed_into: &[usize]) {
        let lines: Vec<String> = typed_into
            .iter()
            .map(|&at| {
                let line = to_position(repaired, at, self.state.encoding()).line + 1;
                line.to_string()
            })
            .collect();
        let message = format!(
            "agentls: your editor applied an agent edit at stale positions in {path} while you typed, and you typed into it; the edit was moved where it was meant and your keys were kept, but check where they stand (line {})",
            lines.join(", ")
        );
        tracing::warn!(%path, ?lines, "the user typed into a misplaced edit");
        self.client
            .show_message(lsp::MessageType::WARNING, message)
            .await;
    }

    /// Sends a repair (edits on the text the client last reported) and follows it.
    async fn resend(&self, uri: &DocUri, fix: TextChange, depth: usize) -> Result<(), String> {
        let path = fix.path.display().to_string();
        if !self.state.client_caps().document_changes {
            // As for the edit itself: a client that cannot refuse a stale repair gets it
            // once its buffer is quiet, so typing in progress has reached us first.
            self.wait_quiet(&Plan {
                changes: vec![FileChange::Edit(fix.clone())],
                ..Plan::default()
            })
            .await;
        }
        let mut rebased = Vec::new();
        let mut watched = Watched {
            state: &self.state,
            uris: Vec::new(),
        };
        let plan = self
            .rebase_onto_store(
                Plan {
                    changes: vec![FileChange::Edit(fix)],
                    ..Plan::default()
                },
                &mut rebased,
                &mut watched,
            )
            .map_err(|e| {
                format!("{path}: the edit landed at stale positions and could not be moved: {e}")
            })?;
        let Some(FileChange::Edit(fix)) = plan.changes.into_iter().next() else {
            return Ok(());
        };
        let caps = self.state.client_caps();
        let single = Plan {
            changes: vec![FileChange::Edit(fix.clone())],
            ..Plan::default()
        };
        let edit = workspace_edit(&single, self.state.encoding(), caps, None);
        let response = self.client.apply_edit(edit).await.map_err(|e| {
            format!("{path}: the editor did not answer the repair of a misplaced edit: {e}")
        })?;
        if !response.applied {
            return Err(format!(
                "{path}: the edit landed at stale positions and the editor refused its repair ({}); read the file",
                response.failure_reason.unwrap_or_default()
            ));
        }
        match self.follow(uri, fix, Instant::now(), depth).await {
            Followed::Landed { .. } => Ok(()),
            Followed::Dropped(_) => Err(format!(
                "{path}: the edit landed at stale positions and the editor skipped its repair; read the file"
            )),
            Followed::Failed(why) => Err(why),
        }
    }
}

#[async_trait::async_trait]
impl agentls_tools::EditSink for LspEditSink {
    async fn apply(&self, _tool: &str, plan: Plan) -> Result<(), agentls_tools::ToolError> {
        match self.land(plan, "agent edit").await {
            Ok(_) => Ok(()),
            Err(e) if e.by_user => Err(agentls_tools::ToolError::aborted(e.message)),
            Err(e) => Err(agentls_tools::ToolError::environment(e.message)),
        }
    }
}

/// The `WorkspaceEdit` for a plan, shaped for the client's capabilities.
///
/// With `annotation`, every text edit carries a change annotation of that label with
/// `needsConfirmation` (the client must support annotations and `documentChanges`).
pub fn workspace_edit(
    plan: &Plan,
    encoding: PositionEncoding,
    caps: ClientCaps,
    annotation: Option<&str>,
) -> lsp::WorkspaceEdit {
    if !caps.document_changes {
        let mut changes: HashMap<lsp::Url, Vec<lsp::TextEdit>> = HashMap::new();
        for change in &plan.changes {
            if let FileChange::Edit(t) = change
                && let Some(url) = to_lsp::url(&t.path)
            {
                changes
                    .entry(url)
                    .or_default()
                    .extend(text_edits(t, encoding));
            }
        }
        return lsp::WorkspaceEdit {
            changes: Some(changes),
            ..Default::default()
        };
    }
    let mut ops = Vec::new();
    for change in &plan.changes {
        match change {
            FileChange::Edit(t) => {
                let Some(uri) = to_lsp::url(&t.path) else {
                    continue;
                };
                ops.push(lsp::DocumentChangeOperation::Edit(lsp::TextDocumentEdit {
                    text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                        uri,
                        version: t.version,
                    },
                    edits: text_edits(t, encoding)
                        .into_iter()
                        .map(|e| match annotation {
                            Some(_) => lsp::OneOf::Right(lsp::AnnotatedTextEdit {
                                text_edit: e,
                                annotation_id: ANNOTATION_ID.to_owned(),
                            }),
                            None => lsp::OneOf::Left(e),
                        })
                        .collect(),
                }));
            }
            FileChange::Create { path, text } => {
                let Some(uri) = to_lsp::url(path) else {
                    continue;
                };
                ops.push(lsp::DocumentChangeOperation::Op(lsp::ResourceOp::Create(
                    lsp::CreateFile {
                        uri: uri.clone(),
                        options: Some(lsp::CreateFileOptions {
                            overwrite: Some(false),
                            ignore_if_exists: Some(false),
                        }),
                        annotation_id: None,
                    },
                )));
                if !text.is_empty() {
                    ops.push(lsp::DocumentChangeOperation::Edit(lsp::TextDocumentEdit {
                        text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                            uri,
                            version: None,
                        },
                        edits: vec![lsp::OneOf::Left(lsp::TextEdit {
                            range: lsp::Range::default(),
                            new_text: text.clone(),
                        })],
                    }));
                }
            }
            FileChange::Rename { from, to } => {
                let (Some(old_uri), Some(new_uri)) = (to_lsp::url(from), to_lsp::url(to)) else {
                    continue;
                };
                ops.push(lsp::DocumentChangeOperation::Op(lsp::ResourceOp::Rename(
                    lsp::RenameFile {
                        old_uri,
                        new_uri,
                        options: None,
                        annotation_id: None,
                    },
                )));
            }
            FileChange::Delete { path } => {
                let Some(uri) = to_lsp::url(path) else {
                    continue;
                };
                ops.push(lsp::DocumentChangeOperation::Op(lsp::ResourceOp::Delete(
                    lsp::DeleteFile { uri, options: None },
                )));
            }
        }
    }
    let change_annotations = annotation.map(|label| {
        HashMap::from([(
            ANNOTATION_ID.to_owned(),
            lsp::ChangeAnnotation {
                label: label.to_owned(),
                needs_confirmation: Some(true),
                description: Some("A change made by the agent, for you to confirm".to_owned()),
            },
        )])
    });
    lsp::WorkspaceEdit {
        document_changes: Some(lsp::DocumentChanges::Operations(ops)),
        change_annotations,
        ..Default::default()
    }
}

/// A change's edits as LSP text edits: positions on its base text, in `encoding`.
fn text_edits(change: &TextChange, encoding: PositionEncoding) -> Vec<lsp::TextEdit> {
    change
        .edits
        .iter()
        .map(|e| {
            let start = to_position(&change.base, e.range.start, encoding);
            let end = to_position(&change.base, e.range.end, encoding);
            lsp::TextEdit {
                range: lsp::Range::new(
                    lsp::Position::new(start.line, start.character),
                    lsp::Position::new(end.line, end.character),
                ),
                new_text: e.new_text.clone(),
            }
        })
        .collect()
}
