//! Landing edits in the editor: a validated plan becomes a versioned `WorkspaceEdit`,
//! sent with `workspace/applyEdit`, and the sink waits until the client's `didChange`
//! brings the store to the expected text (read your own writes).
//!
//! Before sending, every document version is checked against the store; if the user
//! typed since the plan's snapshot, each edit is rebased over their change, or refused
//! when the two overlap. A refused `applyEdit` is rebased and retried once. The client's
//! `workspaceEdit` capabilities decide the shape: `documentChanges` (versioned) or the
//! unversioned `changes` map, and resource operations or, without them, creations,
//! moves and deletions carried out on disk (files the editor does not hold open).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use agentls_edit::{FileChange, Plan, Source, TextChange};
use agentls_text::{DocUri, PositionEncoding, position::to_position};
use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

use crate::convert::to_lsp;
use crate::state::{ClientCaps, State};

/// How long to wait for the editor's `didChange` after it said it applied an edit.
const LAND_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a buffer that moved past the edit's version may stay quiet, without the
/// edit's text, before we take it that the editor dropped the edit (Neovim answers
/// `applied: true` but skips edits for an older version of a buffer).
const DROPPED_AFTER: Duration = Duration::from_millis(300);

/// Why an edit the editor accepted did not show up.
enum NotLanded {
    /// The buffers moved on without it: the editor dropped it.
    Dropped(String),
    /// Nothing came in time.
    Timeout(String),
}

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
    /// Whether a first attempt was refused by the editor and retried.
    pub retried: bool,
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
        let mut landed = Landed {
            rebased: vec![],
            retried: false,
            plan: Plan::default(),
        };
        let mut plan = plan;
        for attempt in 0..2 {
            plan = self.rebase_onto_store(plan, &mut landed.rebased)?;
            let caps = self.state.client_caps();
            let (plan_for_editor, on_disk) =
                if plan.has_resource_operations() && !caps.resource_operations {
                    let (text, rest) = plan.clone().split_resource_operations();
                    (
                        Plan {
                            changes: text.into_iter().map(FileChange::Edit).collect(),
                            ..Plan::default()
                        },
                        Some(rest),
                    )
                } else {
                    (plan.clone(), None)
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
            if response.applied {
                if let Some(rest) = on_disk {
                    // The client cannot create, move or delete files: do it on disk,
                    // where no editor buffer holds them.
                    agentls_edit::write_plan(&rest).map_err(|e| e.to_string())?;
                }
                let reason = match self.wait_until_landed(&plan_for_editor).await {
                    Ok(()) => {
                        landed.plan = plan;
                        return Ok(landed);
                    }
                    Err(NotLanded::Timeout(message)) => return Err(message.into()),
                    Err(NotLanded::Dropped(reason)) => reason,
                };
                if attempt == 1 {
                    return Err(format!("the editor dropped the edit twice: {reason}").into());
                }
                tracing::info!(attempt, label, %reason, "the editor dropped an edit");
                landed.retried = true;
                continue;
            }
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
            if attempt == 1 {
                return Err(format!("the editor refused the edit twice: {reason}").into());
            }
            landed.retried = true;
            // The editor's `didChange` for whatever made it refuse was sent before its
            // answer, but tower-lsp hands answers over directly while notifications wait
            // in the handler queue: let the store catch up before rebasing.
            self.wait_for_newer_versions(&plan).await;
        }
        Err("unreachable: two attempts".to_owned().into())
    }

    /// Moves every versioned change onto the store's current text of its document. A
    /// change whose document already holds its new text landed in an earlier attempt (a
    /// client without transactional edits applies the changes before a failed one) and
    /// is dropped.
    fn rebase_onto_store(&self, mut plan: Plan, rebased: &mut Vec<String>) -> Result<Plan, String> {
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
            let Some(current) = self.state.store.snapshot(&uri) else {
                continue;
            };
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
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
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

    /// Waits until every open document the plan edits holds the planned text.
    async fn wait_until_landed(&self, plan: &Plan) -> Result<(), NotLanded> {
        let expected: Vec<(DocUri, &TextChange)> = plan
            .changes
            .iter()
            .filter_map(|c| match c {
                FileChange::Edit(t) => DocUri::from_file_path(&t.path).map(|u| (u, t)),
                _ => None,
            })
            .filter(|(uri, _)| self.state.store.snapshot(uri).is_some())
            .collect();
        let deadline = tokio::time::Instant::now() + LAND_TIMEOUT;
        loop {
            let notified = self.state.changed.notified();
            let pending: Vec<&DocUri> = expected
                .iter()
                .filter(|(uri, t)| {
                    self.state
                        .store
                        .snapshot(uri)
                        .is_some_and(|s| s.rope != t.new_text.as_str())
                })
                .map(|(uri, _)| uri)
                .collect();
            if pending.is_empty() {
                return Ok(());
            }
            // Every pending buffer is past the version the edit was made for: if it stays
            // quiet, the editor skipped the edit rather than applying it late.
            let moved_past = expected.iter().all(|(uri, t)| {
                self.state.store.snapshot(uri).is_some_and(|s| {
                    s.rope == t.new_text.as_str() || t.version.is_some_and(|v| s.version > v)
                })
            });
            let wait_until = if moved_past {
                deadline.min(tokio::time::Instant::now() + DROPPED_AFTER)
            } else {
                deadline
            };
            if tokio::time::timeout_at(wait_until, notified).await.is_err() {
                if moved_past && wait_until < deadline {
                    return Err(NotLanded::Dropped(format!(
                        "{} moved past the edit's version without its text",
                        pending
                            .iter()
                            .map(|u| u.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                return Err(NotLanded::Timeout(format!(
                    "the editor said it applied the edit, but {} did not change to the expected text within {:?}",
                    pending
                        .iter()
                        .map(|u| u.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    LAND_TIMEOUT
                )));
            }
        }
    }
}

#[async_trait::async_trait]
impl agentls_tools::EditSink for LspEditSink {
    async fn apply(&self, plan: Plan) -> Result<(), agentls_tools::ToolError> {
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
