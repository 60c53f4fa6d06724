//! The symbol index: tree-sitter parsing per language, definitions and references from
//! tags queries, outlines, fuzzy workspace symbols and a ranked repo map, kept current
//! from live buffers (incremental reparse), file events and a file watcher.
//!
//! Main types: [`Language`] (detection by extension or LSP language id, parsers, and
//! [`syntax_errors`] for the edit engine's syntax check); [`Index`] (crawl a root, update
//! and remove files, query); [`Overlay`] (open buffers laid over the disk);
//! [`Index::repo_map`]; [`FileWatcher`] and [`Index::apply_event`] for file events.
//!
//! The cold crawl ([`Index::crawl`]) walks first, then parses largest file first on one
//! worker per core (so no big file is left for the end, alone on one core), and leaves
//! out generated files ([`IndexOptions::skip_generated`], on by default: a marker from
//! [`generated::GENERATED_MARKERS`] in the first lines, or more than 1 MiB); grep still
//! searches them. tree-sitter allocates through mimalloc (set once per process, before
//! the first parser; see `alloc.rs`).
//!
//! Positions are [`Point`]s: 0-based line and 0-based column in UTF-8 *bytes* (the unit
//! of tree-sitter). The server converts them to the negotiated LSP encoding with the
//! line's text (see `agentls-text`).
//!
//! Invariants:
//! - Synchronous and tokio-free; knows nothing of LSP (no `lsp-types`, no serde).
//! - Names are interned once ([`lasso`]); each file keeps compact records and the index
//!   maps each name to the files that define or use it, so an update touches one file's
//!   records and only the postings of names that changed.
//! - Incremental results equal fresh ones: after any edit, a live buffer's symbols,
//!   references and outline are exactly those of a fresh parse (tested with random
//!   edits in every language).
//! - A path with a live buffer (given through [`Index::update_file`] or an [`Overlay`]) is
//!   indexed from that text, never from disk, until [`Index::close_file`]; only live
//!   buffers keep their syntax tree (for incremental reparsing).
//! - Readers never wait on a parse: [`update_buffer`] parses an open buffer with no
//!   lock held (its old tree, text and tags shared under a read lock) and holds the
//!   write lock only to swap the result in; a parse of an older version, or of a buffer
//!   closed meanwhile, is never swapped in ([`Commit::Stale`]). Disk refreshes (file
//!   events, closes) do the same ([`refresh_path`], [`close_path`], [`apply_events`]):
//!   read and parsed with no lock, a buffer opened meanwhile wins, a file written again
//!   meanwhile is read again at the swap.
//! - Nothing of a closed buffer stays: its tree and text go, the file is indexed from
//!   disk again or forgotten, and once more names are unused than used the interner is
//!   rebuilt with the used ones (`index/names.rs`).
//! - References are matched by name, not resolved: best effort, documented as such.
//! - The tags query is the specification: where a language has a hand-written walk for
//!   the cold crawl (Rust in `tags/rust_walk.rs`; C and C++ by rule tables in
//!   `tags/table_walk.rs`), it yields exactly the query's records (tested against it on
//!   samples and broken variants; an ignored test compares them file by file on any
//!   tree), and edited regions always go through the query.
//! - No tree-sitter object is created before the allocator switch (every parser, query
//!   and query cursor is made through this crate, after it); no other crate uses
//!   tree-sitter directly.
//! - Broken input never fails: a file with syntax errors yields the symbols tree-sitter
//!   recovered.
//!
//! ```
//! use std::path::Path;
//! use agentls_index::{Index, SymbolKind};
//!
//! let mut index = Index::default();
//! index.update_file(Path::new("/ws/a.py"), "class A:\n    def run(self):\n        helper()\n");
//! index.update_file(Path::new("/ws/b.py"), "def helper():\n    pass\n");
//! let defs = index.definitions("helper");
//! assert_eq!(defs[0].path.as_ref(), Path::new("/ws/b.py"));
//! assert_eq!(index.references("helper")[0].span.start.line, 2);
//! let outline = index.outline(Path::new("/ws/a.py")).unwrap();
//! assert_eq!(outline[0].children[0].kind, SymbolKind::Method);
//! ```

mod alloc;
pub use alloc::give_memory_back;
pub mod generated;
mod index;
pub mod language;
pub mod overlay;
pub mod plain;
mod repomap;
pub mod stub;
pub mod symbol;
mod tags;
pub mod visibility;
pub mod watch;

pub use generated::looks_generated;
pub use index::{
    Commit, CrawlStats, DiskRead, Index, IndexOptions, IndexStats, ParsedBuffer, PendingParse,
    PendingRefresh, Replaced, apply_events, close_path, refresh_path, update_buffer,
};
pub use language::{Language, SyntaxError, SyntaxErrorKind, string_literals, syntax_errors};
pub use overlay::{LiveText, Overlay};
pub use symbol::{OutlineItem, Point, Reference, ReferenceKind, Span, Symbol, SymbolKind};
pub use tags::check_query;
pub use visibility::walk_would_visit;
pub use watch::{FileEvent, FileWatcher};
