//! Headless runs and the CLI: parse, plan against the disk, then write every new
//! content to a temporary file before renaming any into place, so a refused edit leaves
//! the tree untouched.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::beneath::{Beneath, Found};
use crate::error::EditError;
use crate::hunk::HunkReport;
use crate::matcher::MatchLevel;
use crate::ops::FileOp;
use crate::parse::{json, patch, search_replace};
use crate::plan::{FileChange, NewSyntaxErrors, Plan, Planner};
use crate::source::DiskSource;
use crate::syntax::SyntaxCheck;

/// The edit formats a model can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `*** Begin Patch` ... `*** End Patch`.
    ApplyPatch,
    /// `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks.
    SearchReplace,
    /// JSON `{"path", "old_string", "new_string", "replace_all"?}`.
    StrReplace,
    /// JSON `{"path", "content"}`.
    WholeFile,
    /// JSON `{"path", "line", "text"}`.
    Insert,
}

impl FromStr for Format {
    type Err = EditError;

    fn from_str(s: &str) -> Result<Self, EditError> {
        match s.trim() {
            "apply-patch" | "apply_patch" | "patch" => Ok(Format::ApplyPatch),
            "search-replace" | "search_replace" => Ok(Format::SearchReplace),
            "str-replace" | "str_replace" => Ok(Format::StrReplace),
            "whole-file" | "whole_file" | "write" => Ok(Format::WholeFile),
            "insert" => Ok(Format::Insert),
            other => Err(EditError::Args(format!(
                "unknown edit format `{other}`; expected apply-patch, search-replace, str-replace, whole-file or insert"
            ))),
        }
    }
}

/// Parses `text` written in `format` (no I/O).
pub fn parse(format: Format, text: &str) -> Result<Vec<FileOp>, EditError> {
    match format {
        Format::ApplyPatch => patch::parse_patch(text),
        Format::SearchReplace => search_replace::parse_search_replace(text),
        Format::StrReplace => json::parse_str_replace(text),
        Format::WholeFile => json::parse_whole_file(text),
        Format::Insert => json::parse_insert(text),
    }
}

/// What an edit did on disk, with paths relative to the root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// New files.
    pub created: Vec<PathBuf>,
    /// Changed files.
    pub modified: Vec<PathBuf>,
    /// Removed files.
    pub deleted: Vec<PathBuf>,
    /// Moved files (old, new).
    pub renamed: Vec<(PathBuf, PathBuf)>,
    /// Where each hunk landed and how loosely it matched.
    pub hunks: Vec<HunkReport>,
    /// Syntax errors the edit introduced.
    pub syntax: Vec<NewSyntaxErrors>,
}

impl fmt::Display for Summary {
    /// `A`/`M`/`D`/`R` lines as git prints them, then notes on loose matches and new
    /// syntax errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.created {
            writeln!(f, "A {}", p.display())?;
        }
        for p in &self.modified {
            writeln!(f, "M {}", p.display())?;
        }
        for (a, b) in &self.renamed {
            writeln!(f, "R {} -> {}", a.display(), b.display())?;
        }
        for p in &self.deleted {
            writeln!(f, "D {}", p.display())?;
        }
        for h in &self.hunks {
            if let Some(level) = h.level.filter(|l| *l != MatchLevel::Exact) {
                writeln!(
                    f,
                    "note: {} hunk {} matched {} at line {}",
                    h.path,
                    h.hunk,
                    level.describe(),
                    h.line
                )?;
            }
        }
        for s in &self.syntax {
            for e in &s.errors {
                writeln!(
                    f,
                    "warning: {}:{}: new syntax error: {}",
                    s.path.display(),
                    e.line,
                    e.kind
                )?;
            }
        }
        Ok(())
    }
}

/// Applies an `apply_patch` patch to files under `root`; on error nothing is changed.
pub fn apply_patch_to_dir(root: &Path, patch: &str) -> Result<Summary, EditError> {
    apply_to_dir(root, Format::ApplyPatch, patch, None)
}

/// Applies search/replace blocks to files under `root`; on error nothing is changed.
pub fn apply_search_replace_to_dir(root: &Path, text: &str) -> Result<Summary, EditError> {
    apply_to_dir(root, Format::SearchReplace, text, None)
}

/// Applies `str_replace` JSON arguments to files under `root`; on error nothing is changed.
pub fn apply_str_replace_to_dir(root: &Path, json: &str) -> Result<Summary, EditError> {
    apply_to_dir(root, Format::StrReplace, json, None)
}

/// Parses `text` in `format`, plans it against the files under `root` and writes the
/// result. On any error, nothing under `root` is changed.
pub fn apply_to_dir(
    root: &Path,
    format: Format,
    text: &str,
    syntax: Option<&dyn SyntaxCheck>,
) -> Result<Summary, EditError> {
    let root = std::path::absolute(root).map_err(|source| EditError::Io {
        path: root.to_owned(),
        source,
    })?;
    let ops = parse(format, text)?;
    let source = DiskSource::default();
    let mut planner = Planner::new(&root, &source);
    if let Some(s) = syntax {
        planner = planner.with_syntax(s);
    }
    let plan = planner.plan(&ops)?;
    write_plan(&plan)?;
    Ok(summarize(&root, plan))
}

