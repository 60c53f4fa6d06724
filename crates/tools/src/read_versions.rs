//! What the model last saw of each file: the text of its last whole-file `read_file`, or
//! the text its last successful edit produced. A whole-file write is made from that text;
//! when the file has changed since (the user typed, a formatter ran), the write is merged
//! three-way from it so the other change is kept, or refused with the current text.
//! Nothing the user typed is ever overwritten by a write made from an older read.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agentls_edit::{FileChange, Plan, merge3};

/// Per path, the text the model last saw. Shared by every tool call of a session.
#[derive(Debug, Default)]
pub struct ReadVersions {
    seen: Mutex<HashMap<PathBuf, String>>,
    /// Files the model has seen any lines of (a window read, its own edit): an edit of
    /// a file outside this set was written blind ([`crate::read_before_edit`]).
    looked: Mutex<HashSet<PathBuf>>,
}

impl ReadVersions {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, String>> {
        // A panic while holding the lock cannot leave the map half-updated (every
        // operation is one insert or remove), so a poisoned lock is still usable.
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn looked(&self) -> std::sync::MutexGuard<'_, HashSet<PathBuf>> {
        self.looked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The model has seen `text` as the whole of `path`.
    pub fn remember(&self, path: &Path, text: String) {
        self.looked().insert(path.to_path_buf());
        self.seen().insert(path.to_path_buf(), text);
    }

    /// The model has seen some lines of `path`.
    pub fn glimpse(&self, path: &Path) {
        self.looked().insert(path.to_path_buf());
    }

    /// Whether the model has seen any of `path` in this session.
    pub fn has_looked(&self, path: &Path) -> bool {
        self.looked().contains(path)
    }

    /// The files the model has seen any of in this session.
    pub fn looked_at(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.looked().iter().cloned().collect();
        paths.sort();
        paths
    }

    /// The text the model last saw of `path`, if it saw all of it.
    pub fn get(&self, path: &Path) -> Option<String> {
        self.seen().get(path).cloned()
    }

    /// Records what a landed plan of the model's own left in each file it touched: the
    /// model knows that text, since it wrote it (minus others' changes it never saw).
    pub fn record(&self, plan: &Plan) {
        {
            let mut looked = self.looked();
            for c in &plan.changes {
                match c {
                    FileChange::Create { path, .. } => {
                        looked.insert(path.clone());
                    }
                    FileChange::Edit(t) => {
                        looked.insert(t.path.clone());
                    }
                    FileChange::Rename { from, to } => {
                        if looked.remove(from) {
                            looked.insert(to.clone());
                        }
                    }
                    FileChange::Delete { path } => {
                        looked.remove(path);
                    }
                }
            }
        }
        let mut seen = self.seen();
        for c in &plan.changes {
            match c {
                FileChange::Create { path, text } => {
                    seen.insert(path.clone(), text.clone());
                }
                FileChange::Edit(t) => {
                    let result = t.new_text.clone();
                    let base = t.base.to_string();
                    // The edit was matched on the current text, which may hold changes
                    // the model never saw: what it knows is its old view with its own
                    // edit applied, not the whole result. No such view: forget it.
                    let known = match seen.get(&t.path) {
                        Some(old) if *old != base => {
                            merge3(&base, &result, old).ok().map(|m| m.text)
                        }
                        _ => Some(result),
                    };
                    match known {
                        Some(text) => seen.insert(t.path.clone(), text),
                        None => seen.remove(&t.path),
                    };
                }
                FileChange::Rename { from, to } => {
                    if let Some(text) = seen.remove(from) {
                        seen.insert(to.clone(), text);
                    }
                }
                FileChange::Delete { path } => {
                    seen.remove(path);
                }
            }
        }
    }
}

/// What a whole-file write of an existing file becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reconciled {
    /// The content to write.
    pub content: String,
    /// What to tell the model besides the usual report (a merge happened).
    pub note: Option<String>,
}

/// Why a whole-file write was refused; the message is for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub message: String,
    /// The current text was shown whole: the model has now seen it.
    pub shown_current: bool,
}

/// Current text up to this size is shown whole in a refusal; larger files only around
/// the conflict.
const SHOW_WHOLE_BYTES: usize = 24 * 1024;
/// Lines shown around a conflict in a large file.
const CONFLICT_MARGIN: usize = 15;

