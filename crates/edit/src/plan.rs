//! The planner: matches every hunk of every file against the current texts and builds
//! the change set, all or nothing. Nothing is written here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ropey::Rope;

use crate::beneath::{Beneath, normalize};
use crate::diff::{TextEdit, apply_edits, diff};
use crate::error::EditError;
use crate::hunk::{Applied, Ctx, HunkReport, apply_lines, apply_substring};
use crate::lines::{Lines, split_model_lines};
use crate::ops::{FileOp, Hunk};
use crate::rebase::{Conflict, rebase};
use crate::source::{Source, SourceError, SourceProvider};
use crate::syntax::{SyntaxCheck, SyntaxError, new_errors};

/// One file's text change, against the text it was computed on.
#[derive(Debug, Clone)]
pub struct TextChange {
    /// The file (absolute).
    pub path: PathBuf,
    /// The client's version of the base for open documents, `None` for disk text.
    pub version: Option<i32>,
    /// The text the edits apply to.
    pub base: Rope,
    /// Minimal edits, sorted, non-overlapping, char offsets into `base`.
    pub edits: Vec<TextEdit>,
    /// The text after the edits, to check what the editor reports back.
    pub new_text: String,
}

/// One step of a change set, in the order it must be applied.
#[derive(Debug, Clone)]
pub enum FileChange {
    /// Create a file with this text (it does not exist).
    Create {
        /// The file (absolute).
        path: PathBuf,
        /// Its content.
        text: String,
    },
    /// Change a file's text.
    Edit(TextChange),
    /// Rename or move a file (after its `Edit`, if any).
    Rename {
        /// Old path (absolute).
        from: PathBuf,
        /// New path (absolute).
        to: PathBuf,
    },
    /// Delete a file.
    Delete {
        /// The file (absolute).
        path: PathBuf,
    },
}

/// Syntax errors an edit introduced in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSyntaxErrors {
    /// The file (absolute, after any move).
    pub path: PathBuf,
    /// Errors not present before, with lines in the new text.
    pub errors: Vec<SyntaxError>,
}

/// The whole change set of one edit: everything matched, nothing applied yet.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Steps in order.
    pub changes: Vec<FileChange>,
    /// Where each hunk landed and how loosely it matched.
    pub hunks: Vec<HunkReport>,
    /// Syntax errors the edit introduced (the edit still stands; tell the model).
    pub syntax: Vec<NewSyntaxErrors>,
    /// The workspace root the plan was made under, when it exists on disk:
    /// [`write_plan`](crate::write_plan) writes beneath it and refuses a plan without one.
    pub root: Option<PathBuf>,
}

impl TextChange {
    /// This change moved onto `current`, the file as it is now (the user typed since the
    /// snapshot): edits that do not overlap the user's changes are shifted, an
    /// overlapping one is refused. Unchanged text rebases to itself.
    pub fn rebase(&self, current: &Source) -> Result<TextChange, Conflict> {
        if current.version == self.version && current.rope == self.base {
            return Ok(self.clone());
        }
        let edits = rebase(&self.base, &self.edits, &current.rope)?;
        let new_text = apply_edits(&current.rope, &edits).to_string();
        Ok(TextChange {
            path: self.path.clone(),
            version: current.version,
            base: current.rope.clone(),
            edits,
            new_text,
        })
    }
}

impl Plan {
    /// Whether the plan creates, renames or deletes files (LSP resource operations).
    pub fn has_resource_operations(&self) -> bool {
        self.changes
            .iter()
            .any(|c| !matches!(c, FileChange::Edit(_)))
    }

    /// The fallback for clients without `resourceOperations`: the text changes of files
    /// that stay where they are (send these as text edits), and a plan of everything else
    /// (creations, moves with their edits, deletions) to carry out on disk with
    /// [`write_plan`](crate::write_plan).
    pub fn split_resource_operations(self) -> (Vec<TextChange>, Plan) {
        let moved_or_deleted: Vec<PathBuf> = self
            .changes
            .iter()
            .filter_map(|c| match c {
                FileChange::Rename { from, .. } => Some(from.clone()),
                FileChange::Delete { path } => Some(path.clone()),
                _ => None,
            })
            .collect();
        let mut text = Vec::new();
        let mut rest = Plan {
            changes: Vec::new(),
            hunks: self.hunks,
            syntax: self.syntax,
            root: self.root,
        };
        for c in self.changes {
            match c {
                FileChange::Edit(t) if !moved_or_deleted.contains(&t.path) => text.push(t),
                other => rest.changes.push(other),
            }
        }
        (text, rest)
    }
}

