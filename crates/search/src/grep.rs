//! Grep over a workspace: ripgrep's walker, matcher and searcher, with open buffers
//! searched in place of their files.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agentls_index::{Overlay, walk_would_visit};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::{WalkBuilder, WalkState};

/// How letter case is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CaseMode {
    /// Exact case.
    #[default]
    Sensitive,
    /// Any case.
    Insensitive,
    /// Insensitive unless the pattern has an uppercase letter (ripgrep's `-S`).
    Smart,
}

/// What to search for and where.
#[derive(Debug, Clone)]
pub struct GrepOptions {
    /// A regular expression (Rust `regex` syntax), or a literal string with `literal`.
    pub pattern: String,
    /// Treat `pattern` as a literal string.
    pub literal: bool,
    /// Case comparison.
    pub case: CaseMode,
    /// Match whole words only.
    pub word: bool,
    /// Only files matching one of these globs (gitignore syntax, relative to the root).
    pub include: Vec<String>,
    /// Skip files matching any of these globs.
    pub exclude: Vec<String>,
    /// Lines of context before each match.
    pub before_context: usize,
    /// Lines of context after each match.
    pub after_context: usize,
    /// Stop after this many matching lines (the result says it was truncated).
    pub max_results: Option<usize>,
    /// Search hidden files and directories.
    pub hidden: bool,
    /// Honour `.gitignore`, `.ignore` and git's excludes.
    pub respect_ignore_files: bool,
    /// Skip files larger than this many bytes.
    pub max_file_bytes: Option<u64>,
    /// Worker threads; 0 means one per core.
    pub threads: usize,
}

impl GrepOptions {
    /// Options for `pattern` with ripgrep's defaults: regex, case-sensitive, ignore files
    /// honoured, hidden files skipped, no context, no limit.
    pub fn new(pattern: impl Into<String>) -> Self {
        Self {
            pattern: pattern.into(),
            literal: false,
            case: CaseMode::Sensitive,
            word: false,
            include: Vec::new(),
            exclude: Vec::new(),
            before_context: 0,
            after_context: 0,
            max_results: None,
            hidden: false,
            respect_ignore_files: true,
            max_file_bytes: None,
            threads: 0,
        }
    }
}

/// A line around a match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextLine {
    /// 0-based line number.
    pub line: u64,
    /// The line without its terminator (lossy UTF-8).
    pub text: String,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    /// The file (under the root as walked; absolute when the root is).
    pub path: Arc<Path>,
    /// 0-based line number.
    pub line: u64,
    /// 0-based byte column of the first match in the line.
    pub column: usize,
    /// Byte length of that first match.
    pub len: usize,
    /// The matching line without its terminator (lossy UTF-8).
    pub text: String,
    /// Context lines before, in order.
    pub before: Vec<ContextLine>,
    /// Context lines after, in order.
    pub after: Vec<ContextLine>,
    /// Whether the text came from an open buffer rather than the disk.
    pub from_buffer: bool,
}

impl std::fmt::Display for GrepMatch {
    /// `path:line:column:text` with 1-based line and column, as ripgrep's `--vimgrep`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}",
            self.path.display(),
            self.line + 1,
            self.column + 1,
            self.text
        )
    }
}

/// What a grep found.
#[derive(Debug, Clone, Default)]
pub struct GrepResult {
    /// Matches sorted by path, then line.
    pub matches: Vec<GrepMatch>,
    /// Whether `max_results` cut the search short.
    pub truncated: bool,
    /// Files searched (disk and buffers).
    pub files_searched: usize,
}

/// Why a grep could not start.
#[derive(Debug, thiserror::Error)]
pub enum GrepError {
    /// The pattern is not a valid regular expression.
    #[error("invalid pattern: {0}")]
    Pattern(String),
    /// An include or exclude glob is invalid.
    #[error("invalid glob {glob:?}: {message}")]
    Glob {
        /// The glob.
        glob: String,
        /// What is wrong with it.
        message: String,
    },
}

/// Searches every file under `root` (made absolute; ignore files honoured as configured), using the live
/// text of paths in `overlay` instead of their files, including buffers not yet on disk.
pub fn grep(root: &Path, opts: &GrepOptions, overlay: &Overlay) -> Result<GrepResult, GrepError> {
    // Absolute, so walked paths compare equal to the overlay's absolute paths.
    let root = &std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
    let matcher = build_matcher(opts)?;
    let overrides = build_overrides(root, opts)?;
    let threads = match opts.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!opts.hidden)
        .git_ignore(opts.respect_ignore_files)
        .git_global(opts.respect_ignore_files)
        .git_exclude(opts.respect_ignore_files)
        .ignore(opts.respect_ignore_files)
        .parents(opts.respect_ignore_files)
        .require_git(false)
        .max_filesize(opts.max_file_bytes)
        .overrides(overrides.clone())
        .threads(threads);

    let shared = Shared {
        count: AtomicUsize::new(0),
        files: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        max: opts.max_results.unwrap_or(usize::MAX),
        results: Mutex::new(Vec::new()),
        visited_buffers: Mutex::new(HashSet::new()),
    };
    let searcher = searcher(opts);
    let shared_ref = &shared;
    builder.build_parallel().run(|| {
        let mut worker = Worker {
            matcher: matcher.clone(),
            searcher: searcher.clone(),
            shared: shared_ref,
            overlay,
            out: Vec::new(),
        };
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            worker.search(entry.path());
            if shared_ref.stop.load(Ordering::Relaxed) {
                WalkState::Quit
            } else {
                WalkState::Continue
            }
        })
    });

    // Open buffers under the root that the walk did not meet (new, unsaved files).
    let visited = shared
        .visited_buffers
        .lock()
        .map(|v| v.clone())
        .unwrap_or_default();
    let mut worker = Worker {
        matcher,
        searcher,
        shared: &shared,
        overlay,
        out: Vec::new(),
    };
    for (path, _) in overlay.iter() {
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        if visited.contains(path) || !path.starts_with(root) || path.exists() {
            continue;
        }
        if overrides.matched(path, false).is_ignore()
            || !walk_would_visit(root, path, opts.hidden, opts.respect_ignore_files)
        {
            continue;
        }
        worker.search(path);
    }
    drop(worker);

    let mut matches = shared
        .results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    matches.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    let truncated = shared.stop.load(Ordering::Relaxed);
    if let Some(max) = opts.max_results {
        matches.truncate(max);
    }
    Ok(GrepResult {
        matches,
        truncated,
        files_searched: shared.files.load(Ordering::Relaxed),
    })
}

