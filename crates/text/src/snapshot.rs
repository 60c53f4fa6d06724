//! Immutable views of a document that readers and agents hold while typing goes on.

use std::sync::Arc;

use ropey::Rope;

use crate::position::{Resolved, to_char_idx, to_position};
use crate::{DocUri, Position, PositionEncoding};

/// The state of a document at one version. Cloning the rope is O(1) and later changes to
/// the document do not show through.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The document's URI.
    pub uri: DocUri,
    /// The language id from `didOpen`.
    pub language_id: Arc<str>,
    /// The client's version when the snapshot was taken.
    pub version: i32,
    /// The store's revision when the snapshot was taken (see [`crate::Document::revision`]).
    pub revision: u64,
    /// The text.
    pub rope: Rope,
    /// Whether the server believed its text matched the client's.
    pub in_sync: bool,
}

impl Snapshot {
    /// The whole text as a `String` (O(n): for tests, tools and small files).
    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    /// A position in `encoding` converted to a char index (clamped, never panics).
    pub fn char_idx(&self, pos: Position, encoding: PositionEncoding) -> Resolved {
        to_char_idx(&self.rope, pos, encoding)
    }

    /// The identifier under or just before `char_idx` (letters, digits, `_`, `$`), for
    /// requests such as go-to-definition that act on "the word at the cursor".
    ///
    /// ```
    /// let snap = agentls_text::Document::new(agentls_text::DocUri::new("file:///a"), "rust", 1, "let x = run_all();").snapshot();
    /// assert_eq!(snap.word_at(10).as_deref(), Some("run_all")); // inside
    /// assert_eq!(snap.word_at(15).as_deref(), Some("run_all")); // just after
    /// assert_eq!(snap.word_at(7), None); // on "= "
    /// ```
    pub fn word_at(&self, char_idx: usize) -> Option<String> {
        let rope = &self.rope;
        let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
        let at = char_idx.min(rope.len_chars());
        let inside = rope.get_char(at).is_some_and(is_word);
        let after = at > 0 && rope.get_char(at - 1).is_some_and(is_word);
        if !inside && !after {
            return None;
        }
        let mut start = if inside { at } else { at - 1 };
        while start > 0 && rope.get_char(start - 1).is_some_and(is_word) {
            start -= 1;
        }
        let mut end = at;
        while rope.get_char(end).is_some_and(is_word) {
            end += 1;
        }
        Some(rope.slice(start..end).to_string())
    }

    /// A char index converted to a position in `encoding`.
    pub fn position(&self, char_idx: usize, encoding: PositionEncoding) -> Position {
        to_position(&self.rope, char_idx, encoding)
    }
}