/// Plans edits under a workspace root.
pub struct Planner<'a> {
    root: PathBuf,
    /// The root opened on disk; `None` when it does not exist (nothing there to follow).
    beneath: Option<Beneath>,
    /// Why the root could not be opened, when it exists: every plan is refused.
    open_error: Option<String>,
    source: &'a dyn SourceProvider,
    syntax: Option<&'a dyn SyntaxCheck>,
}

/// What the planner knows about one path while planning.
#[derive(Debug)]
struct Entry {
    display: String,
    base: Option<(Rope, Option<i32>, String)>,
    current: Option<String>,
    moved_to: Option<PathBuf>,
    moved_from: Option<PathBuf>,
}

impl<'a> Planner<'a> {
    /// A planner reading through `source`; paths resolve under `root`.
    pub fn new(root: impl Into<PathBuf>, source: &'a dyn SourceProvider) -> Self {
        let root = root.into();
        let root = normalize(&std::path::absolute(&root).unwrap_or(root));
        let (beneath, open_error) = match Beneath::open(&root) {
            Ok(b) => (Some(b), None),
            // A root that does not exist has no links to follow (in-memory sources).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, None),
            Err(e) => (None, Some(format!("{}: {e}", root.display()))),
        };
        Self {
            root,
            beneath,
            open_error,
            source,
            syntax: None,
        }
    }

    /// Reports syntax errors an edit introduces.
    pub fn with_syntax(mut self, syntax: &'a dyn SyntaxCheck) -> Self {
        self.syntax = Some(syntax);
        self
    }

    /// The absolute path for `written`, refusing anything outside the root, lexically
    /// (`..`, absolute paths) and on disk (links leading out, hard-linked files).
    pub fn resolve(&self, written: &str) -> Result<PathBuf, EditError> {
        if written.trim().is_empty() {
            return Err(EditError::Args("empty file path".into()));
        }
        let rel = Beneath::relative(&self.root, written)?;
        if rel.as_os_str().is_empty() {
            return Err(EditError::OutsideRoot {
                path: written.to_owned(),
            });
        }
        if let Some(b) = &self.beneath {
            b.check(&rel, written.trim())?;
        }
        Ok(self.root.join(rel))
    }

