//! Workspace grep: ripgrep's crates (`ignore` parallel walker, `grep-regex`,
//! `grep-searcher`) over the disk, with every open buffer's live text searched in place of
//! its file. `agentls bench index` (crates/eval's `bench_index`) measures the index and grep
//! against ctags and ripgrep.
//!
//! Entry point: [`grep`] with [`GrepOptions`] (regex or literal, case mode, word,
//! include/exclude globs, context, max results) and an [`Overlay`] of open buffers;
//! it returns [`GrepResult`] with [`GrepMatch`]es (path, 0-based line, byte column,
//! the line and its context), sorted by path and line.
//!
//! Invariants:
//! - Synchronous and tokio-free; knows nothing of LSP.
//! - Live buffers win: a path in the overlay is never read from disk; buffers for files
//!   not yet on disk are searched too when under the root and not excluded by globs.
//! - Binary files (NUL byte) are skipped, like ripgrep.
//! - With `max_results`, which matches are kept depends on thread timing; the result
//!   then says `truncated`.
//!
//! ```
//! use agentls_search::{grep, GrepOptions, CaseMode, Overlay};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.txt"), "alpha\nBeta\n").unwrap();
//! let mut overlay = Overlay::new();
//! overlay.insert_text(dir.path().join("b.txt"), "unsaved beta\n");
//! let mut opts = GrepOptions::new("beta");
//! opts.case = CaseMode::Insensitive;
//! let found = grep(dir.path(), &opts, &overlay).unwrap();
//! assert_eq!(found.matches.len(), 2);
//! assert_eq!(found.matches[1].column, 8);
//! assert!(found.matches[1].from_buffer);
//! ```

mod grep;

pub use agentls_index::{LiveText, Overlay};
pub use grep::{CaseMode, ContextLine, GrepError, GrepMatch, GrepOptions, GrepResult, grep};
