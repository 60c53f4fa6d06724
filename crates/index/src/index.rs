//! The workspace symbol index: files, interned names, postings from names to files, and
//! the syntax trees of live buffers for incremental reparsing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use agentls_text::{ReadLimits, read_text_file};
use ignore::{WalkBuilder, WalkState};
use lasso::{Rodeo, Spur};
use rustc_hash::{FxBuildHasher, FxHashMap};
use tree_sitter::{InputEdit, Tree};

use crate::Language;
use crate::generated::looks_generated;
use crate::overlay::Overlay;
use crate::plain::{PlainFile, is_plain};
use crate::symbol::{OutlineItem, Point, Reference, ReferenceKind, Span, Symbol, SymbolKind};
use crate::tags::{self, FileTags, NO_PARENT};

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

struct LiveTree {
    tree: Tree,
    text: String,
    /// The tags of `text`, kept so an edit re-extracts only the region it changed.
    tags: FileTags,
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
        }
    }

    /// Walks `root` (made absolute) honouring ignore files, parses every file of a known
    /// language on all worker threads, and adds it. Paths in `overlay` are indexed from
    /// their live text instead of the disk, and keep their syntax tree for incremental
    /// updates.
    pub fn crawl(&mut self, root: &Path, overlay: &Overlay) -> CrawlStats {
        let root = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
        self.root = Some(root.clone());
        let threads = match self.options.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let limits = ReadLimits {
            max_bytes: self.options.max_file_bytes,
        };
        let mut builder = WalkBuilder::new(&root);
        builder
            .hidden(!self.options.hidden)
            .git_ignore(self.options.respect_ignore_files)
            .git_global(self.options.respect_ignore_files)
            .git_exclude(self.options.respect_ignore_files)
            .ignore(self.options.respect_ignore_files)
            .parents(self.options.respect_ignore_files)
            // Honour .gitignore even outside a git repository, as users expect.
            .require_git(false)
            .threads(threads);
        let (mut jobs, plain) = collect_jobs(builder.build_parallel(), overlay);
        let mut stats = CrawlStats::default();
        // Followed, not read: the follower reads them.
        let plain_cap = self.plain_cap();
        for (path, size) in plain {
            if size <= plain_cap {
                self.touch_plain(Arc::from(path), None);
                stats.plain += 1;
            }
        }
        if self.options.skip_generated {
            let cap = self.options.generated_bytes;
            let before = jobs.len();
            jobs.retain(|j| j.size <= cap || j.size > limits.max_bytes);
            stats.generated += before - jobs.len();
        }
        let skip_generated = self.options.skip_generated;
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel::<Crawled>();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let tx = tx.clone();
                let (jobs, next, limits) = (&jobs, &next, &limits);
                scope.spawn(move || {
                    // Largest files first, so the last file a worker picks is a small one
                    // and both cores stay busy to the end.
                    while let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let crawled = match read_text_file(&job.path, limits) {
                            Ok(text) if skip_generated && looks_generated(&text) => {
                                Crawled::Generated
                            }
                            Ok(text) => parse_file(job.path.clone(), job.lang, &text)
                                .map_or(Crawled::Skipped, Crawled::Parsed),
                            Err(err) => {
                                tracing::debug!(%err, "index: skipped");
                                Crawled::Skipped
                            }
                        };
                        if tx.send(crawled).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            for crawled in rx {
                match crawled {
                    Crawled::Parsed(parsed) => {
                        stats.files += 1;
                        stats.lines += u64::from(parsed.lines);
                        self.insert(parsed, None);
                    }
                    Crawled::Skipped => stats.skipped += 1,
                    Crawled::Generated => stats.generated += 1,
                }
            }
        });
        for (path, live) in overlay.iter() {
            if path.starts_with(&root) && Language::from_path(path).is_some() {
                let text = live.text();
                if self.update_file(path, &text) {
                    stats.files += 1;
                    stats.lines += count_lines(&text) as u64;
                }
            } else if path.starts_with(&root) && is_plain(path) {
                self.touch_plain(Arc::from(path), Some(live.text().to_string()));
                stats.plain += 1;
            }
        }
        tracing::info!(
            files = stats.files,
            lines = stats.lines,
            skipped = stats.skipped,
            generated = stats.generated,
            plain = stats.plain,
            "index: crawl done"
        );
        stats
    }

    /// Sets the live text of `path` (an open buffer) and re-indexes it. When the file was
    /// updated before, its kept syntax tree is edited with the changed byte range (found
    /// by comparing the old and new text, so callers pass whole texts, no edit lists),
    /// reparsed incrementally, and the tags query runs again only over the region the
    /// edit changed; the rest of the file's tags are shifted. Returns `false` if the file
    /// is not in a known language; the text of a followed file without a grammar
    /// ([`crate::plain`]) is kept as its live buffer all the same.
    pub fn update_file(&mut self, path: &Path, text: &str) -> bool {
        match Language::from_path(path) {
            Some(lang) => self.update_file_as(path, lang, text),
            None => {
                if is_plain(path) {
                    let unchanged = self
                        .plain
                        .get(path)
                        .and_then(|f| f.live.as_deref())
                        .is_some_and(|live| live == text);
                    if !unchanged {
                        self.touch_plain(Arc::from(path), Some(text.to_owned()));
                    }
                }
                false
            }
        }
    }

    /// The largest text file without a grammar that is followed: the limits of source
    /// files (a larger one counts as generated when those are left out).
    fn plain_cap(&self) -> u64 {
        if self.options.skip_generated {
            self.options
                .max_file_bytes
                .min(self.options.generated_bytes)
        } else {
            self.options.max_file_bytes
        }
    }

    /// Gives the followed text file `path` a new revision, with its live text if open.
    fn touch_plain(&mut self, path: Arc<Path>, live: Option<String>) {
        let rev = self.next_revision();
        self.plain.insert(path, PlainFile { rev, live });
    }

    /// Takes the next revision from the counter shared by every index of the process
    /// (a fresh crawl swapped in for an older index has only newer revisions, so a
    /// follower misses nothing) and makes it this index's latest.
    fn next_revision(&mut self) -> u64 {
        self.revision = REVISION.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        self.revision
    }

    /// [`Index::refresh_file`] for a followed text file: a new revision if it is still a
    /// file within the size limits, else forgotten. Its text is not read here.
    fn refresh_plain(&mut self, path: &Path) {
        if self.plain.get(path).is_some_and(|f| f.live.is_some()) {
            return;
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() && m.len() <= self.plain_cap() => {
                self.touch_plain(Arc::from(path), None)
            }
            _ => {
                self.remove_file(path);
            }
        }
    }

    /// [`Index::update_file`] with the language given (from the buffer's LSP language
    /// id), for files whose extension says nothing, such as scripts without one.
    pub fn update_file_as(&mut self, path: &Path, lang: Language, text: &str) -> bool {
        let same_lang = self
            .ids
            .get(path)
            .and_then(|&id| self.entry(id))
            .is_some_and(|e| e.lang == lang);
        let old = self
            .ids
            .get(path)
            .and_then(|id| self.live.remove(id))
            .filter(|_| same_lang);
        let (tree, tags) = match old {
            Some(mut live) => match diff_edit(&live.text, text) {
                None => (live.tree, live.tags),
                Some(edit) => {
                    live.tree.edit(&edit);
                    let Some(tree) = lang.parse(text, Some(&live.tree)) else {
                        return false;
                    };
                    let affected = affected_range(&live.tree, &tree, &edit);
                    let tags = tags::reextract(lang, &tree, text, &live.tags, &edit, affected);
                    (tree, tags)
                }
            },
            None => {
                let Some(tree) = lang.parse(text, None) else {
                    return false;
                };
                let tags = tags::extract(lang, &tree, text);
                (tree, tags)
            }
        };
        let parsed = Parsed {
            path: path.to_owned(),
            lang,
            lines: count_lines(text),
            tags,
        };
        self.insert(parsed, Some((tree, text.to_owned())));
        true
    }

    /// Re-reads `path` from disk and re-indexes it, or removes it if it is gone or no
    /// longer readable as text. A path with a live buffer is left alone (the buffer wins).
    /// This is what file-watcher and `didChangeWatchedFiles` events call.
    pub fn refresh_file(&mut self, path: &Path) {
        if is_plain(path) {
            self.refresh_plain(path);
            return;
        }
        if self
            .ids
            .get(path)
            .is_some_and(|id| self.live.contains_key(id))
        {
            return;
        }
        let Some(lang) = Language::from_path(path) else {
            return;
        };
        let limits = ReadLimits {
            max_bytes: self.options.max_file_bytes,
        };
        match read_text_file(path, &limits) {
            Ok(text) if self.options.skip_generated && self.generated(&text) => {
                self.remove_file(path);
            }
            Ok(text) => {
                if let Some(parsed) = parse_file(path.to_owned(), lang, &text) {
                    self.insert(parsed, None);
                }
            }
            Err(err) => {
                tracing::debug!(%err, "index: refresh dropped file");
                self.remove_file(path);
            }
        }
    }

    /// Whether `text` (read from disk) counts as generated under the options.
    fn generated(&self, text: &str) -> bool {
        text.len() as u64 > self.options.generated_bytes || looks_generated(text)
    }

    /// The buffer of `path` was closed: drop its tree and index the disk version again.
    pub fn close_file(&mut self, path: &Path) {
        if let Some(id) = self.ids.get(path) {
            self.live.remove(id);
        }
        if let Some(f) = self.plain.get_mut(path) {
            f.live = None;
        }
        self.refresh_file(path);
    }

    /// Forgets `path`. Returns whether it was indexed (or followed, for a text file
    /// without a grammar).
    pub fn remove_file(&mut self, path: &Path) -> bool {
        if self.plain.remove(path).is_some() {
            // Followers see the removal by asking `follows`; the revision moves so
            // that one waiting for any change looks.
            self.next_revision();
            return true;
        }
        let Some(id) = self.ids.remove(path) else {
            return false;
        };
        self.live.remove(&id);
        if let Some(entry) = self.files.get_mut(id as usize).and_then(Option::take) {
            self.lines -= u64::from(entry.lines);
            for sym in distinct(entry.defs.iter().map(|d| d.name)) {
                unpost(&mut self.def_files, sym, id);
            }
            for sym in distinct(entry.refs.iter().map(|r| r.name)) {
                unpost(&mut self.ref_files, sym, id);
            }
        }
        self.free.push(id);
        true
    }

    fn insert(&mut self, parsed: Parsed, live: Option<(Tree, String)>) {
        let Parsed {
            path,
            lang,
            lines,
            tags,
        } = parsed;
        let defs: Box<[DefRec]> = tags
            .defs
            .iter()
            .map(|d| DefRec {
                name: self.names.get_or_intern(tags.name(d.name)),
                parent: d.parent,
                kind: d.kind,
                span: d.span,
                name_start: d.name_start,
            })
            .collect();
        let refs: Box<[RefRec]> = tags
            .refs
            .iter()
            .map(|r| RefRec {
                name: self.names.get_or_intern(tags.name(r.name)),
                kind: r.kind,
                start: r.start,
            })
            .collect();
        let new_defs = distinct(defs.iter().map(|d| d.name));
        let new_refs = distinct(refs.iter().map(|r| r.name));
        let (id, old) = match self.ids.get(path.as_path()) {
            Some(&id) => (id, self.files.get_mut(id as usize).and_then(Option::take)),
            None => {
                let id = match self.free.pop() {
                    Some(id) => id,
                    None => {
                        self.files.push(None);
                        u32::try_from(self.files.len() - 1).unwrap_or(u32::MAX)
                    }
                };
                (id, None)
            }
        };
        let (old_defs, old_refs) = match &old {
            Some(entry) => {
                self.lines -= u64::from(entry.lines);
                (
                    distinct(entry.defs.iter().map(|d| d.name)),
                    distinct(entry.refs.iter().map(|r| r.name)),
                )
            }
            None => (Vec::new(), Vec::new()),
        };
        repost(&mut self.def_files, &old_defs, &new_defs, id);
        repost(&mut self.ref_files, &old_refs, &new_refs, id);
        let path: Arc<Path> = match old {
            Some(entry) => entry.path,
            None => {
                let path: Arc<Path> = Arc::from(path);
                self.ids.insert(path.clone(), id);
                path
            }
        };
        self.lines += u64::from(lines);
        let rev = self.next_revision();
        if let Some(slot) = self.files.get_mut(id as usize) {
            *slot = Some(FileEntry {
                path,
                lang,
                lines,
                defs,
                refs,
                rev,
            });
        }
        match live {
            Some((tree, text)) => {
                self.live.insert(id, LiveTree { tree, text, tags });
            }
            None => {
                self.live.remove(&id);
            }
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

    fn symbol(&self, entry: &FileEntry, def: &DefRec) -> Symbol {
        let name: Arc<str> = Arc::from(self.names.resolve(&def.name));
        let container = entry
            .defs
            .get(def.parent as usize)
            .filter(|_| def.parent != NO_PARENT)
            .map(|p| Arc::from(self.names.resolve(&p.name)));
        Symbol {
            name_span: name_span(def.name_start, &name),
            name,
            kind: def.kind,
            container,
            path: entry.path.clone(),
            language: entry.lang,
            span: def.span,
        }
    }

    /// Definitions named exactly `name`, across files, sorted by path and line. `impl`
    /// blocks are left out (they are not where a type is defined).
    pub fn definitions(&self, name: &str) -> Vec<Symbol> {
        let Some(sym) = self.names.get(name) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for &id in self.def_files.get(&sym).into_iter().flatten() {
            let Some(entry) = self.entry(id) else {
                continue;
            };
            for def in entry.defs.iter() {
                if def.name == sym && def.kind != SymbolKind::Impl {
                    out.push(self.symbol(entry, def));
                }
            }
        }
        out.sort_by(|a, b| (&a.path, a.span.start).cmp(&(&b.path, b.span.start)));
        out
    }

    /// Uses of `name` across files (by name: best effort, no resolution), sorted by path
    /// and position. Definition sites are not included.
    pub fn references(&self, name: &str) -> Vec<Reference> {
        let Some(sym) = self.names.get(name) else {
            return Vec::new();
        };
        let name: Arc<str> = Arc::from(name);
        let mut out = Vec::new();
        for &id in self.ref_files.get(&sym).into_iter().flatten() {
            let Some(entry) = self.entry(id) else {
                continue;
            };
            for r in entry.refs.iter().filter(|r| r.name == sym) {
                out.push(Reference {
                    span: name_span(r.start, &name),
                    name: name.clone(),
                    kind: r.kind,
                    path: entry.path.clone(),
                });
            }
        }
        out.sort_by(|a, b| (&a.path, a.span.start).cmp(&(&b.path, b.span.start)));
        out
    }

    /// Definitions whose name matches `query` fuzzily (smart case), best first, at most
    /// `limit`. An empty query returns definitions in index order.
    pub fn workspace_symbols(&self, query: &str, limit: usize) -> Vec<Symbol> {
        use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
        use nucleo_matcher::{Config, Matcher, Utf32Str};

        let mut scored: Vec<(u32, usize, Spur)> = Vec::new();
        if query.trim().is_empty() {
            scored.extend(self.def_files.keys().map(|&s| (0, 0, s)));
        } else {
            let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
            let mut matcher = Matcher::new(Config::DEFAULT);
            let mut buf = Vec::new();
            for &sym in self.def_files.keys() {
                let name = self.names.resolve(&sym);
                if let Some(score) = pattern.score(Utf32Str::new(name, &mut buf), &mut matcher) {
                    scored.push((score, name.len(), sym));
                }
            }
        }
        // Best score first, then shorter names, then alphabetical for stable output.
        scored.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(a.1.cmp(&b.1))
                .then_with(|| self.names.resolve(&a.2).cmp(self.names.resolve(&b.2)))
        });
        let mut out = Vec::new();
        for (_, _, sym) in scored {
            let mut batch = Vec::new();
            for &id in self.def_files.get(&sym).into_iter().flatten() {
                let Some(entry) = self.entry(id) else {
                    continue;
                };
                for def in entry.defs.iter().filter(|d| d.name == sym) {
                    batch.push(self.symbol(entry, def));
                }
            }
            batch.sort_by(|a, b| (&a.path, a.span.start).cmp(&(&b.path, b.span.start)));
            for s in batch {
                if out.len() >= limit {
                    return out;
                }
                out.push(s);
            }
        }
        out
    }

    /// Every definition of `path`, flat, in document order.
    pub fn file_symbols(&self, path: &Path) -> Vec<Symbol> {
        let Some(entry) = self.file_id(path).and_then(|id| self.entry(id)) else {
            return Vec::new();
        };
        entry.defs.iter().map(|d| self.symbol(entry, d)).collect()
    }

    /// Every reference found in `path`, in document order.
    pub fn file_references(&self, path: &Path) -> Vec<Reference> {
        let Some(entry) = self.file_id(path).and_then(|id| self.entry(id)) else {
            return Vec::new();
        };
        entry
            .refs
            .iter()
            .map(|r| {
                let name: Arc<str> = Arc::from(self.names.resolve(&r.name));
                Reference {
                    span: name_span(r.start, &name),
                    name,
                    kind: r.kind,
                    path: entry.path.clone(),
                }
            })
            .collect()
    }

    /// The nested definitions of `path` (`None` if it is not indexed).
    pub fn outline(&self, path: &Path) -> Option<Vec<OutlineItem>> {
        let entry = self.entry(self.file_id(path)?)?;
        // Parents precede children, so build bottom-up from the end.
        let mut items: Vec<Option<OutlineItem>> = entry
            .defs
            .iter()
            .map(|d| {
                let name: Arc<str> = Arc::from(self.names.resolve(&d.name));
                Some(OutlineItem {
                    name_span: name_span(d.name_start, &name),
                    name,
                    kind: d.kind,
                    span: d.span,
                    children: Vec::new(),
                })
            })
            .collect();
        let mut roots = Vec::new();
        for i in (0..items.len()).rev() {
            let Some(item) = items[i].take() else {
                continue;
            };
            let parent = entry.defs[i].parent as usize;
            match items.get_mut(parent).and_then(Option::as_mut) {
                Some(p) if parent < i => p.children.push(item),
                _ => roots.push(item),
            }
        }
        roots.reverse();
        fn fix(items: &mut [OutlineItem]) {
            for item in items {
                item.children.reverse();
                fix(&mut item.children);
            }
        }
        fix(&mut roots);
        Some(roots)
    }

    /// The root of the last crawl, if any.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// Whether a crawl of the root would visit `path` (see
    /// [`crate::visibility::walk_would_visit`]); `false` without a crawled root.
    pub(crate) fn would_visit(&self, path: &Path) -> bool {
        self.root.as_deref().is_some_and(|root| {
            crate::visibility::walk_would_visit(
                root,
                path,
                self.options.hidden,
                self.options.respect_ignore_files,
            )
        })
    }

    /// Whether `path` is indexed.
    pub fn contains(&self, path: &Path) -> bool {
        self.ids.contains_key(path)
    }

    /// Every indexed path, in no particular order.
    pub fn paths(&self) -> impl Iterator<Item = &Arc<Path>> {
        self.ids.keys()
    }

    /// The latest revision here: every file (re)indexed gets the next one from a counter
    /// shared by all indexes of the process.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Files (re)indexed after revision `since`, with their language and revision.
    pub fn changed_since(&self, since: u64) -> Vec<(Arc<Path>, Language, u64)> {
        self.entries()
            .filter(|(_, e)| e.rev > since)
            .map(|(_, e)| (e.path.clone(), e.lang, e.rev))
            .collect()
    }

    /// Followed text files without a grammar ([`crate::plain`]) that changed after
    /// revision `since` (opened, edited, changed on disk, closed).
    pub fn plain_changed_since(&self, since: u64) -> Vec<Arc<Path>> {
        self.plain
            .iter()
            .filter(|(_, f)| f.rev > since)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Whether `path` is indexed, or followed as a text file without a grammar: what a
    /// follower of both keeps.
    pub fn follows(&self, path: &Path) -> bool {
        self.ids.contains_key(path) || self.plain.contains_key(path)
    }

    /// The text of `path`'s live buffer, if it has one (the index reads nothing else
    /// from disk after indexing it); for a followed text file without a grammar too.
    pub fn live_text(&self, path: &Path) -> Option<&str> {
        if let Some(f) = self.plain.get(path) {
            return f.live.as_deref();
        }
        let id = self.ids.get(path)?;
        self.live.get(id).map(|l| l.text.as_str())
    }

    /// Whether `path` has a live buffer (a kept syntax tree, or a followed text file's
    /// text).
    pub fn is_live(&self, path: &Path) -> bool {
        self.ids
            .get(path)
            .is_some_and(|id| self.live.contains_key(id))
            || self.plain.get(path).is_some_and(|f| f.live.is_some())
    }

    /// Sizes and an estimate of memory held.
    pub fn stats(&self) -> IndexStats {
        let mut s = IndexStats {
            files: self.ids.len(),
            lines: self.lines,
            names: self.names.len(),
            ..IndexStats::default()
        };
        let mut bytes = 0usize;
        for (_, e) in self.entries() {
            s.definitions += e.defs.len();
            s.references += e.refs.len();
            bytes += std::mem::size_of::<Option<FileEntry>>()
                + e.defs.len() * std::mem::size_of::<DefRec>()
                + e.refs.len() * std::mem::size_of::<RefRec>()
                + e.path.as_os_str().len()
                + 16;
        }
        bytes += (self.files.capacity() - self.entries().count())
            * std::mem::size_of::<Option<FileEntry>>();
        // Interner: the strings, a &str and a key per entry, and its hash table.
        let name_bytes: usize = self.names.strings().map(str::len).sum();
        bytes += name_bytes + self.names.len() * (16 + 4 + 8);
        for postings in [&self.def_files, &self.ref_files] {
            bytes += postings.capacity() * (4 + 24 + 1);
            bytes += postings.values().map(|v| v.capacity() * 4).sum::<usize>();
        }
        bytes += self.ids.capacity() * (16 + 4 + 1);
        s.memory_bytes = bytes;
        s.bytes_per_line = if s.lines == 0 {
            0.0
        } else {
            bytes as f64 / s.lines as f64
        };
        s
    }
}