    /// Matches every operation and builds the change set; on any error nothing is
    /// planned.
    pub fn plan(&self, ops: &[FileOp]) -> Result<Plan, EditError> {
        if let Some(e) = &self.open_error {
            return Err(EditError::Unreadable {
                path: ".".into(),
                message: format!("cannot open the workspace root: {e}"),
            });
        }
        let mut order: Vec<PathBuf> = Vec::new();
        let mut map: HashMap<PathBuf, Entry> = HashMap::new();
        let mut reports = Vec::new();
        let mut hunk_no = 0usize;
        for op in ops {
            let path = self.resolve(op.path())?;
            self.load(&path, op.path(), &mut order, &mut map)?;
            let display = op.path().to_owned();
            let entry = map
                .get_mut(&path)
                .ok_or_else(|| EditError::Args("internal: lost entry".into()))?;
            match op {
                FileOp::Add { content, .. } => {
                    if entry.current.is_some() {
                        return Err(EditError::Exists { path: display });
                    }
                    entry.current = Some(content.clone());
                }
                FileOp::Delete { .. } => {
                    if entry.current.take().is_none() {
                        return Err(EditError::NotFound { path: display });
                    }
                }
                FileOp::Write { content, .. } => {
                    let content = match &entry.current {
                        Some(old) => with_eol_of(old, content),
                        None => content.clone(),
                    };
                    entry.current = Some(content);
                }
                FileOp::Insert { line, text, .. } => {
                    let Some(cur) = &entry.current else {
                        return Err(EditError::NotFound { path: display });
                    };
                    let lines = Lines::new(cur);
                    if *line > lines.len() {
                        return Err(EditError::Args(format!(
                            "{display}: cannot insert after line {line}: the file has {} lines (use 0 for the top, {} for the end)",
                            lines.len(),
                            lines.len()
                        )));
                    }
                    let new = split_model_lines(text);
                    if new.is_empty() {
                        return Err(EditError::Args(format!(
                            "{display}: the edit changes nothing: the text to insert is empty; give the lines to insert"
                        )));
                    }
                    hunk_no += 1;
                    reports.push(HunkReport {
                        path: display.clone(),
                        hunk: hunk_no,
                        level: None,
                        line: line + 1,
                    });
                    entry.current = Some(lines.replace(*line..*line, &new));
                }
                FileOp::Update { move_to, hunks, .. } => {
                    // Only empty search texts on a missing file: the model creates it
                    // (an empty SEARCH block, an empty old_string).
                    let creates = !hunks.is_empty()
                        && hunks.iter().all(|h| match h {
                            Hunk::Lines(l) => l.old.is_empty() && l.anchor.is_none(),
                            Hunk::Substring(s) => s.old.is_empty(),
                        });
                    let Some(mut text) =
                        entry.current.clone().or_else(|| creates.then(String::new))
                    else {
                        return Err(EditError::NotFound { path: display });
                    };
                    let mut cursor = 0;
                    for h in hunks {
                        hunk_no += 1;
                        let ctx = Ctx {
                            path: &display,
                            hunk: hunk_no,
                        };
                        let Applied {
                            text: t,
                            cursor: c,
                            report,
                        } = match h {
                            Hunk::Lines(l) => apply_lines(&text, l, cursor, ctx)?,
                            Hunk::Substring(s) => apply_substring(&text, s, ctx)?,
                        };
                        text = t;
                        cursor = c;
                        reports.push(report);
                    }
                    match move_to {
                        None => entry.current = Some(text),
                        Some(dest_written) => {
                            let dest = self.resolve(dest_written)?;
                            if dest == path {
                                entry.current = Some(text);
                                continue;
                            }
                            entry.current = None;
                            entry.moved_to = Some(dest.clone());
                            self.load(&dest, dest_written, &mut order, &mut map)?;
                            let d = map
                                .get_mut(&dest)
                                .ok_or_else(|| EditError::Args("internal: lost entry".into()))?;
                            if d.current.is_some() {
                                return Err(EditError::Exists {
                                    path: dest_written.clone(),
                                });
                            }
                            d.current = Some(text);
                            d.moved_from = Some(path.clone());
                        }
                    }
                }
            }
        }
        self.emit(order, map, reports)
    }

    fn load(
        &self,
        path: &Path,
        display: &str,
        order: &mut Vec<PathBuf>,
        map: &mut HashMap<PathBuf, Entry>,
    ) -> Result<(), EditError> {
        if map.contains_key(path) {
            return Ok(());
        }
        let read = match &self.beneath {
            Some(b) => self.source.read_beneath(path, b),
            None => self.source.read(path),
        };
        let base = match read {
            Ok(src) => {
                let text = src.rope.to_string();
                Some((src.rope, src.version, text))
            }
            Err(SourceError::NotFound) => None,
            Err(SourceError::Unreadable(message)) => {
                return Err(EditError::Unreadable {
                    path: display.to_owned(),
                    message,
                });
            }
        };
        let current = base.as_ref().map(|b| b.2.clone());
        order.push(path.to_owned());
        map.insert(
            path.to_owned(),
            Entry {
                display: display.to_owned(),
                base,
                current,
                moved_to: None,
                moved_from: None,
            },
        );
        Ok(())
    }

