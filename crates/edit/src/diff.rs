//! Minimal edits between two texts: lines first, then characters inside changed lines,
//! so the editor's cursors, folds and marks move as little as possible.

use std::ops::Range;

use ropey::Rope;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffTag, capture_diff_slices, capture_diff_slices_deadline};

/// Replace the chars `range` of the base text with `new_text`. Offsets are char indexes
/// (Unicode scalar values) of the base rope, as `agentls_text::position` expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// Char range in the base text.
    pub range: Range<usize>,
    /// Replacement text.
    pub new_text: String,
}

impl TextEdit {
    /// An edit replacing `range` by `new_text`.
    pub fn new(range: Range<usize>, new_text: impl Into<String>) -> Self {
        Self {
            range,
            new_text: new_text.into(),
        }
    }
}

/// Time allowed for the line diff of pathological inputs (whole rewrites of huge files).
const LINE_DIFF_BUDGET: Duration = Duration::from_millis(300);
/// Changed line blocks up to this many chars on each side are refined by characters;
/// larger ones stay whole (refining them costs more than it saves).
const MAX_REFINE_CHARS: usize = 4000;
/// Unchanged runs shorter than this between two char edits are folded into one edit, so
/// a rewritten word is one edit, not a confetti of single letters.
const MIN_KEPT_RUN: usize = 3;

/// Edits that turn `old` into `new`: sorted, non-overlapping, char offsets into `old`.
pub fn diff(old: &str, new: &str) -> Vec<TextEdit> {
    if old == new {
        return Vec::new();
    }
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    // Common prefix and suffix first: model edits are local, files are large.
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut char_pos: usize = a[..prefix].iter().map(|l| l.chars().count()).sum();
    let mut edits = Vec::new();
    // Past the deadline the diff degrades to coarser edits, never to wrong ones.
    let deadline = Instant::now() + LINE_DIFF_BUDGET;
    for op in capture_diff_slices_deadline(Algorithm::Myers, am, bm, Some(deadline)) {
        let (tag, or, nr) = op.as_tag_tuple();
        let old_chunk: String = am[or].concat();
        let new_chunk: String = bm[nr].concat();
        let old_chars = old_chunk.chars().count();
        match tag {
            DiffTag::Equal => {}
            DiffTag::Replace
                if old_chars <= MAX_REFINE_CHARS && new_chunk.len() <= MAX_REFINE_CHARS * 4 =>
            {
                edits.extend(refine(&old_chunk, &new_chunk, char_pos));
            }
            _ => edits.push(TextEdit::new(char_pos..char_pos + old_chars, new_chunk)),
        }
        char_pos += old_chars;
    }
    edits
}

/// Char-level edits between two changed blocks, offset by `base`.
fn refine(old: &str, new: &str, base: usize) -> Vec<TextEdit> {
    let a: Vec<char> = old.chars().collect();
    let b: Vec<char> = new.chars().collect();
    let mut out: Vec<TextEdit> = Vec::new();
    // Track the new side to know which unchanged chars separate two edits.
    let mut last_end_new = 0usize;
    for op in capture_diff_slices(Algorithm::Myers, &a, &b) {
        let (tag, or, nr) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            continue;
        }
        let text: String = b[nr.clone()].iter().collect();
        let range = base + or.start..base + or.end;
        match out.last_mut() {
            Some(prev) if range.start - prev.range.end < MIN_KEPT_RUN => {
                // Fold the short unchanged run between the two edits into one edit.
                prev.new_text.extend(&b[last_end_new..nr.start]);
                prev.new_text.push_str(&text);
                prev.range.end = range.end;
            }
            _ => out.push(TextEdit::new(range, text)),
        }
        last_end_new = nr.end;
    }
    out
}

/// Applies sorted, non-overlapping `edits` (char offsets into `rope`). Ranges past the
/// end are clamped, so no input panics; callers hold edits computed on this very rope.
pub fn apply_edits(rope: &Rope, edits: &[TextEdit]) -> Rope {
    let mut out = rope.clone();
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    for e in sorted.into_iter().rev() {
        let len = out.len_chars();
        let start = e.range.start.min(len);
        let end = e.range.end.clamp(start, len);
        out.remove(start..end);
        out.insert(start, &e.new_text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_edit_is_small() {
        let e = diff("fn a() {\n    foo(1);\n}\n", "fn a() {\n    foo(2);\n}\n");
        assert_eq!(e, vec![TextEdit::new(17..18, "2")]);
        let e = diff("a\nb\n", "a\nx\nb\n");
        assert_eq!(e, vec![TextEdit::new(2..2, "x\n")]);
        assert_eq!(diff("same", "same"), vec![]);
    }

    #[test]
    fn unicode_offsets_are_chars() {
        let old = "é😀 x\n";
        let e = diff(old, "é😀 y\n");
        assert_eq!(e, vec![TextEdit::new(3..4, "y")]);
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof!["a", "b", "é", "😀", " ", "\n", "\r\n", "foo\n", "\t"],
            0..40,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn applying_diff_gives_new(old in text(), new in text()) {
            let edits = diff(&old, &new);
            let rope = Rope::from_str(&old);
            prop_assert_eq!(apply_edits(&rope, &edits).to_string(), new);
            for w in edits.windows(2) {
                prop_assert!(w[0].range.end <= w[1].range.start);
            }
        }
    }
}

/// Edits on the text after `edits` that restore `base`: for rejecting or undoing an
/// agent change. `edits` must be sorted and non-overlapping, as [`diff`] returns them.
pub fn invert(base: &Rope, edits: &[TextEdit]) -> Vec<TextEdit> {
    let len = base.len_chars();
    let mut shift: isize = 0;
    let mut out = Vec::with_capacity(edits.len());
    for e in edits {
        let start = e.range.start.min(len);
        let end = e.range.end.clamp(start, len);
        let new_len = e.new_text.chars().count();
        let new_start = start.saturating_add_signed(shift);
        out.push(TextEdit::new(
            new_start..new_start + new_len,
            base.slice(start..end).to_string(),
        ));
        shift += new_len as isize - (end - start) as isize;
    }
    out
}

#[cfg(test)]
mod invert_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn invert_restores_base(old in "[ab\n😀]{0,30}", new in "[ab\nc]{0,30}") {
            let base = Rope::from_str(&old);
            let edits = diff(&old, &new);
            let after = apply_edits(&base, &edits);
            prop_assert_eq!(after.to_string(), new);
            prop_assert_eq!(apply_edits(&after, &invert(&base, &edits)).to_string(), old);
        }
    }
}