/// Decides what writing `new` over `shown` (the file as the user sees it now, `None`
/// when it does not exist) does, given the text the model last saw (`seen`).
pub(crate) fn reconcile(
    shown: &str,
    seen: Option<&str>,
    current: Option<&str>,
    new: &str,
) -> Result<Reconciled, Refusal> {
    let plain = |content: &str| Reconciled {
        content: content.to_owned(),
        note: None,
    };
    let Some(current) = current.filter(|c| !c.is_empty()) else {
        // A new or empty file has nothing to lose.
        return Ok(plain(new));
    };
    let Some(seen) = seen else {
        return Err(Refusal {
            message: format!(
                "{shown}: the file exists and has not been read in this session, so writing it whole could drop text you have not seen; read it with read_file (the whole file) first, or change it with a targeted edit"
            ),
            shown_current: false,
        });
    };
    if seen == current {
        return Ok(plain(new));
    }
    // Models write `\n`; a CRLF file read earlier must be compared in its own endings,
    // or every line would differ.
    let ours = if seen.contains("\r\n") && !new.contains('\r') {
        new.replace('\n', "\r\n")
    } else {
        new.to_owned()
    };
    match merge3(seen, &ours, current) {
        Ok(m) => {
            let lines: Vec<String> = m
                .theirs_lines
                .iter()
                .map(|&(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}-{b}")
                    }
                })
                .collect();
            let at = if lines.is_empty() {
                "lines removed since your read".to_owned()
            } else if lines.len() == 1 && !lines[0].contains('-') {
                format!("now at line {}", lines[0])
            } else {
                format!("now at lines {}", lines.join(", "))
            };
            Ok(Reconciled {
                content: m.text,
                note: Some(format!(
                    "{shown} had changed since you read it (the user's edits, or another tool); your content was merged with those concurrent changes ({at}), which were kept. Read the file if you need to see the result."
                )),
            })
        }
        Err(conflict) => {
            let whole = current.len() <= SHOW_WHOLE_BYTES;
            let (from, to) = if whole {
                (1, usize::MAX)
            } else {
                (
                    conflict.theirs.0.saturating_sub(CONFLICT_MARGIN).max(1),
                    conflict.theirs.1 + CONFLICT_MARGIN,
                )
            };
            let mut body = String::new();
            for (i, line) in current.lines().enumerate() {
                let n = i + 1;
                if n >= from && n <= to {
                    body.push_str(&format!("{n:>6}\t{line}\n"));
                }
            }
            let what = if whole {
                "Its current content".to_owned()
            } else {
                format!(
                    "Its current lines {from}-{}",
                    to.min(current.lines().count())
                )
            };
            Err(Refusal {
                message: format!(
                    "{shown}: not written: the file changed since you read it and your content conflicts with that change ({conflict}); nothing was changed. {what}:\n{body}Redo the change on this text (a targeted edit is safest)."
                ),
                shown_current: whole,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_empty_unchanged_and_unread_files() {
        let r = reconcile("a.txt", None, None, "x\n").unwrap();
        assert_eq!((r.content.as_str(), r.note), ("x\n", None));
        assert_eq!(
            reconcile("a.txt", None, Some(""), "x\n").unwrap().content,
            "x\n"
        );
        let r = reconcile("a.txt", Some("a\n"), Some("a\n"), "b\n").unwrap();
        assert_eq!((r.content.as_str(), r.note), ("b\n", None));
        let e = reconcile("a.txt", None, Some("a\n"), "b\n").unwrap_err();
        assert!(
            e.message.contains("read it with read_file"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_users_line_survives_and_the_model_is_told() {
        let seen = "fn a() {}\n\nfn b() {}\n";
        let current = "fn a() {}\n\nfn b() {}\n// user note\n";
        let new = "fn a() { 1 }\n\nfn b() {}\n";
        let r = reconcile("x.rs", Some(seen), Some(current), new).unwrap();
        assert_eq!(r.content, "fn a() { 1 }\n\nfn b() {}\n// user note\n");
        let note = r.note.unwrap();
        assert!(note.contains("merged") && note.contains("line 4"), "{note}");
    }

    #[test]
    fn a_conflict_is_refused_with_the_current_text() {
        let e = reconcile("x.txt", Some("a\nb\n"), Some("a\nuser\n"), "a\nmodel\n").unwrap_err();
        assert!(e.message.contains("nothing was changed"), "{}", e.message);
        assert!(e.message.contains("     2\tuser"), "{}", e.message);
        assert!(e.shown_current);
    }

    #[test]
    fn crlf_files_merge_by_content() {
        let r = reconcile(
            "w.txt",
            Some("a\r\nb\r\nc\r\n"),
            Some("a\r\nb\r\nc\r\nd\r\n"),
            "A\nb\nc\n",
        )
        .unwrap();
        assert_eq!(r.content, "A\r\nb\r\nc\r\nd\r\n");
    }

    #[test]
    fn an_edit_over_unseen_changes_remembers_only_the_models_view() {
        use agentls_edit::{TextChange, TextEdit};
        let v = ReadVersions::new();
        let p = Path::new("/ws/a.txt");
        v.remember(p, "a\nb\nc\n".into());
        // The user added `user` since; the model's edit changes `a` on that text.
        let base = "a\nb\nc\nuser\n";
        let plan = Plan {
            changes: vec![FileChange::Edit(TextChange {
                path: p.to_path_buf(),
                version: None,
                base: base.into(),
                edits: vec![TextEdit::new(0..1, "A")],
                new_text: "A\nb\nc\nuser\n".into(),
            })],
            ..Plan::default()
        };
        v.record(&plan);
        assert_eq!(v.get(p).as_deref(), Some("A\nb\nc\n"));
        // So a whole-file write from that view still merges the user's line in.
        let r = reconcile(
            "a.txt",
            v.get(p).as_deref(),
            Some("A\nb\nc\nuser\n"),
            "A2\nb\nc\n",
        )
        .unwrap();
        assert_eq!(r.content, "A2\nb\nc\nuser\n");
    }

    #[test]
    fn landed_plans_are_remembered() {
        let v = ReadVersions::new();
        let p = Path::new("/ws/a.txt");
        let plan = Plan {
            changes: vec![FileChange::Create {
                path: p.to_path_buf(),
                text: "made\n".into(),
            }],
            ..Plan::default()
        };
        v.record(&plan);
        assert_eq!(v.get(p).as_deref(), Some("made\n"));
        v.record(&Plan {
            changes: vec![FileChange::Delete {
                path: p.to_path_buf(),
            }],
            ..Plan::default()
        });
        assert_eq!(v.get(p), None);
    }
}