/// What a crawl worker made of one file.
enum Crawled {
    Parsed(Parsed),
    Skipped,
    Generated,
}

/// Parses `text` and extracts its tags.
fn parse_file(path: PathBuf, lang: Language, text: &str) -> Option<Parsed> {
    let tree = lang.parse(text, None)?;
    let tags = tags::extract(lang, &tree, text);
    Some(Parsed {
        path,
        lang,
        lines: count_lines(text),
        tags,
    })
}

/// A file the crawl will index.
struct Job {
    path: PathBuf,
    lang: Language,
    size: u64,
}

/// The files to parse, largest first, and the followed text files without a grammar
/// ([`crate::plain`]) outside `overlay`, with their sizes. Walks first (a fraction of
/// a second even on large trees), so the parse can be scheduled largest file first.
fn collect_jobs(
    walker: ignore::WalkParallel,
    overlay: &Overlay,
) -> (Vec<Job>, Vec<(PathBuf, u64)>) {
    let (tx, rx) = mpsc::channel::<Job>();
    let (plain_tx, plain_rx) = mpsc::channel::<(PathBuf, u64)>();
    walker.run(|| {
        let tx = tx.clone();
        let plain_tx = plain_tx.clone();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            let Some(lang) = Language::from_path(path) else {
                if is_plain(path) && !overlay.contains(path) {
                    let size = entry.metadata().map_or(0, |m| m.len());
                    if plain_tx.send((entry.into_path(), size)).is_err() {
                        return WalkState::Quit;
                    }
                }
                return WalkState::Continue;
            };
            if overlay.contains(path) {
                return WalkState::Continue;
            }
            let size = entry.metadata().map_or(0, |m| m.len());
            let job = Job {
                path: entry.into_path(),
                lang,
                size,
            };
            if tx.send(job).is_err() {
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    drop((tx, plain_tx));
    let mut jobs: Vec<Job> = rx.into_iter().collect();
    jobs.sort_unstable_by(|a, b| b.size.cmp(&a.size).then_with(|| a.path.cmp(&b.path)));
    (jobs, plain_rx.into_iter().collect())
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

fn distinct(syms: impl Iterator<Item = Spur>) -> Vec<Spur> {
    let mut v: Vec<Spur> = syms.collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn unpost(map: &mut FxHashMap<Spur, Vec<FileId>>, sym: Spur, id: FileId) {
    if let Some(files) = map.get_mut(&sym) {
        if let Some(pos) = files.iter().position(|&f| f == id) {
            files.swap_remove(pos);
        }
        if files.is_empty() {
            map.remove(&sym);
        }
    }
}

/// Moves file `id`'s postings from the sorted set `old` to the sorted set `new`,
/// touching only names that changed.
fn repost(map: &mut FxHashMap<Spur, Vec<FileId>>, old: &[Spur], new: &[Spur], id: FileId) {
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(&a), Some(&b)) if a < b => {
                unpost(map, a, id);
                i += 1;
            }
            (Some(&a), None) => {
                unpost(map, a, id);
                i += 1;
            }
            (_, Some(&b)) => {
                map.entry(b).or_default().push(id);
                j += 1;
            }
            (None, None) => break,
        }
    }
}

/// The byte range of `new` (after `edit`) whose tags must be looked up again: the edit
/// and tree-sitter's changed ranges, widened to whole sibling nodes, descending while a
/// single node contains it all (so an edit inside one function re-queries that function
/// or less, not the file).
fn affected_range(old_edited: &Tree, new: &Tree, edit: &InputEdit) -> std::ops::Range<usize> {
    let mut lo = edit.start_byte;
    let mut hi = edit.new_end_byte;
    for r in old_edited.changed_ranges(new) {
        lo = lo.min(r.start_byte);
        hi = hi.max(r.end_byte);
    }
    let mut node = new.root_node();
    loop {
        let mut first = None;
        let mut last = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if child.start_byte() <= hi && lo <= child.end_byte() {
                first.get_or_insert(child);
                last = Some(child);
            }
        }
        match (first, last) {
            (Some(f), Some(l))
                if f.id() == l.id()
                    && f.child_count() > 0
                    && f.start_byte() < lo
                    && hi < f.end_byte() =>
            {
                node = f;
            }
            (Some(f), Some(l)) => return f.start_byte().min(lo)..l.end_byte().max(hi),
            _ => return lo..hi,
        }
    }
}

/// The single edit turning `old` into `new`: the bytes between their common prefix and
/// common suffix. `None` if they are equal.
pub(crate) fn diff_edit(old: &str, new: &str) -> Option<InputEdit> {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(a, b);
    if prefix == a.len() && prefix == b.len() {
        return None;
    }
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a[a.len() - max_suffix..]
        .iter()
        .rev()
        .zip(b[b.len() - max_suffix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let old_end = a.len() - suffix;
    let new_end = b.len() - suffix;
    Some(InputEdit {
        start_byte: prefix,
        old_end_byte: old_end,
        new_end_byte: new_end,
        start_position: point_at(a, prefix),
        old_end_position: point_at(a, old_end),
        new_end_position: point_at(b, new_end),
    })
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

fn point_at(text: &[u8], byte: usize) -> tree_sitter::Point {
    let before = &text[..byte];
    let row = before.iter().filter(|&&c| c == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1);
    tree_sitter::Point::new(row, byte - line_start)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The edit found by diffing turns the old text into the new one, and its points
        /// agree with its byte offsets.
        #[test]
        fn diff_edit_round_trips(old in "[a-c\\n\u{e9}]{0,40}", new in "[a-c\\n\u{e9}]{0,40}") {
            match diff_edit(&old, &new) {
                None => prop_assert_eq!(&old, &new),
                Some(e) => {
                    let rebuilt = [
                        &old.as_bytes()[..e.start_byte],
                        &new.as_bytes()[e.start_byte..e.new_end_byte],
                        &old.as_bytes()[e.old_end_byte..],
                    ]
                    .concat();
                    prop_assert_eq!(rebuilt, new.as_bytes());
                    prop_assert_eq!(e.start_position, point_at(old.as_bytes(), e.start_byte));
                    prop_assert_eq!(e.new_end_position, point_at(new.as_bytes(), e.new_end_byte));
                }
            }
        }
    }

    #[test]
    fn count_lines_counts_a_last_unterminated_line() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
    }
}
