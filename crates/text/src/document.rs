//! One open document: its rope, its version, and how client changes apply to it.

use std::sync::Arc;

use ropey::Rope;

use crate::position::{Fixup, to_char_idx};
use crate::{DocUri, PositionEncoding, Range, Snapshot};

/// One change from `textDocument/didChange`: a range and its replacement, or the whole
/// text when `range` is `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentChange {
    /// The replaced range, in the session's encoding; `None` replaces everything.
    pub range: Option<Range>,
    /// The new text.
    pub text: String,
}

impl ContentChange {
    /// A change that replaces the whole document.
    pub fn full(text: impl Into<String>) -> Self {
        Self {
            range: None,
            text: text.into(),
        }
    }

    /// A change that replaces `range`.
    pub fn replace(range: Range, text: impl Into<String>) -> Self {
        Self {
            range: Some(range),
            text: text.into(),
        }
    }
}

/// Why a batch of changes was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// The document is not open.
    #[error("document is not open: {0}")]
    UnknownDocument(DocUri),
    /// A range ends before it starts.
    #[error("change {index} has an inverted range (its end is before its start)")]
    InvertedRange {
        /// Index of the offending change in its batch.
        index: usize,
    },
}

/// Something odd but survivable noticed while applying a batch of changes. The server
/// logs these: they are client bugs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncWarning {
    /// The version did not increase; the changes were applied anyway, in arrival order,
    /// and unless the batch held the full text the document is now out of sync: the
    /// client's view of what came before is not ours.
    VersionNotNewer {
        /// Version held before the batch.
        old: i32,
        /// Version the batch claims.
        new: i32,
    },
    /// A position had to be adjusted (see [`Fixup`]).
    PositionFixed {
        /// Index of the change in its batch.
        index: usize,
        /// What was adjusted.
        fixup: Fixup,
    },
}

/// An open document: the live buffer as the client shows it.
#[derive(Debug, Clone)]
pub struct Document {
    uri: DocUri,
    language_id: Arc<str>,
    version: i32,
    revision: u64,
    rope: Rope,
    in_sync: bool,
}

impl Document {
    /// A document as opened by the client.
    pub fn new(uri: DocUri, language_id: &str, version: i32, text: &str) -> Self {
        Self {
            uri,
            language_id: language_id.into(),
            version,
            revision: 0,
            rope: Rope::from_str(text),
            in_sync: true,
        }
    }

    /// The document's URI.
    pub fn uri(&self) -> &DocUri {
        &self.uri
    }

    /// The language id the client gave in `didOpen`.
    pub fn language_id(&self) -> &str {
        &self.language_id
    }

    /// The client's version of the text.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// A counter bumped by every accepted change. Unlike the client's version it is
    /// strictly monotonic even when a buggy client repeats a version number. In a
    /// [`crate::DocumentStore`] it comes from the store's clock: it increases across a
    /// close and reopen of the same URI too, so two texts of one URI never share it.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Sets the revision from the store's clock (after the change that moved it).
    pub(crate) fn stamp(&mut self, revision: u64) {
        self.revision = revision;
    }

    /// The text.
    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    /// `false` after a change could not be applied: the server's text may differ from
    /// the client's until a full-text change, a save with text, or a reopen.
    pub fn in_sync(&self) -> bool {
        self.in_sync
    }

    /// An O(1) copy of the current state, which later changes do not affect.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            uri: self.uri.clone(),
            language_id: self.language_id.clone(),
            version: self.version,
            revision: self.revision,
            rope: self.rope.clone(),
            in_sync: self.in_sync,
        }
    }

    /// Applies a `didChange` batch in order, all or nothing. On error the text is left as
    /// it was and the document is marked out of sync (the client did apply the batch).
    pub fn apply_changes(
        &mut self,
        version: i32,
        changes: &[ContentChange],
        encoding: PositionEncoding,
    ) -> Result<Vec<SyncWarning>, SyncError> {
        let mut warnings = Vec::new();
        if version <= self.version {
            warnings.push(SyncWarning::VersionNotNewer {
                old: self.version,
                new: version,
            });
        }
        // One change per batch is what editors send per keystroke: validate it, then edit
        // in place, so no copy-on-write of a cloned rope is paid.
        if let [change] = changes {
            let mut rope = std::mem::take(&mut self.rope);
            let result = apply_one(&mut rope, 0, change, encoding, &mut warnings);
            self.rope = rope;
            return self.finish(version, result.map(|full| (full, warnings)));
        }
        // Several changes: each is positioned against the text the previous one made, so
        // they can only be validated by applying them; do it on an O(1) clone.
        let mut rope = self.rope.clone();
        let mut regained_sync = false;
        for (index, change) in changes.iter().enumerate() {
            match apply_one(&mut rope, index, change, encoding, &mut warnings) {
                Ok(full) => regained_sync |= full,
                Err(e) => return self.finish(version, Err(e)),
            }
        }
        self.rope = rope;
        self.finish(version, Ok((regained_sync, warnings)))
    }

    /// Records the outcome of a batch: the version always moves on (the client applied
    /// the batch whatever we did). A refused batch, or one whose version is not newer,
    /// marks the document out of sync; a full-text change brings it back.
    fn finish(
        &mut self,
        version: i32,
        result: Result<(bool, Vec<SyncWarning>), SyncError>,
    ) -> Result<Vec<SyncWarning>, SyncError> {
        let stale = version <= self.version;
        self.version = version;
        self.revision += 1;
        match result {
            Ok((full_text, warnings)) => {
                // Whatever came before a full text no longer matters; without one, a
                // stale version means the client's history differs from ours.
                self.in_sync = full_text || (self.in_sync && !stale);
                Ok(warnings)
            }
            Err(e) => {
                self.in_sync = false;
                Err(e)
            }
        }
    }

    /// Marks the document out of sync: the client sent a change the server could not
    /// read. Returns whether it was in sync before.
    pub fn mark_out_of_sync(&mut self) -> bool {
        self.revision += 1;
        std::mem::replace(&mut self.in_sync, false)
    }

    /// Replaces the whole text with what the client says it is (a save with text, say),
    /// restoring sync. The version is kept: saves carry none.
    pub fn resync(&mut self, text: &str) {
        self.rope = Rope::from_str(text);
        self.revision += 1;
        self.in_sync = true;
    }
}

