//! `textDocument/copilotInlineEdit`: next-edit suggestions, as GitHub Copilot's language
//! server answers them, so clients written for it (sidekick.nvim, copilot-lsp) work
//! against agentls unmodified.
//!
//! The client sends the cursor and the document's version; the answer is the edits the
//! user's recent edits imply (the rest of a rename, the calls of a function that gained
//! a parameter), each with the version it was computed against: a client applies them
//! only while the document is still at that version. Nothing to suggest is an empty
//! list, answered at once; a newer request answers the older one with an empty list.
//! agentls sends no `command` with its edits.

use serde::{Deserialize, Serialize};

use crate::agent::{Position, Range};

/// The method name.
pub const METHOD: &str = "textDocument/copilotInlineEdit";

/// A document and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VersionedTextDocumentIdentifier {
    /// The document's URI.
    pub uri: String,
    /// The version the client has (absent: whatever the server has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
}

/// The parameters: where the cursor is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CopilotInlineEditParams")]
pub struct Params {
    /// The document, with the version the client has.
    pub text_document: VersionedTextDocumentIdentifier,
    /// The cursor, in the negotiated position encoding.
    pub position: Position,
}

/// The result: the suggested edits, in document order; empty when there are none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "CopilotInlineEditResult")]
pub struct Result {
    /// The edits, disjoint, all against the same version.
    pub edits: Vec<InlineEdit>,
}

/// One suggested edit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InlineEdit {
    /// What it replaces, in the negotiated position encoding.
    pub range: Range,
    /// The replacement.
    pub text: String,
    /// The document and the version the range belongs to.
    pub text_document: VersionedTextDocumentIdentifier,
    /// A command for the client to run once the edit is accepted (agentls sends none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Command>,
}

/// An LSP command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Command {
    /// Its title.
    pub title: String,
    /// Its identifier.
    pub command: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<serde_json::Value>>,
}
