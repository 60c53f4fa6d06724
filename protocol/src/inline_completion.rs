//! `textDocument/inlineCompletion` (LSP 3.18): text to show at the cursor as ghost
//! text, which the user accepts with a key.
//!
//! The types follow the 3.18 specification, restricted to what agentls answers: the
//! result is always an [`InlineCompletionList`] (never a bare array or `null`), each
//! item's `insertText` a plain string (never a snippet) and its `range` the cursor
//! itself (start = end), in the negotiated position encoding. Nothing to offer is an
//! empty list. The server advertises `inlineCompletionProvider: true` in its
//! capabilities.

use serde::{Deserialize, Serialize};

use crate::agent::{Position, Range, TextDocumentIdentifier};

/// The method name.
pub const METHOD: &str = "textDocument/inlineCompletion";

/// The server capability's key under `capabilities` (a standard key since 3.18).
pub const CAPABILITY: &str = "inlineCompletionProvider";

/// The parameters: where the cursor is and why the client asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "InlineCompletionParams")]
pub struct Params {
    /// The document.
    pub text_document: TextDocumentIdentifier,
    /// The cursor, in the negotiated position encoding.
    pub position: Position,
    /// How the request was triggered.
    #[serde(default)]
    pub context: InlineCompletionContext,
}

/// Why the client asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InlineCompletionContext {
    /// 1 (`Invoked`): the user asked, answered at once. 2 (`Automatic`): the user
    /// typed, answered after `[completion] debounce_ms` unless a newer request came.
    #[serde(default = "automatic")]
    pub trigger_kind: u8,
    /// The completion item selected in the editor's completion menu, if any (read but
    /// not used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_completion_info: Option<SelectedCompletionInfo>,
}

fn automatic() -> u8 {
    TRIGGER_AUTOMATIC
}

impl Default for InlineCompletionContext {
    /// A client that sends no context typed (`Automatic`).
    fn default() -> Self {
        Self {
            trigger_kind: TRIGGER_AUTOMATIC,
            selected_completion_info: None,
        }
    }
}

/// `InlineCompletionTriggerKind.Invoked`.
pub const TRIGGER_INVOKED: u8 = 1;
/// `InlineCompletionTriggerKind.Automatic`.
pub const TRIGGER_AUTOMATIC: u8 = 2;

/// The completion menu's selected item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelectedCompletionInfo {
    /// The range the item would replace.
    pub range: Range,
    /// The item's text.
    pub text: String,
}

/// The result: always a list, empty when there is nothing to offer.
pub type Result = InlineCompletionList;

/// The completions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InlineCompletionList {
    /// At most one item today.
    pub items: Vec<InlineCompletionItem>,
}

/// One completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InlineCompletionItem {
    /// The text to insert at `range` (plain text, possibly several lines).
    pub insert_text: String,
    /// Where it goes: the cursor (an empty range).
    pub range: Range,
}
