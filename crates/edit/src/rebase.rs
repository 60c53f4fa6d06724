//! Moving edits computed on an old snapshot onto the text the user has typed since.

use ropey::Rope;

use crate::diff::{TextEdit, diff};

/// An edit that overlaps what the user changed since the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the edit at lines {edit_lines:?} overlaps the user's change at lines {user_lines:?} made since the file was read; read the file again and redo this edit"
)]
pub struct Conflict {
    /// One-based first and last line of the refused edit, in the base text.
    pub edit_lines: (usize, usize),
    /// One-based first and last line of the user's change, in the base text.
    pub user_lines: (usize, usize),
}

/// Shifts `edits` (char offsets into `base`) onto `current`, where the user's own changes
/// are recovered by diffing `base` against `current`. Edits that do not overlap any user
/// change are moved; the first one that does is refused. Two insertions at the same
/// point, or an insertion inside the other side's replaced range, count as overlapping
/// (their order would be a guess).
pub fn rebase(base: &Rope, edits: &[TextEdit], current: &Rope) -> Result<Vec<TextEdit>, Conflict> {
    let base_text = base.to_string();
    let user = diff(&base_text, &current.to_string());
    let mut out = Vec::with_capacity(edits.len());
    let mut sorted: Vec<&TextEdit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    for e in sorted {
        let (s, t) = (e.range.start, e.range.end);
        let mut shift: isize = 0;
        for u in &user {
            let (us, ue) = (u.range.start, u.range.end);
            let conflict = (s < ue && us < t)
                || (s == t && us == ue && s == us)
                || (s == t && us < s && s < ue)
                || (us == ue && s < us && us < t);
            if conflict {
                return Err(Conflict {
                    edit_lines: lines_of(base, s, t),
                    user_lines: lines_of(base, us, ue),
                });
            }
            let before = ue < s || (ue == s && (us < ue || s < t));
            if before {
                shift += u.new_text.chars().count() as isize - (ue - us) as isize;
            }
        }
        let mv = |x: usize| x.saturating_add_signed(shift);
        out.push(TextEdit::new(mv(s)..mv(t), e.new_text.clone()));
    }
    Ok(out)
}

fn lines_of(rope: &Rope, start: usize, end: usize) -> (usize, usize) {
    let len = rope.len_chars();
    let first = rope.char_to_line(start.min(len)) + 1;
    let last_char = if end > start { end - 1 } else { end };
    (first, rope.char_to_line(last_char.min(len)) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::apply_edits;
    use proptest::prelude::*;

    #[test]
    fn shifts_after_user_typing_above() {
        let base = Rope::from_str("a\nb\nc\n");
        let current = Rope::from_str("a\nNEW\nb\nc\n");
        let edits = vec![TextEdit::new(4..5, "C")];
        let moved = rebase(&base, &edits, &current).unwrap();
        assert_eq!(apply_edits(&current, &moved).to_string(), "a\nNEW\nb\nC\n");
    }

    #[test]
    fn overlap_is_refused_with_lines() {
        let base = Rope::from_str("a\nb\nc\n");
        let current = Rope::from_str("a\nx\nc\n");
        let err = rebase(&base, &[TextEdit::new(2..3, "B")], &current).unwrap_err();
        assert_eq!(err.edit_lines, (2, 2));
        assert_eq!(err.user_lines, (2, 2));
        assert!(err.to_string().contains("read the file again"));
        // Typing right after the replaced text touches it but does not overlap.
        let current = Rope::from_str("a\nbX\nc\n");
        let moved = rebase(&base, &[TextEdit::new(2..3, "B")], &current).unwrap();
        assert_eq!(apply_edits(&current, &moved).to_string(), "a\nBX\nc\n");
    }

    /// A base text whose characters are all distinct (newlines apart), and two sets of
    /// edits separated by untouched text. Distinct characters make the user's change
    /// recoverable without ambiguity, so the merged text is well defined.
    fn scenario() -> impl Strategy<Value = (String, Vec<(usize, usize, String, bool)>)> {
        let alphabet: Vec<char> = ('a'..='z')
            .chain('\u{3b1}'..='\u{3c9}')
            .chain('A'..='P')
            .collect();
        (1usize..60, 2usize..7)
            .prop_map(move |(n, width)| {
                let mut b = String::new();
                for (i, c) in alphabet.iter().take(n).enumerate() {
                    b.push(*c);
                    if i % width == width - 1 {
                        b.push('\n');
                    }
                }
                b
            })
            .prop_flat_map(|b| {
                let n = b.chars().count();
                let edit = (
                    0..=n,
                    0usize..4,
                    "[xyz\n]{0,3}",
                    "[XYZ\u{1F600}]{0,3}",
                    any::<bool>(),
                );
                (Just(b), proptest::collection::vec(edit, 0..6))
            })
            .prop_map(|(b, raw)| {
                let chars: Vec<char> = b.chars().collect();
                let n = chars.len();
                let mut raw: Vec<(usize, usize, String, bool)> = raw
                    .into_iter()
                    .map(|(s, l, agent_text, user_text, agent)| {
                        let e = (s + l).min(n);
                        if agent {
                            (s, e, agent_text, true)
                        } else {
                            (s, e, user_text, false)
                        }
                    })
                    // The user's change stays inside lines (see above).
                    .filter(|e| e.3 || !chars[e.0..e.1].contains(&'\n'))
                    .collect();
                raw.sort_by_key(|e| e.0);
                let mut kept: Vec<(usize, usize, String, bool)> = Vec::new();
                for e in raw {
                    if kept.last().is_none_or(|p| e.0 >= p.1 + 3) {
                        kept.push(e);
                    }
                }
                (b, kept)
            })
    }

    proptest! {
        #[test]
        fn rebased_equals_sequential((base, all) in scenario()) {
            let rope = Rope::from_str(&base);
            let edits = |agent: bool| -> Vec<TextEdit> {
                all.iter().filter(|e| e.3 == agent).map(|e| TextEdit::new(e.0..e.1, e.2.clone())).collect()
            };
            let current = apply_edits(&rope, &edits(false));
            let both: Vec<TextEdit> = all.iter().map(|e| TextEdit::new(e.0..e.1, e.2.clone())).collect();
            let expected = apply_edits(&rope, &both).to_string();
            let moved = rebase(&rope, &edits(true), &current);
            prop_assert!(moved.is_ok(), "{:?}", moved);
            let moved = moved.unwrap_or_default();
            prop_assert_eq!(apply_edits(&current, &moved).to_string(), expected);
        }

        #[test]
        fn overlapping_edit_is_refused((base, all) in scenario(), extra in "[XY]{1,2}") {
            // The agent replaces exactly what the user replaced: always a conflict.
            let rope = Rope::from_str(&base);
            let n = rope.len_chars();
            prop_assume!(n >= 2);
            let user = vec![TextEdit::new(0..1, extra)];
            let current = apply_edits(&rope, &user);
            let _ = all;
            prop_assert!(rebase(&rope, &[TextEdit::new(0..2, "q")], &current).is_err());
        }

        #[test]
        fn rebase_over_no_change_is_identity((base, all) in scenario()) {
            let rope = Rope::from_str(&base);
            let agent: Vec<TextEdit> = all.iter().map(|e| TextEdit::new(e.0..e.1, e.2.clone())).collect();
            let moved = rebase(&rope, &agent, &rope).unwrap();
            prop_assert_eq!(moved, agent);
        }
    }
}