fn summarize(root: &Path, plan: Plan) -> Summary {
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_path_buf();
    let mut s = Summary {
        hunks: plan.hunks,
        syntax: plan.syntax,
        ..Summary::default()
    };
    for c in &plan.changes {
        match c {
            FileChange::Create { path, .. } => s.created.push(rel(path)),
            FileChange::Edit(t) => s.modified.push(rel(&t.path)),
            FileChange::Rename { from, to } => {
                s.modified.retain(|p| *p != rel(from));
                s.renamed.push((rel(from), rel(to)));
            }
            FileChange::Delete { path } => s.deleted.push(rel(path)),
        }
    }
    s
}

/// What ends up at one path.
enum Staged {
    Write(String),
    CopyFrom(PathBuf),
    Remove,
}

/// Writes a plan to disk beneath its root: every new content goes to a temporary file
/// beside its target first (created new, so no link is followed and no hard link written
/// through); only when all are written are they renamed into place and removed files
/// deleted. A target reached through a link inside the root is written where the link
/// leads; one that leads out is refused. A failure while staging removes the
/// temporaries and changes nothing.
pub fn write_plan(plan: &Plan) -> Result<(), EditError> {
    let root = plan.root.as_deref().ok_or_else(|| EditError::Unreadable {
        path: ".".into(),
        message: "the plan has no workspace root to write beneath; nothing was changed".into(),
    })?;
    let beneath = Beneath::open(root).map_err(|source| EditError::Io {
        path: root.to_owned(),
        source,
    })?;
    let mut staged: BTreeMap<PathBuf, Staged> = BTreeMap::new();
    for c in &plan.changes {
        match c {
            FileChange::Create { path, text } => {
                staged.insert(path.clone(), Staged::Write(text.clone()));
            }
            FileChange::Edit(t) => {
                staged.insert(t.path.clone(), Staged::Write(t.new_text.clone()));
            }
            FileChange::Rename { from, to } => {
                let v = staged
                    .remove(from)
                    .unwrap_or_else(|| Staged::CopyFrom(from.clone()));
                staged.insert(to.clone(), v);
                staged.insert(from.clone(), Staged::Remove);
            }
            FileChange::Delete { path } => {
                staged.insert(path.clone(), Staged::Remove);
            }
        }
    }
    let mut temps: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut made_dirs: Vec<PathBuf> = Vec::new();
    let staging = stage(&beneath, &staged, &mut temps, &mut made_dirs);
    if let Err(e) = staging {
        for (tmp, _) in &temps {
            let _ = beneath.remove_file(tmp);
        }
        for d in made_dirs.iter().rev() {
            beneath.remove_dir_quietly(d);
        }
        return Err(e);
    }
    for (tmp, target) in &temps {
        beneath.rename(tmp, target)?;
    }
    for (path, s) in &staged {
        if matches!(s, Staged::Remove) {
            beneath.remove_file(path)?;
        }
    }
    Ok(())
}

/// Where a write to `path` lands: `path` itself, or where a link inside the root leads.
fn write_target(beneath: &Beneath, path: &Path) -> Result<PathBuf, EditError> {
    let shown = path.display().to_string();
    match beneath.check(path, &shown)? {
        Found::Missing => Ok(path.to_owned()),
        Found::File => beneath.canonical(path, &shown),
        Found::Dir | Found::Other => Err(EditError::Unreadable {
            path: shown,
            message: "is not a regular file".into(),
        }),
    }
}

fn stage(
    beneath: &Beneath,
    staged: &BTreeMap<PathBuf, Staged>,
    temps: &mut Vec<(PathBuf, PathBuf)>,
    made_dirs: &mut Vec<PathBuf>,
) -> Result<(), EditError> {
    for (n, (path, s)) in staged.iter().enumerate() {
        let bytes = match s {
            Staged::Write(t) => t.clone().into_bytes(),
            Staged::CopyFrom(from) => beneath.read_bytes(from)?,
            Staged::Remove => {
                // Checked before anything is renamed: a removal that would be refused
                // must not leave the rest half done.
                beneath.check(path, &path.display().to_string())?;
                continue;
            }
        };
        let dir = path
            .parent()
            .ok_or_else(|| EditError::Args(format!("{}: no parent directory", path.display())))?;
        let missing = beneath.missing_dirs(dir)?;
        beneath.create_dir_all(dir)?;
        made_dirs.extend(missing.into_iter().map(|d| beneath.root().join(d)));
        let target = write_target(beneath, path)?;
        let dir = target
            .parent()
            .ok_or_else(|| EditError::Args(format!("{}: no parent directory", path.display())))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.agentls-{}-{n}.tmp", std::process::id()));
        beneath.write_new(&tmp, &bytes, Some(&target))?;
        temps.push((tmp, target));
    }
    Ok(())
}
