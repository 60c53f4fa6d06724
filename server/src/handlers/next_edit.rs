//! `textDocument/copilotInlineEdit`: the edits the user's last burst implies, as
//! Copilot's language server answers them.
//!
//! A request takes its turn in the next-edit line (a newer one answers it with nothing
//! at once), and answers nothing when the client's version is not the server's, the
//! document is out of sync or completion is off for its language. While the word at
//! the cursor is being typed it waits (see [`crate::completion::next_edit`]); a change
//! during the wait makes the client's version stale, and the answer empty. When the
//! predictions without a model give nothing, a model rewrites the lines around the
//! cursor ([`crate::completion::rewrite`]); the code action does not wait for one.

use std::sync::Arc;

use agentls_protocol::agent::{Position, Range};
use agentls_protocol::copilot_inline_edit as inline_edit;
use agentls_text::next_edit::{Burst, Prediction, Suggestion};
use agentls_text::{DocUri, PositionEncoding, Snapshot};
use tower_lsp::lsp_types as lsp;

use crate::completion::next_edit::{Step, describe, elsewhere, prediction, step};
use crate::completion::rewrite;
use crate::convert::from_lsp;
use crate::state::State;

/// `textDocument/copilotInlineEdit`.
pub async fn copilot_inline_edit(
    state: &Arc<State>,
    params: inline_edit::Params,
) -> inline_edit::Result {
    let position = lsp::Position::new(params.position.line, params.position.character);
    let Some(uri) = lsp::Url::parse(&params.text_document.uri)
        .ok()
        .map(|u| from_lsp::uri(&u))
    else {
        return inline_edit::Result::default();
    };
    let Some(found) = next_edit(state, &uri, params.text_document.version, position).await else {
        return inline_edit::Result::default();
    };
    let encoding = state.encoding();
    let uri = &params.text_document.uri;
    let mut result = to_result(uri, &found.snapshot, &found.prediction.edits, encoding);
    for (other, edits) in &found.elsewhere {
        let more = to_result(other.uri.as_str(), other, edits, encoding);
        result.edits.extend(more.edits);
    }
    result
}

/// A prediction and the text it was computed on.
#[derive(Debug)]
pub struct Found {
    /// The document's text.
    pub snapshot: Snapshot,
    /// The edits in it.
    pub prediction: Prediction,
    /// The edits in other open documents, with their text.
    pub elsewhere: Vec<(Snapshot, Vec<Suggestion>)>,
}

/// The prediction at `position` of `uri`, when the client's `version` (if it sent one)
/// is the server's.
pub async fn next_edit(
    state: &Arc<State>,
    uri: &DocUri,
    version: Option<i32>,
    position: lsp::Position,
) -> Option<Found> {
    let ticket = state.completions.next_edits.begin();
    loop {
        let (snapshot, burst) = current(state, uri)?;
        if version.is_some_and(|v| v != snapshot.version) {
            return None;
        }
        let cursor = snapshot
            .char_idx(from_lsp::position(position), state.encoding())
            .char_idx;
        let job = {
            let state = Arc::clone(state);
            let snapshot = snapshot.clone();
            tokio::task::spawn_blocking(move || step(&state, &snapshot, &burst, cursor))
        };
        let next = tokio::select! {
            () = ticket.token.cancelled() => return None,
            s = job => s.ok()?,
        };
        match next {
            Step::Nothing => {
                let bursts: Vec<Burst> =
                    state.completions.history(uri)?.bursts().cloned().collect();
                let prediction =
                    rewrite::suggest(state, &snapshot, &bursts, cursor, &ticket.token).await?;
                // A change while the model wrote makes its answer stale.
                if state.store.snapshot(uri)?.version != snapshot.version {
                    return None;
                }
                return Some(Found {
                    snapshot,
                    prediction,
                    elsewhere: Vec::new(),
                });
            }
            Step::Suggest(prediction, elsewhere) => {
                return Some(Found {
                    snapshot,
                    prediction,
                    elsewhere,
                });
            }
            Step::Wait(d) => {
                tokio::select! {
                    () = ticket.token.cancelled() => return None,
                    () = tokio::time::sleep(d) => {}
                }
                // Without a version from the client, a change while waiting still
                // means the cursor it sent is stale.
                let now = state.store.snapshot(uri)?;
                if now.version != snapshot.version {
                    return None;
                }
            }
        }
    }
}

