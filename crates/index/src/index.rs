//! The workspace symbol index: files, interned names, postings from names to files, and
//! the syntax trees of live buffers for incremental reparsing.
//!
//! This file holds the types and the index's shape; the work is split by what it does:
//! `crawl.rs` (the cold crawl), `update.rs` (live buffers, disk refreshes, closes and
//! removals), `reparse.rs` (a live buffer parsed outside the index's lock, swapped in
//! under it), `refresh.rs` (the same for a file re-read from disk), `names.rs` (the interned names, compacted once most are unused),
//! `query.rs` (everything that reads: symbols, references, outlines, revisions, sizes).

mod crawl;
mod locks;
mod names;
mod query;
mod refresh;
mod reparse;
mod update;

pub use refresh::{DiskRead, PendingRefresh, apply_events, close_path, refresh_path};
pub use reparse::{Commit, ParsedBuffer, PendingParse, update_buffer};
pub use update::Replaced;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lasso::{Rodeo, Spur};
use rustc_hash::{FxBuildHasher, FxHashMap};
use tree_sitter::Tree;

use crate::Language;
use crate::plain::PlainFile;
use crate::symbol::{Point, ReferenceKind, Span, SymbolKind};
use crate::tags::FileTags;

/// How the crawl walks and what it accepts.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    /// Files larger than this are skipped (generated code, bundles).
    pub max_file_bytes: u64,
    /// Worker threads for the crawl; 0 means one per core.
    pub threads: usize,
    /// Whether to enter hidden files and directories.
    pub hidden: bool,
    /// Whether to honour `.gitignore`, `.ignore` and git's global excludes.
    pub respect_ignore_files: bool,
    /// Whether the crawl and file events leave out generated files: those that say so in
    /// their first lines (see [`crate::looks_generated`]) and those larger than
    /// `generated_bytes`. They stay searchable by grep; an open buffer is always indexed.
    /// The server's `index.skip_generated` setting; on by default.
    pub skip_generated: bool,
    /// With `skip_generated`, files larger than this count as generated (1 MiB).
    pub generated_bytes: u64,
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            max_file_bytes: 2 * 1024 * 1024,
            threads: 0,
            hidden: false,
            respect_ignore_files: true,
            skip_generated: true,
            generated_bytes: 1024 * 1024,
        }
    }
}

/// Counts describing a finished crawl.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CrawlStats {
    /// Files indexed.
    pub files: usize,
    /// Lines in those files.
    pub lines: u64,
    /// Files of a known language that were skipped (too large, binary, unreadable).
    pub skipped: usize,
    /// Files left out as generated ([`IndexOptions::skip_generated`]).
    pub generated: usize,
    /// Text files without a grammar followed for semantic search
    /// ([`crate::plain::is_plain`]); not in `files`.
    pub plain: usize,
}

/// Sizes of the index, with an estimate of the memory it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IndexStats {
    /// Files indexed.
    pub files: usize,
    /// Lines in indexed files.
    pub lines: u64,
    /// Definitions.
    pub definitions: usize,
    /// References.
    pub references: usize,
    /// Distinct interned names.
    pub names: usize,
    /// Estimated heap bytes of symbols, names and postings (live syntax trees excluded).
    pub memory_bytes: usize,
    /// `memory_bytes / lines`.
    pub bytes_per_line: f64,
}

pub(crate) type FileId = u32;

#[derive(Debug, Clone, Copy)]
pub(crate) struct DefRec {
    pub name: Spur,
    pub parent: u32,
    pub kind: SymbolKind,
    pub span: Span,
    pub name_start: Point,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct RefRec {
    pub name: Spur,
    pub kind: ReferenceKind,
    pub start: Point,
}

#[derive(Debug)]
pub(crate) struct FileEntry {
    pub path: Arc<Path>,
    pub lang: Language,
    pub lines: u32,
    pub defs: Box<[DefRec]>,
    pub refs: Box<[RefRec]>,
    /// The index's revision when this file was last (re)indexed.
    pub rev: u64,
}

/// An open buffer's syntax tree, text and tags. Shared (`Arc`, and tree-sitter's trees
/// are reference counted), so that a parse outside the index's lock takes them as its
/// base in O(1) under a read lock.
struct LiveTree {
    tree: Tree,
    text: Arc<str>,
    /// The tags of `text`, kept so an edit re-extracts only the region it changed.
    tags: Arc<FileTags>,
    /// The caller's version of `text` (the document store's revision), when it gave
    /// one: a parse of an older version is never swapped in over it.
    version: Option<u64>,
}

/// One parsed file on its way from a crawl worker to the index.
struct Parsed {
    path: PathBuf,
    lang: Language,
    lines: u32,
    tags: FileTags,
}

/// The last revision given out (see [`Index::revision`]).
static REVISION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The symbol index of a workspace. Not internally synchronised: the server keeps it
/// behind a lock (queries take `&self`, updates `&mut self`).
pub struct Index {
    options: IndexOptions,
    pub(crate) names: Rodeo<Spur, FxBuildHasher>,
    pub(crate) files: Vec<Option<FileEntry>>,
    free: Vec<FileId>,
    ids: FxHashMap<Arc<Path>, FileId>,
    pub(crate) def_files: FxHashMap<Spur, Vec<FileId>>,
    pub(crate) ref_files: FxHashMap<Spur, Vec<FileId>>,
    live: FxHashMap<FileId, LiveTree>,
    lines: u64,
    pub(crate) root: Option<PathBuf>,
    /// The revision of the file (re)indexed last: followers (semantic search) ask what
    /// changed since the revision they saw.
    revision: u64,
    /// Text files without a grammar ([`crate::plain`]): followed, not parsed.
    plain: FxHashMap<Arc<Path>, PlainFile>,
    /// Counts the compactions of `names` (`names.rs`): names resolved to keys before
    /// one are resolved again.
    names_epoch: u64,
}

impl Default for Index {
    fn default() -> Self {
        Self::new(IndexOptions::default())
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("files", &self.ids.len())
            .field("names", &self.names.len())
            .field("live", &self.live.len())
            .finish()
    }
}

impl Index {
    /// An empty index.
    pub fn new(options: IndexOptions) -> Self {
        Self {
            options,
            names: Rodeo::with_hasher(FxBuildHasher),
            files: Vec::new(),
            free: Vec::new(),
            ids: FxHashMap::default(),
            def_files: FxHashMap::default(),
            ref_files: FxHashMap::default(),
            live: FxHashMap::default(),
            lines: 0,
            root: None,
            revision: 0,
            plain: FxHashMap::default(),
            names_epoch: 0,
        }
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = (FileId, &FileEntry)> {
        self.files
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((u32::try_from(i).ok()?, f.as_ref()?)))
    }

    pub(crate) fn entry(&self, id: FileId) -> Option<&FileEntry> {
        self.files.get(id as usize)?.as_ref()
    }

    pub(crate) fn file_id(&self, path: &Path) -> Option<FileId> {
        self.ids.get(path).copied()
    }
}

fn count_lines(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    u32::try_from(newlines + usize::from(!text.ends_with('\n'))).unwrap_or(u32::MAX)
}

fn name_span(start: Point, name: &str) -> Span {
    Span {
        start,
        end: Point {
            line: start.line,
            column: start
                .column
                .saturating_add(u32::try_from(name.len()).unwrap_or(u32::MAX)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_lines_counts_a_last_unterminated_line() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
    }
}
