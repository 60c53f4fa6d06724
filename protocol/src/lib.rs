//! The LSP extensions agentls speaks beyond the standard protocol.
//!
//! This crate depends on nothing of agentls, so editor clients and other servers can use
//! it alone. `PROTOCOL.md` beside it documents every method.

use serde::{Deserialize, Serialize};

/// `agentls/viewFileText`: the server's text of a document, for debugging text sync
/// (as rust-analyzer's `rust-analyzer/viewFileText`).
pub mod view_file_text {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agentls/viewFileText";

    /// Parameters: which document.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Params {
        /// The document's URI, as in `TextDocumentIdentifier`.
        pub text_document: TextDocumentIdentifier,
    }

    /// The result: the text as the server holds it, and its version.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// The text.
        pub text: String,
        /// The client version the text corresponds to.
        pub version: i32,
        /// `false` when a change could not be applied and the server is waiting for the
        /// client to send the full text again.
        pub in_sync: bool,
    }
}

/// A document reference, as LSP's `TextDocumentIdentifier` (kept local so this crate
/// stands alone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDocumentIdentifier {
    /// The document's URI.
    pub uri: String,
}
