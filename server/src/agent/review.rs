//! Changes landed for review: each is a cluster of nearby edits in one file, kept with
//! the text right after it landed and the edits that undo it. Rejecting moves those
//! undo edits onto the file as it is now, so the user's later typing stays.

use std::path::PathBuf;

use agentls_edit::{FileChange, Plan, Source, TextChange, TextEdit, apply_edits, invert};
use ropey::Rope;

/// One reviewable change.
#[derive(Debug, Clone)]
pub struct PendingChange {
    /// Id, unique in the server.
    pub id: u64,
    /// The file (absolute).
    pub path: PathBuf,
    /// The file's text right after the change landed.
    after: Rope,
    /// Edits on `after` that restore the text before the change.
    undo: Vec<TextEdit>,
    /// 0-based first and last line of the change in `after`.
    pub lines: (usize, usize),
}

/// Splits a landed text change into reviewable changes: clusters of edits whose lines
/// touch or are adjacent. `next_id` hands out ids.
pub fn split(change: &TextChange, mut next_id: impl FnMut() -> u64) -> Vec<PendingChange> {
    let after = Rope::from_str(&change.new_text);
    let undo = invert(&change.base, &change.edits);
    let line_of = |char_idx: usize| after.char_to_line(char_idx.min(after.len_chars()));
    let mut out: Vec<PendingChange> = Vec::new();
    for edit in undo {
        let first = line_of(edit.range.start);
        let last = line_of(edit.range.end).max(first);
        match out.last_mut() {
            Some(prev) if first <= prev.lines.1 + 1 => {
                prev.lines.1 = prev.lines.1.max(last);
                prev.undo.push(edit);
            }
            _ => out.push(PendingChange {
                id: next_id(),
                path: change.path.clone(),
                after: after.clone(),
                undo: vec![edit],
                lines: (first, last),
            }),
        }
    }
    out
}

impl PendingChange {
    /// The change's 0-based line span in `current` (the file as it is now), or `None`
    /// when the user rewrote those lines.
    pub fn current_lines(&self, current: &Rope) -> Option<(usize, usize)> {
        let moved = agentls_edit::rebase(&self.after, &self.undo, current).ok()?;
        let first = moved.first()?;
        let last = moved.last()?;
        let line = |c: usize| current.char_to_line(c.min(current.len_chars()));
        Some((line(first.range.start), line(last.range.end)))
    }
}

/// The plan that undoes `change` on `current` (the file as it is now, with its version
/// when open), or why it cannot: the user rewrote the same lines.
pub fn reject_plan(change: &PendingChange, current: &Source) -> Result<Plan, String> {
    let undo = TextChange {
        path: change.path.clone(),
        version: None,
        new_text: apply_edits(&change.after, &change.undo).to_string(),
        base: change.after.clone(),
        edits: change.undo.clone(),
    };
    let moved = undo
        .rebase(current)
        .map_err(|c| format!("{}: cannot restore: {c}", change.path.display()))?;
    Ok(Plan {
        changes: vec![FileChange::Edit(moved)],
        ..Plan::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landed(before: &str, after: &str) -> TextChange {
        TextChange {
            path: PathBuf::from("/w/a.rs"),
            version: Some(1),
            base: Rope::from_str(before),
            edits: agentls_edit::diff(before, after),
            new_text: after.to_owned(),
        }
    }

    fn reject_on(change: &PendingChange, current: &str) -> Result<String, String> {
        let plan = reject_plan(
            change,
            &Source {
                rope: Rope::from_str(current),
                version: Some(9),
            },
        )?;
        match &plan.changes[0] {
            FileChange::Edit(t) => Ok(t.new_text.clone()),
            other => Err(format!("unexpected {other:?}")),
        }
    }

    #[test]
    fn far_apart_edits_are_separate_changes() {
        let before = "a\nb\nc\nd\ne\nf\n";
        let after = "A\nb\nc\nd\ne\nF\n";
        let mut n = 0;
        let changes = split(&landed(before, after), || {
            n += 1;
            n
        });
        assert_eq!(changes.len(), 2);
        assert_eq!((changes[0].id, changes[0].lines), (1, (0, 0)));
        assert_eq!(changes[1].lines, (5, 5));
        // Rejecting the second keeps the first, and the user's typing in between.
        let current = "A\nb\nuser\nd\ne\nF\n";
        assert_eq!(
            reject_on(&changes[1], current).unwrap(),
            "A\nb\nuser\nd\ne\nf\n"
        );
        assert_eq!(
            changes[1].current_lines(&Rope::from_str(current)),
            Some((5, 5))
        );
    }

    #[test]
    fn rejecting_after_the_user_rewrote_the_lines_is_refused() {
        let changes = split(&landed("x\ny\n", "x\nY\n"), || 1);
        assert_eq!(changes.len(), 1);
        assert!(reject_on(&changes[0], "x\nmine\n").is_err());
        assert_eq!(changes[0].current_lines(&Rope::from_str("x\nmine\n")), None);
    }

    #[test]
    fn insertions_shift_with_text_typed_above() {
        let changes = split(&landed("fn a() {}\n", "fn a() {}\nfn b() {}\n"), || 1);
        let current = "// header\nfn a() {}\nfn b() {}\n";
        assert_eq!(
            changes[0]
                .current_lines(&Rope::from_str(current))
                .map(|l| l.0),
            Some(2)
        );
        assert_eq!(
            reject_on(&changes[0], current).unwrap(),
            "// header\nfn a() {}\n"
        );
    }
}