/// Applies one change to `rope`, or leaves it untouched and says why. Returns whether
/// the change replaced the whole text.
fn apply_one(
    rope: &mut Rope,
    index: usize,
    change: &ContentChange,
    encoding: PositionEncoding,
    warnings: &mut Vec<SyncWarning>,
) -> Result<bool, SyncError> {
    let Some(range) = change.range else {
        *rope = Rope::from_str(&change.text);
        return Ok(true);
    };
    let start = to_char_idx(rope, range.start, encoding);
    let end = to_char_idx(rope, range.end, encoding);
    for fixup in [start.fixup, end.fixup].into_iter().flatten() {
        warnings.push(SyncWarning::PositionFixed { index, fixup });
    }
    if range.end < range.start || end.char_idx < start.char_idx {
        return Err(SyncError::InvertedRange { index });
    }
    if start.char_idx < end.char_idx {
        rope.remove(start.char_idx..end.char_idx);
    }
    if !change.text.is_empty() {
        rope.insert(start.char_idx, &change.text);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Position;

    fn doc(text: &str) -> Document {
        Document::new(DocUri::new("file:///a.rs"), "rust", 1, text)
    }

    fn change(l0: u32, c0: u32, l1: u32, c1: u32, text: &str) -> ContentChange {
        ContentChange::replace(
            Range::new(Position::new(l0, c0), Position::new(l1, c1)),
            text,
        )
    }

    #[test]
    fn batch_applies_in_order() {
        let mut d = doc("hello\nworld\n");
        let w = d
            .apply_changes(
                2,
                &[
                    change(0, 0, 0, 5, "bye"),
                    change(0, 3, 1, 0, " "),
                    change(0, 4, 0, 9, "all"),
                ],
                PositionEncoding::Utf16,
            )
            .map_err(|e| e.to_string());
        assert_eq!(w, Ok(vec![]));
        assert_eq!(d.rope().to_string(), "bye all\n");
        assert_eq!((d.version(), d.revision(), d.in_sync()), (2, 1, true));
    }

    #[test]
    fn inverted_range_rejects_the_whole_batch_and_marks_out_of_sync() {
        let mut d = doc("abc");
        let r = d.apply_changes(
            2,
            &[change(0, 0, 0, 0, "X"), change(0, 2, 0, 1, "")],
            PositionEncoding::Utf8,
        );
        assert_eq!(r, Err(SyncError::InvertedRange { index: 1 }));
        assert_eq!(d.rope().to_string(), "abc");
        assert!(!d.in_sync());
        // A full-text change brings it back.
        let r = d.apply_changes(3, &[ContentChange::full("Xabc")], PositionEncoding::Utf8);
        assert_eq!(r, Ok(vec![]));
        assert!(d.in_sync());
    }

    #[test]
    fn a_single_inverted_change_is_refused_in_place() {
        let mut d = doc("abc\ndef");
        let r = d.apply_changes(2, &[change(1, 1, 0, 1, "X")], PositionEncoding::Utf16);
        assert_eq!(r, Err(SyncError::InvertedRange { index: 0 }));
        assert_eq!(
            (d.rope().to_string().as_str(), d.version(), d.in_sync()),
            ("abc\ndef", 2, false)
        );
    }

    #[test]
    fn stale_version_is_applied_reported_and_marks_out_of_sync() {
        let mut d = doc("abc");
        let r = d.apply_changes(1, &[change(0, 3, 0, 3, "d")], PositionEncoding::Utf32);
        assert_eq!(r, Ok(vec![SyncWarning::VersionNotNewer { old: 1, new: 1 }]));
        assert_eq!(d.rope().to_string(), "abcd");
        assert_eq!((d.revision(), d.in_sync()), (1, false));
        // A newer ranged change does not prove anything: still out of sync.
        let r = d.apply_changes(2, &[change(0, 0, 0, 0, "x")], PositionEncoding::Utf32);
        assert_eq!(r, Ok(vec![]));
        assert!(!d.in_sync());
        // A full text does, even under a stale version; later ranged changes keep it.
        let r = d.apply_changes(
            2,
            &[ContentChange::full("new"), change(0, 3, 0, 3, "!")],
            PositionEncoding::Utf32,
        );
        assert_eq!(r, Ok(vec![SyncWarning::VersionNotNewer { old: 2, new: 2 }]));
        assert_eq!((d.rope().to_string().as_str(), d.in_sync()), ("new!", true));
    }

    #[test]
    fn marking_out_of_sync_says_whether_it_was_in_sync() {
        let mut d = doc("abc");
        assert!(d.mark_out_of_sync());
        assert!(!d.mark_out_of_sync());
        assert!(!d.snapshot().in_sync);
        d.resync("abc");
        assert!(d.in_sync());
    }

    #[test]
    fn snapshots_do_not_move() {
        let mut d = doc("abc");
        let snap = d.snapshot();
        let _ = d.apply_changes(2, &[change(0, 0, 0, 3, "xyz")], PositionEncoding::Utf16);
        assert_eq!(snap.text(), "abc");
        assert_eq!(snap.version, 1);
        assert_eq!(d.snapshot().text(), "xyz");
    }
}
