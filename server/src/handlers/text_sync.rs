//! `didOpen`, `didChange`, `didSave`, `didClose`.
//!
//! Each handler applies its change to the store synchronously, before any `.await`:
//! tower-lsp polls handlers concurrently (tower-lsp issue 284), and only the first,
//! synchronous poll of each handler is guaranteed to run in arrival order.

use agentls_text::{SyncError, SyncWarning};
use tower_lsp::lsp_types as lsp;

use crate::convert::from_lsp;
use crate::state::State;
use crate::transport;

/// What a sync handler wants said to the user once the change is in.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to say.
    Quiet,
    /// A warning for the client's log (`window/logMessage`).
    Warn(String),
    /// The document just went out of sync: logged, and shown once to the user, who
    /// would otherwise not know why agent edits to it are refused.
    LostSync(String),
}

/// The outcome of a change that left `uri` out of sync, `was_in_sync` before it.
fn out_of_sync(uri: &agentls_text::DocUri, why: &str, was_in_sync: bool) -> Outcome {
    let message = format!(
        "agentls: lost sync with {uri} ({why}). Agent edits to it are paused until the \
         file is saved or reopened."
    );
    if was_in_sync {
        Outcome::LostSync(message)
    } else {
        Outcome::Warn(message)
    }
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

/// `textDocument/didChange`. A change that cannot be applied as the client meant it
/// (an inverted range, a version that is not newer) marks the document out of sync:
/// agent edits to it are refused until a full-text change, a save with text or a reopen.
pub fn did_change(state: &State, params: lsp::DidChangeTextDocumentParams) -> Outcome {
    let uri = from_lsp::uri(&params.text_document.uri);
    let version = params.text_document.version;
    let changes: Vec<_> = params
        .content_changes
        .into_iter()
        .map(from_lsp::content_change)
        .collect();
    let was_in_sync = state.store.in_sync(&uri).unwrap_or(true);
    match state
        .store
        .change(&uri, version, &changes, state.encoding())
    {
        Ok(warnings) => {
            let mut outcome = Outcome::Quiet;
            for w in warnings {
                match w {
                    SyncWarning::VersionNotNewer { old, new } => {
                        tracing::warn!(
                            %uri, old, new,
                            "didChange version is not newer than the stored one (client bug); applied in arrival order"
                        );
                        if state.store.in_sync(&uri) == Some(false) {
                            let why = format!("version {new} is not newer than {old}");
                            outcome = out_of_sync(&uri, &why, was_in_sync);
                        }
                    }
                    SyncWarning::PositionFixed { index, fixup } => {
                        tracing::debug!(%uri, index, ?fixup, "adjusted a change position")
                    }
                }
            }
            outcome
        }
        Err(e @ SyncError::UnknownDocument(_)) => {
            tracing::warn!(%uri, "didChange ignored: {e}");
            Outcome::Quiet
        }
        Err(e @ SyncError::InvertedRange { .. }) => {
            tracing::warn!(%uri, version, "didChange refused: {e}; buffer marked out of sync");
            out_of_sync(&uri, &e.to_string(), was_in_sync)
        }
    }
}

/// A `didChange` whose parameters could not be read (see
/// [`crate::transport::INVALID_DID_CHANGE`]): the document, when known and open, is
/// marked out of sync.
pub fn invalid_did_change(state: &State, params: transport::InvalidDidChange) -> Outcome {
    let reason = params.reason;
    let Some(uri) = params.uri.map(agentls_text::DocUri::new) else {
        tracing::warn!("didChange for no readable document dropped: {reason}");
        return Outcome::Warn(format!("agentls: a didChange was dropped: {reason}"));
    };
    match state.store.mark_out_of_sync(&uri) {
        Ok(was_in_sync) => {
            tracing::warn!(%uri, "didChange dropped: {reason}; buffer marked out of sync");
            out_of_sync(&uri, &reason, was_in_sync)
        }
        Err(e) => {
            tracing::warn!(%uri, "didChange dropped: {reason} ({e})");
            Outcome::Quiet
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
