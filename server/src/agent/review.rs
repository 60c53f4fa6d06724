//! Changes landed for review: each is a cluster of nearby edits in one file, kept with
//! the text right after it landed and the edits that undo it. Rejecting moves those
//! undo edits onto the file as it is now, so the user's later typing stays.

use std::path::PathBuf;

use agentls_edit::{FileChange, Plan, Source, TextChange, TextEdit, apply_edits, invert};
use agentls_protocol::agent::list_changes::ChangeKind;
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

/// A pending change as a saved session keeps it: enough to reject it after a restart
/// (the undo edits move onto the file as it is then, like any reject).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SavedChange {
    path: PathBuf,
    after: String,
    /// `(start, end, text)`: char range in `after` and what restores it.
    undo: Vec<(usize, usize, String)>,
    lines: (usize, usize),
}

impl PendingChange {
    /// The saved form.
    pub fn to_saved(&self) -> SavedChange {
        SavedChange {
            path: self.path.clone(),
            after: self.after.to_string(),
            undo: self
                .undo
                .iter()
                .map(|e| (e.range.start, e.range.end, e.new_text.clone()))
                .collect(),
            lines: self.lines,
        }
    }

    /// A saved change back, under a fresh `id`; `None` when the saved ranges do not fit
    /// its text (a damaged file: better no change than a wrong reject).
    pub fn from_saved(saved: SavedChange, id: u64) -> Option<Self> {
        let after = Rope::from_str(&saved.after);
        let len = after.len_chars();
        let mut last_end = 0;
        let mut undo = Vec::with_capacity(saved.undo.len());
        for (start, end, text) in saved.undo {
            if start < last_end || start > end || end > len {
                return None;
            }
            last_end = end;
            undo.push(TextEdit::new(start..end, text));
        }
        Some(Self {
            id,
            path: saved.path,
            after,
            undo,
            lines: saved.lines,
        })
    }
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
        let ranges = self.current_ranges(current)?;
        let line = |c: usize| current.char_to_line(c.min(current.len_chars()));
        Some((line(ranges.first()?.start), line(ranges.last()?.end)))
    }

    /// Where the agent's text of the change is in `current` (the file as it is now): one
    /// char range per edit, in order, empty where the agent only removed text; `None`
    /// when the user rewrote those lines.
    pub fn current_ranges(&self, current: &Rope) -> Option<Vec<std::ops::Range<usize>>> {
        let moved = agentls_edit::rebase(&self.after, &self.undo, current).ok()?;
        Some(moved.into_iter().map(|e| e.range).collect())
    }

    /// What the change did: its kind, and the lines a line diff of the lines it touched
    /// counts added and removed.
    pub fn summary(&self) -> Summary {
        let added_text = self.undo.iter().any(|e| !e.range.is_empty());
        let removed_text = self.undo.iter().any(|e| !e.new_text.is_empty());
        let kind = match (added_text, removed_text) {
            (_, false) => ChangeKind::Insert,
            (false, true) => ChangeKind::Delete,
            (true, true) => ChangeKind::Replace,
        };
        // The whole lines the edits touch, after and before the change.
        let len = self.after.len_chars();
        let (Some(first), Some(last)) = (self.undo.first(), self.undo.last()) else {
            return Summary {
                kind,
                lines_added: 0,
                lines_removed: 0,
            };
        };
        let line_start = |c: usize| self.after.line_to_char(self.after.char_to_line(c.min(len)));
        let start = line_start(first.range.start);
        let last_line = self.after.char_to_line(last.range.end.min(len));
        let end = self
            .after
            .line_to_char((last_line + 1).min(self.after.len_lines()));
        let after = self.after.slice(start..end).to_string();
        let shifted: Vec<TextEdit> = self
            .undo
            .iter()
            .map(|e| {
                TextEdit::new(
                    e.range.start - start..e.range.end - start,
                    e.new_text.clone(),
                )
            })
            .collect();
        let before = apply_edits(&Rope::from_str(&after), &shifted).to_string();
        let diff = similar::TextDiff::configure()
            .timeout(std::time::Duration::from_millis(100))
            .diff_lines(&before, &after);
        let count = |tag| diff.iter_all_changes().filter(|c| c.tag() == tag).count();
        Summary {
            kind,
            lines_added: count(similar::ChangeTag::Insert),
            lines_removed: count(similar::ChangeTag::Delete),
        }
    }
}

/// What a pending change did ([`PendingChange::summary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Insert, replace or delete.
    pub kind: ChangeKind,
    /// Lines added.
    pub lines_added: usize,
    /// Lines removed.
    pub lines_removed: usize,
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
    fn a_saved_change_rejects_like_the_original() {
        let changes = split(&landed("a\nb\nc\n", "a\nB\nc\n"), || 1);
        let json = serde_json::to_string(&changes[0].to_saved()).unwrap();
        let back = PendingChange::from_saved(serde_json::from_str(&json).unwrap(), 7).unwrap();
        assert_eq!(back.id, 7);
        assert_eq!(
            reject_on(&back, "top\na\nB\nc\n").unwrap(),
            "top\na\nb\nc\n"
        );
        let mut broken = changes[0].to_saved();
        broken.undo[0].1 = 999;
        assert!(PendingChange::from_saved(broken, 8).is_none());
    }

    #[test]
    fn summaries_say_what_a_change_did_to_its_lines() {
        let summary = |before: &str, after: &str| {
            let changes = split(&landed(before, after), || 1);
            assert_eq!(changes.len(), 1, "{before:?} -> {after:?}");
            changes[0].summary()
        };
        let s = summary("a\nb\nc\n", "a\nb\nnew\nc\n");
        assert_eq!(
            (s.kind, s.lines_added, s.lines_removed),
            (ChangeKind::Insert, 1, 0)
        );
        let s = summary("a\nb\nc\n", "a\nc\n");
        assert_eq!(
            (s.kind, s.lines_added, s.lines_removed),
            (ChangeKind::Delete, 0, 1)
        );
        // Inside a line: one line replaced by two.
        let s = summary(
            "fn f() {\n    todo!()\n}\n",
            "fn f() {\n    let x = 1;\n    x\n}\n",
        );
        assert_eq!(
            (s.kind, s.lines_added, s.lines_removed),
            (ChangeKind::Replace, 2, 1)
        );
    }

    #[test]
    fn current_ranges_cover_the_agent_text_where_it_is_now() {
        let changes = split(&landed("x\ntodo\n", "x\ndone\n"), || 1);
        let current = Rope::from_str("typed\nx\ndone\n");
        let ranges = changes[0].current_ranges(&current).unwrap();
        let texts: Vec<String> = ranges
            .iter()
            .map(|r| current.slice(r.clone()).to_string())
            .collect();
        assert_eq!(texts.concat(), "done");
        assert_eq!(current.char_to_line(ranges[0].start), 2);
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