fn build_matcher(opts: &GrepOptions) -> Result<RegexMatcher, GrepError> {
    let mut b = RegexMatcherBuilder::new();
    b.line_terminator(Some(b'\n'))
        .fixed_strings(opts.literal)
        .word(opts.word)
        .case_insensitive(opts.case == CaseMode::Insensitive)
        .case_smart(opts.case == CaseMode::Smart);
    b.build(&opts.pattern)
        .map_err(|e| GrepError::Pattern(e.to_string()))
}

fn build_overrides(root: &Path, opts: &GrepOptions) -> Result<Override, GrepError> {
    let mut b = OverrideBuilder::new(root);
    let glob_err = |glob: &str, e: ignore::Error| GrepError::Glob {
        glob: glob.to_owned(),
        message: e.to_string(),
    };
    for glob in &opts.include {
        b.add(glob).map_err(|e| glob_err(glob, e))?;
    }
    for glob in &opts.exclude {
        let negated = format!("!{}", glob.trim_start_matches('!'));
        b.add(&negated).map_err(|e| glob_err(glob, e))?;
    }
    b.build().map_err(|e| glob_err("", e))
}

fn searcher(opts: &GrepOptions) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(opts.before_context)
        .after_context(opts.after_context)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

struct Shared {
    count: AtomicUsize,
    files: AtomicUsize,
    stop: AtomicBool,
    max: usize,
    results: Mutex<Vec<GrepMatch>>,
    visited_buffers: Mutex<HashSet<PathBuf>>,
}

struct Worker<'a> {
    matcher: RegexMatcher,
    searcher: Searcher,
    shared: &'a Shared,
    overlay: &'a Overlay,
    out: Vec<GrepMatch>,
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        if self.out.is_empty() {
            return;
        }
        if let Ok(mut all) = self.shared.results.lock() {
            all.append(&mut self.out);
        }
    }
}

impl Worker<'_> {
    fn search(&mut self, path: &Path) {
        self.shared.files.fetch_add(1, Ordering::Relaxed);
        let path_arc: Arc<Path> = Arc::from(path);
        let mut sink = Collector {
            matcher: &self.matcher,
            path: path_arc,
            out: &mut self.out,
            before: Vec::new(),
            shared: self.shared,
            from_buffer: false,
        };
        let result = match self.overlay.get(path) {
            Some(live) => {
                if let Ok(mut v) = self.shared.visited_buffers.lock() {
                    v.insert(path.to_owned());
                }
                sink.from_buffer = true;
                let text = live.text();
                self.searcher
                    .search_slice(&self.matcher, text.as_bytes(), &mut sink)
            }
            None => self.searcher.search_path(&self.matcher, path, &mut sink),
        };
        if let Err(err) = result {
            tracing::debug!(path = %path.display(), %err, "grep: skipped file");
        }
    }
}

struct Collector<'a> {
    matcher: &'a RegexMatcher,
    path: Arc<Path>,
    out: &'a mut Vec<GrepMatch>,
    before: Vec<ContextLine>,
    shared: &'a Shared,
    from_buffer: bool,
}

fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

impl Sink for Collector<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.shared.stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let n = self.shared.count.fetch_add(1, Ordering::Relaxed);
        if n >= self.shared.max {
            self.shared.stop.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        let bytes = mat.bytes();
        let (column, len) = match self.matcher.find(bytes) {
            Ok(Some(m)) => (m.start(), m.end() - m.start()),
            _ => (0, 0),
        };
        self.out.push(GrepMatch {
            path: self.path.clone(),
            line: mat.line_number().unwrap_or(1).saturating_sub(1),
            column,
            len,
            text: line_text(bytes),
            before: std::mem::take(&mut self.before),
            after: Vec::new(),
            from_buffer: self.from_buffer,
        });
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        let line = ContextLine {
            line: ctx.line_number().unwrap_or(1).saturating_sub(1),
            text: line_text(ctx.bytes()),
        };
        match ctx.kind() {
            SinkContextKind::Before => self.before.push(line),
            SinkContextKind::After => {
                if let Some(last) = self.out.last_mut() {
                    last.after.push(line);
                }
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }
}