    fn emit(
        &self,
        order: Vec<PathBuf>,
        map: HashMap<PathBuf, Entry>,
        hunks: Vec<HunkReport>,
    ) -> Result<Plan, EditError> {
        let mut plan = Plan {
            hunks,
            root: self.beneath.as_ref().map(|b| b.root().to_path_buf()),
            ..Plan::default()
        };
        for path in &order {
            let Some(e) = map.get(path) else { continue };
            tracing::debug!(file = %e.display, "planning change");
            // A moved file's final text lives at its destination (possibly edited again).
            let (final_path, final_text) = match &e.moved_to {
                Some(dest) => (dest.clone(), map.get(dest).and_then(|d| d.current.clone())),
                None => (path.clone(), e.current.clone()),
            };
            match (&e.base, final_text, e.moved_from.is_some()) {
                // Handled by the entry it was moved from.
                (None, _, true) => {}
                (Some((rope, version, old)), Some(new), _) => {
                    if *old != new {
                        self.check_syntax(&mut plan, &final_path, Some(old), &new);
                        plan.changes.push(FileChange::Edit(TextChange {
                            path: path.clone(),
                            version: *version,
                            base: rope.clone(),
                            edits: diff(old, &new),
                            new_text: new,
                        }));
                    }
                    if final_path != *path {
                        plan.changes.push(FileChange::Rename {
                            from: path.clone(),
                            to: final_path,
                        });
                    }
                }
                (Some(_), None, _) => plan.changes.push(FileChange::Delete { path: path.clone() }),
                (None, Some(text), false) => {
                    self.check_syntax(&mut plan, path, None, &text);
                    plan.changes.push(FileChange::Create {
                        path: path.clone(),
                        text,
                    });
                }
                (None, None, false) => {}
            }
        }
        Ok(plan)
    }

    fn check_syntax(&self, plan: &mut Plan, path: &Path, before: Option<&str>, after: &str) {
        let Some(checker) = self.syntax else { return };
        let Some(after_errors) = checker.errors(path, after) else {
            return;
        };
        let before_errors = before
            .and_then(|b| checker.errors(path, b))
            .unwrap_or_default();
        let errors = new_errors(&before_errors, &after_errors);
        if !errors.is_empty() {
            plan.syntax.push(NewSyntaxErrors {
                path: path.to_owned(),
                errors,
            });
        }
    }
}

