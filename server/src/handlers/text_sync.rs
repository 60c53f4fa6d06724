//! `didOpen`, `didChange`, `didSave`, `didClose`.
//!
//! Each handler applies its change to the store synchronously, before any `.await`:
//! tower-lsp polls handlers concurrently (tower-lsp issue 284), and only the first,
//! synchronous poll of each handler is guaranteed to run in arrival order.

use agentls_text::{SyncError, SyncWarning};
use tower_lsp::lsp_types as lsp;

use crate::convert::from_lsp;
use crate::state::State;

/// What a sync handler wants said to the user once the change is in.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to say.
    Quiet,
    /// Tell the user (the buffer went out of sync, say).
    Warn(String),
}

/// `textDocument/didOpen`.
pub fn did_open(state: &State, params: lsp::DidOpenTextDocumentParams) -> Outcome {
    let doc = params.text_document;
    let uri = from_lsp::uri(&doc.uri);
    if state
        .store
        .open(uri.clone(), &doc.language_id, doc.version, &doc.text)
    {
        tracing::warn!(%uri, "didOpen for a document already open; its text was replaced");
    }
    tracing::debug!(%uri, version = doc.version, "opened");
    Outcome::Quiet
}

/// `textDocument/didChange`.
pub fn did_change(state: &State, params: lsp::DidChangeTextDocumentParams) -> Outcome {
    let uri = from_lsp::uri(&params.text_document.uri);
    let version = params.text_document.version;
    let changes: Vec<_> = params
        .content_changes
        .into_iter()
        .map(from_lsp::content_change)
        .collect();
    match state
        .store
        .change(&uri, version, &changes, state.encoding())
    {
        Ok(warnings) => {
            for w in warnings {
                match w {
                    SyncWarning::VersionNotNewer { old, new } => tracing::warn!(
                        %uri, old, new,
                        "didChange version is not newer than the stored one (client bug); applied in arrival order"
                    ),
                    SyncWarning::PositionFixed { index, fixup } => {
                        tracing::debug!(%uri, index, ?fixup, "adjusted a change position")
                    }
                }
            }
            Outcome::Quiet
        }
        Err(e @ SyncError::UnknownDocument(_)) => {
            tracing::warn!(%uri, "didChange ignored: {e}");
            Outcome::Quiet
        }
        Err(e @ SyncError::InvertedRange { .. }) => {
            tracing::error!(%uri, version, "didChange refused: {e}; buffer marked out of sync");
            Outcome::Warn(format!(
                "agentls: lost sync with {uri} ({e}). Agent edits to it are paused until the \
                 file is saved or reopened."
            ))
        }
    }
}

/// `textDocument/didSave`. With the text included, it resynchronises a buffer that had
/// drifted.
pub fn did_save(state: &State, params: lsp::DidSaveTextDocumentParams) -> Outcome {
    let uri = from_lsp::uri(&params.text_document.uri);
    let (Some(text), Some(snapshot)) = (params.text, state.store.snapshot(&uri)) else {
        return Outcome::Quiet;
    };
    if !snapshot.in_sync || snapshot.rope != text.as_str() {
        if snapshot.in_sync {
            tracing::error!(%uri, "saved text differs from the server's buffer; resynchronised");
        } else {
            tracing::info!(%uri, "resynchronised from the saved text");
        }
        if let Err(e) = state.store.resync(&uri, &text) {
            tracing::warn!(%uri, "resync failed: {e}");
        }
    }
    Outcome::Quiet
}

/// `textDocument/didClose`.
pub fn did_close(state: &State, params: lsp::DidCloseTextDocumentParams) -> Outcome {
    let uri = from_lsp::uri(&params.text_document.uri);
    if !state.store.close(&uri) {
        tracing::warn!(%uri, "didClose for a document that is not open");
    }
    Outcome::Quiet
}