/// The document's text and its last burst, when it is in sync and completion is on
/// for its language.
fn current(state: &State, uri: &DocUri) -> Option<(Snapshot, Burst)> {
    let snapshot = state.store.snapshot(uri)?;
    let settings = state.config().config.completion;
    if !snapshot.in_sync || !settings.enabled_for(&snapshot.language_id) {
        return None;
    }
    let burst = state.completions.history(uri)?.last()?.clone();
    Some((snapshot, burst))
}

/// Edits of `snapshot` as Copilot's answer: one edit per change, all against its
/// version, the document named `uri`.
pub fn to_result(
    uri: &str,
    snapshot: &Snapshot,
    edits: &[Suggestion],
    encoding: PositionEncoding,
) -> inline_edit::Result {
    let position = |c: usize| {
        let p = snapshot.position(c, encoding);
        Position {
            line: p.line,
            character: p.character,
        }
    };
    let document = inline_edit::VersionedTextDocumentIdentifier {
        uri: uri.to_owned(),
        version: Some(snapshot.version),
    };
    inline_edit::Result {
        edits: edits
            .iter()
            .map(|e| inline_edit::InlineEdit {
                range: Range {
                    start: position(e.range.start),
                    end: position(e.range.end),
                },
                text: e.text.clone(),
                text_document: document.clone(),
                command: None,
            })
            .collect(),
    }
}

/// "Apply next edit" at the cursor, for clients with no next-edit UI (Helix): the
/// prediction from the document's last burst as a versioned `WorkspaceEdit` (plain
/// `changes` for a client without `documentChanges`). Asked for explicitly, it does
/// not wait for a word being typed.
pub fn code_action(state: &State, uri: &lsp::Url) -> Option<lsp::CodeAction> {
    let (snapshot, burst) = current(state, &from_lsp::uri(uri))?;
    let text: Vec<char> = snapshot.rope.chars().collect();
    let p = prediction(state, &snapshot, &burst, &text)?;
    let mut files = vec![(uri.clone(), snapshot.clone(), p.edits.clone())];
    for (other, edits) in elsewhere(state, &snapshot, &burst, &p) {
        if let Ok(url) = lsp::Url::parse(other.uri.as_str()) {
            files.push((url, other, edits));
        }
    }
    let places = files.iter().map(|f| f.2.len()).sum::<usize>();
    let places = match places {
        1 => "1 place".to_owned(),
        n => format!("{n} places"),
    };
    Some(lsp::CodeAction {
        title: format!("Apply next edit: {} ({places})", describe(&p.kind)),
        kind: Some(lsp::CodeActionKind::REFACTOR_REWRITE),
        edit: Some(workspace_edit(state, files)),
        is_preferred: Some(true),
        ..Default::default()
    })
}

/// The edits of each file as a `WorkspaceEdit`: versioned `documentChanges`, or plain
/// `changes` for a client without them.
fn workspace_edit(
    state: &State,
    files: Vec<(lsp::Url, Snapshot, Vec<Suggestion>)>,
) -> lsp::WorkspaceEdit {
    let encoding = state.encoding();
    let files = files.into_iter().map(|(url, snapshot, edits)| {
        let position = |c: usize| {
            let p = snapshot.position(c, encoding);
            lsp::Position::new(p.line, p.character)
        };
        let edits: Vec<lsp::TextEdit> = edits
            .iter()
            .map(|e| lsp::TextEdit {
                range: lsp::Range::new(position(e.range.start), position(e.range.end)),
                new_text: e.text.clone(),
            })
            .collect();
        (url, snapshot.version, edits)
    });
    if !state.client_caps().document_changes {
        return lsp::WorkspaceEdit {
            changes: Some(files.map(|(url, _, edits)| (url, edits)).collect()),
            ..Default::default()
        };
    }
    let edits = files
        .map(|(uri, version, edits)| lsp::TextDocumentEdit {
            text_document: lsp::OptionalVersionedTextDocumentIdentifier {
                uri,
                version: Some(version),
            },
            edits: edits.into_iter().map(lsp::OneOf::Left).collect(),
        })
        .collect();
    lsp::WorkspaceEdit {
        document_changes: Some(lsp::DocumentChanges::Edits(edits)),
        ..Default::default()
    }
}
