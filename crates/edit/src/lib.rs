//! The edit engine: every edit a model writes lands exactly where it was meant, as
//! minimal versioned changes, or is refused with a reason the model can act on.
//!
//! An edit goes through three steps, as in codex's `apply-patch`:
//! 1. **parse** ([`parse`], [`Format`]): the model's text becomes [`FileOp`]s. No I/O.
//! 2. **plan** ([`Planner::plan`]): every hunk of every file is matched against the
//!    current text read through a [`SourceProvider`] (live buffers in the server, the
//!    disk in headless runs) with layered matching ([`MatchLevel`]: exact first, then
//!    steadily looser, each level checking uniqueness). The result is a [`Plan`]: per
//!    file a [`TextChange`] carrying the base version and minimal [`TextEdit`]s (char
//!    ranges on the base rope, from a line-then-character diff), plus create, rename and
//!    delete steps. One failing hunk fails the whole plan.
//! 3. **apply**: only the caller applies. The server turns a plan into a `WorkspaceEdit`
//!    (positions via `agentls_text::position::to_position`); headless runs call
//!    [`write_plan`] or the one-call helpers such as [`apply_patch_to_dir`].
//!
//! [`rebase`] moves a plan's edits over what the user typed since the snapshot, or
//! refuses with a [`Conflict`] naming the lines. [`merge3`] merges a whole-file rewrite
//! made from text read earlier with what changed since, by lines, or refuses. [`SyntaxCheck`] lets the language crate
//! report syntax errors an edit introduced without this crate knowing any grammar.
//!
//! **Invariants.**
//! - Nothing is written during parsing or planning; a refused edit changes nothing.
//! - A plan is all or nothing: every file is matched before any change is emitted.
//! - A match is unique at the level that found it, or ties are broken by a line hint;
//!   otherwise the edit is refused with every candidate line.
//! - Edits are sorted, non-overlapping, and applying them to the base gives the intended
//!   text exactly (property-tested).
//! - No LSP types, no async, no serde on the core types (JSON is parsed into private
//!   argument structs only); input never panics.
//!
//! ```
//! use agentls_edit::{Format, Planner, Source, SourceError, FileChange, apply_edits, parse};
//! use std::path::Path;
//!
//! let files = |p: &Path| {
//!     if p == Path::new("/ws/src/lib.rs") {
//!         Ok(Source { rope: "fn a() {\n    old();\n}\n".into(), version: Some(3) })
//!     } else {
//!         Err(SourceError::NotFound)
//!     }
//! };
//! let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn a() {\n-    old();\n+    new();\n*** End Patch";
//! let ops = parse(Format::ApplyPatch, patch).unwrap();
//! let plan = Planner::new("/ws", &files).plan(&ops).unwrap();
//! let FileChange::Edit(change) = &plan.changes[0] else { unreachable!() };
//! assert_eq!(change.version, Some(3));
//! assert_eq!(change.edits.len(), 1); // just "old" -> "new"
//! assert_eq!(apply_edits(&change.base, &change.edits).to_string(), "fn a() {\n    new();\n}\n");
//! ```

mod beneath;
mod diff;
mod disk;
mod error;
mod hunk;
mod lines;
mod matcher;
mod merge;
mod normalize;
mod ops;
pub mod parse;
mod plan;
mod rebase;
mod report;
mod source;
mod syntax;
pub mod track;

pub use beneath::{Beneath, Found};
pub use diff::{TextEdit, apply_edits, diff, invert};
pub use disk::{
    Format, Summary, apply_patch_to_dir, apply_search_replace_to_dir, apply_str_replace_to_dir,
    apply_to_dir, parse, write_plan,
};
pub use error::EditError;
pub use hunk::HunkReport;
pub use matcher::MatchLevel;
pub use merge::{MergeConflict, Merged, merge3};
pub use ops::{FileOp, Hunk, LineHunk, SubstringHunk};
pub use plan::{FileChange, NewSyntaxErrors, Plan, Planner, TextChange};
pub use rebase::{Conflict, rebase};
pub use source::{DiskSource, Source, SourceError, SourceProvider, StoreSource};
pub use syntax::{SyntaxCheck, SyntaxError, new_errors};

/// Finds `search` (lines) in `text` with the layered matcher, as the planner does; for
/// benchmarks and tools that only want to locate. Returns the one-based first line and
/// the level that matched.
pub fn locate(
    text: &str,
    search: &str,
    line_hint: Option<usize>,
) -> Result<(usize, MatchLevel), EditError> {
    let file = lines::Lines::new(text);
    let contents = file.contents();
    let search = lines::split_model_lines(search);
    let q = matcher::Query {
        search: &search,
        region: 0..contents.len(),
        line_hint,
        at_eof: false,
        first_wins: false,
    };
    match matcher::find(&contents, &q) {
        matcher::Outcome::Found(f) => Ok((f.range.start + 1, f.level)),
        matcher::Outcome::Ambiguous { starts, .. } => Err(EditError::Ambiguous {
            path: String::new(),
            hunk: 1,
            lines: starts.iter().map(|s| s + 1).collect(),
            detail: "several matches".into(),
        }),
        matcher::Outcome::NotFound => Err(EditError::NoMatch {
            path: String::new(),
            hunk: 1,
            detail: report::no_match(&contents, &search, "the text"),
        }),
    }
}
