//! Reading the index: definitions, references, fuzzy workspace symbols, outlines, what
//! changed since a revision, live texts and sizes.

use std::path::Path;
use std::sync::Arc;

use lasso::Spur;

use super::{DefRec, FileEntry, Index, IndexStats, RefRec, name_span};
use crate::Language;
use crate::symbol::{OutlineItem, Reference, Symbol, SymbolKind};
use crate::tags::NO_PARENT;

impl Index {
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
        self.live.get(id).map(|l| &*l.text)
    }

    /// [`Index::live_text`], shared: a follower copies it out of the index's lock in
    /// O(1), whatever its size.
    pub fn live_text_shared(&self, path: &Path) -> Option<Arc<str>> {
        if let Some(f) = self.plain.get(path) {
            return f.live.clone();
        }
        let id = self.ids.get(path)?;
        self.live.get(id).map(|l| l.text.clone())
    }

    /// The caller's version of `path`'s live buffer as the index holds it (the one
    /// given to [`crate::update_buffer`]); `None` when it has no live buffer or took
    /// it unversioned ([`Index::update_file`]). A reader that must see a buffer's
    /// newest text compares it with the store's revision.
    pub fn live_version(&self, path: &Path) -> Option<u64> {
        let id = self.ids.get(path)?;
        self.live.get(id)?.version
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
