//! Requests for debugging agentls itself.

use agentls_protocol::view_file_text;
use tower_lsp::jsonrpc;

use crate::state::State;

/// `agentls/viewFileText`: the server's copy of a document.
pub fn view_file_text(
    state: &State,
    params: view_file_text::Params,
) -> jsonrpc::Result<view_file_text::Result> {
    let uri = agentls_text::DocUri::new(params.text_document.uri.as_str());
    let snapshot = state.store.snapshot(&uri).ok_or_else(|| jsonrpc::Error {
        code: jsonrpc::ErrorCode::InvalidParams,
        message: format!("document is not open: {uri}").into(),
        data: None,
    })?;
    Ok(view_file_text::Result {
        text: snapshot.text(),
        version: snapshot.version,
        in_sync: snapshot.in_sync,
    })
}