/// Content converted to the line endings of `old` when `old` uses `\r\n`.
fn with_eol_of(old: &str, content: &str) -> String {
    if Lines::new(old).eol() == "\r\n" && !content.contains("\r\n") {
        content.replace('\n', "\r\n")
    } else {
        content.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{LineHunk, SubstringHunk};
    use crate::source::Source;

    fn fs(
        files: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&Path) -> Result<Source, SourceError> {
        move |p: &Path| {
            files
                .iter()
                .find(|(name, _)| Path::new("/ws").join(name) == p)
                .map(|(_, text)| Source {
                    rope: Rope::from_str(text),
                    version: Some(7),
                })
                .ok_or(SourceError::NotFound)
        }
    }

    fn sub(old: &str, new: &str) -> Hunk {
        Hunk::Substring(SubstringHunk {
            old: old.into(),
            new: new.into(),
            ..Default::default()
        })
    }

    #[test]
    fn refuses_paths_outside_root() {
        let src = fs(&[]);
        let p = Planner::new("/ws", &src);
        assert!(matches!(
            p.resolve("../etc/passwd"),
            Err(EditError::OutsideRoot { .. })
        ));
        assert!(matches!(
            p.resolve("/etc/passwd"),
            Err(EditError::OutsideRoot { .. })
        ));
        assert_eq!(p.resolve("a/../b.rs").unwrap(), PathBuf::from("/ws/b.rs"));
    }

    #[test]
    fn all_or_nothing() {
        let src = fs(&[("a.rs", "one\n"), ("b.rs", "two\n")]);
        let ops = vec![
            FileOp::Update {
                path: "a.rs".into(),
                move_to: None,
                hunks: vec![sub("one", "ONE")],
            },
            FileOp::Update {
                path: "b.rs".into(),
                move_to: None,
                hunks: vec![sub("three", "THREE")],
            },
        ];
        let err = Planner::new("/ws", &src).plan(&ops).unwrap_err();
        assert!(matches!(err, EditError::NoMatch { hunk: 2, .. }), "{err}");
    }

    #[test]
    fn move_with_edit_is_edit_then_rename() {
        let src = fs(&[("a.rs", "one\n")]);
        let ops = vec![FileOp::Update {
            path: "a.rs".into(),
            move_to: Some("b/c.rs".into()),
            hunks: vec![Hunk::Lines(LineHunk {
                old: vec!["one".into()],
                new: vec!["uno".into()],
                ..LineHunk::default()
            })],
        }];
        let plan = Planner::new("/ws", &src).plan(&ops).unwrap();
        assert_eq!(plan.changes.len(), 2);
        match &plan.changes[0] {
            FileChange::Edit(t) => {
                assert_eq!(t.version, Some(7));
                assert_eq!(t.new_text, "uno\n");
                assert_eq!(t.edits, vec![TextEdit::new(0..3, "uno")]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&plan.changes[1], FileChange::Rename { to, .. } if to == Path::new("/ws/b/c.rs"))
        );
    }

    #[test]
    fn change_rebases_over_user_typing() {
        let src = fs(&[("a.rs", "one\ntwo\n")]);
        let ops = vec![FileOp::Update {
            path: "a.rs".into(),
            move_to: None,
            hunks: vec![sub("two", "TWO")],
        }];
        let plan = Planner::new("/ws", &src).plan(&ops).unwrap();
        let FileChange::Edit(change) = &plan.changes[0] else {
            panic!()
        };
        let typed = Source {
            rope: Rope::from_str("zero\none\ntwo\n"),
            version: Some(8),
        };
        let moved = change.rebase(&typed).unwrap();
        assert_eq!(moved.version, Some(8));
        assert_eq!(moved.new_text, "zero\none\nTWO\n");
        let clash = Source {
            rope: Rope::from_str("one\ntwX\n"),
            version: Some(9),
        };
        assert!(change.rebase(&clash).is_err());
    }

    #[test]
    fn split_for_clients_without_resource_operations() {
        let src = fs(&[("a.rs", "a\n"), ("b.rs", "b\n")]);
        let ops = vec![
            FileOp::Write {
                path: "a.rs".into(),
                content: "A\n".into(),
            },
            FileOp::Update {
                path: "b.rs".into(),
                move_to: Some("c.rs".into()),
                hunks: vec![sub("b", "B")],
            },
            FileOp::Add {
                path: "d.rs".into(),
                content: "d\n".into(),
            },
        ];
        let plan = Planner::new("/ws", &src).plan(&ops).unwrap();
        assert!(plan.has_resource_operations());
        let (text, rest) = plan.split_resource_operations();
        assert_eq!(text.len(), 1);
        assert_eq!(text[0].path, PathBuf::from("/ws/a.rs"));
        assert_eq!(rest.changes.len(), 3, "{:?}", rest.changes);
    }

    struct Braces;
    /// A fake checker for tests: every unmatched `}` or unclosed `{` is an error.
    impl SyntaxCheck for Braces {
        fn errors(&self, path: &Path, text: &str) -> Option<Vec<SyntaxError>> {
            if path.extension()? != "rs" {
                return None;
            }
            let mut open = Vec::new();
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                for c in line.chars() {
                    match c {
                        '{' => open.push(i + 1),
                        '}' if open.pop().is_none() => out.push(SyntaxError {
                            line: i + 1,
                            kind: "unmatched }".into(),
                        }),
                        _ => {}
                    }
                }
            }
            out.extend(open.into_iter().map(|line| SyntaxError {
                line,
                kind: "unclosed {".into(),
            }));
            Some(out)
        }
    }

    #[test]
    fn reports_only_new_syntax_errors() {
        // One unmatched `}` before (line 1), and the edit opens a block it never closes.
        let src = fs(&[("a.rs", "}\nfn a() {\n}\n")]);
        let ops = vec![FileOp::Update {
            path: "a.rs".into(),
            move_to: None,
            hunks: vec![sub("fn a() {", "fn a() {\n    if x {")],
        }];
        let plan = Planner::new("/ws", &src)
            .with_syntax(&Braces)
            .plan(&ops)
            .unwrap();
        assert_eq!(
            plan.syntax,
            vec![NewSyntaxErrors {
                path: "/ws/a.rs".into(),
                errors: vec![SyntaxError {
                    line: 2,
                    kind: "unclosed {".into()
                }]
            }]
        );
        assert_eq!(plan.changes.len(), 1, "the edit still stands");
    }
}
