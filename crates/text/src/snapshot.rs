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

    /// A char index converted to a position in `encoding`.
    pub fn position(&self, char_idx: usize, encoding: PositionEncoding) -> Position {
        to_position(&self.rope, char_idx, encoding)
    }
}
