//! Changes to the index: live buffers (incremental reparse), disk refreshes, closes,
//! removals, and the insertion every one of them ends in.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lasso::Spur;
use rustc_hash::FxHashMap;
use tree_sitter::{InputEdit, Tree};

use super::{DefRec, FileEntry, FileId, Index, LiveTree, Parsed, REVISION, RefRec, count_lines};
use crate::Language;
use crate::plain::{PlainFile, is_plain};
use crate::tags;

impl Index {
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
                    self.set_plain_text(path, Arc::from(text));
                }
                false
            }
        }
    }

    /// Keeps `text` as the live buffer of the followed text file `path` (a new revision
    /// unless it is the text kept already).
    pub(super) fn set_plain_text(&mut self, path: &Path, text: Arc<str>) {
        let unchanged = self
            .plain
            .get(path)
            .and_then(|f| f.live.as_deref())
            .is_some_and(|live| *live == *text);
        if !unchanged {
            self.touch_plain(Arc::from(path), Some(text));
        }
    }

    /// The largest text file without a grammar that is followed: the limits of source
    /// files (a larger one counts as generated when those are left out).
    pub(super) fn plain_cap(&self) -> u64 {
        if self.options.skip_generated {
            self.options
                .max_file_bytes
                .min(self.options.generated_bytes)
        } else {
            self.options.max_file_bytes
        }
    }

    /// Gives the followed text file `path` a new revision, with its live text if open.
    pub(super) fn touch_plain(&mut self, path: Arc<Path>, live: Option<Arc<str>>) {
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
        // The same three steps as a parse outside the lock (`reparse.rs`), with nothing
        // to race: this holds the index for the whole update.
        let Some(parsed) = self
            .prepare_update(path, lang, Arc::from(text), None)
            .parse()
        else {
            return false;
        };
        drop(self.swap_in(parsed));
        true
    }

    /// Re-reads `path` from disk and re-indexes it, or removes it if it is gone or no
    /// longer readable as text. A path with a live buffer is left alone (the buffer wins).
    /// This is what file-watcher and `didChangeWatchedFiles` events call.
    /// This holds the index while it reads and parses; [`crate::refresh_path`] does not.
    pub fn refresh_file(&mut self, path: &Path) {
        if is_plain(path) {
            self.refresh_plain(path);
            return;
        }
        if let Some(pending) = self.prepare_refresh(path) {
            drop(self.commit_refresh(pending.read()));
        }
    }

    /// The buffer of `path` was closed: drop its tree and index the disk version again
    /// ([`crate::close_path`] reads the disk's version outside the lock).
    pub fn close_file(&mut self, path: &Path) {
        drop(self.drop_live(path));
        self.refresh_file(path);
    }

    /// Forgets the live buffer of `path` (its tree and text), not yet its symbols: what
    /// a close does before the disk's version is read. Returns the tree, to drop after
    /// letting the lock go.
    pub(super) fn drop_live(&mut self, path: &Path) -> Replaced {
        if let Some(f) = self.plain.get_mut(path) {
            f.live = None;
        }
        Replaced {
            _entry: None,
            _live: self.ids.get(path).and_then(|id| self.live.remove(id)),
        }
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
        self.maybe_compact_names();
        true
    }

    /// Adds a parsed file from disk (no live buffer), interning its names here; returns
    /// what it replaced.
    pub(super) fn insert(&mut self, parsed: Parsed) -> Replaced {
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
        let records = Records {
            new_defs: distinct(defs.iter().map(|d| d.name)),
            new_refs: distinct(refs.iter().map(|r| r.name)),
            defs,
            refs,
            old: None,
        };
        self.install(path, lang, lines, records, None)
    }

    /// Puts a file's records in place of its old ones (moving only the postings of names
    /// that changed) with its live buffer, or none; gives it a new revision. Returns what
    /// it replaced, for the caller to drop after letting the index go (freeing a large
    /// file's tree and text is not free).
    pub(super) fn install(
        &mut self,
        path: PathBuf,
        lang: Language,
        lines: u32,
        records: Records,
        live: Option<LiveTree>,
    ) -> Replaced {
        let Records {
            defs,
            refs,
            new_defs,
            new_refs,
            old: old_names,
        } = records;
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
                match old_names {
                    // Found outside the write lock for this very revision of the file.
                    Some(names) if names.rev == entry.rev => (names.defs, names.refs),
                    _ => (
                        distinct(entry.defs.iter().map(|d| d.name)),
                        distinct(entry.refs.iter().map(|r| r.name)),
                    ),
                }
            }
            None => (Vec::new(), Vec::new()),
        };
        repost(&mut self.def_files, &old_defs, &new_defs, id);
        repost(&mut self.ref_files, &old_refs, &new_refs, id);
        let path: Arc<Path> = match &old {
            Some(entry) => entry.path.clone(),
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
        let replaced_live = match live {
            Some(live) => self.live.insert(id, live),
            None => self.live.remove(&id),
        };
        self.maybe_compact_names();
        Replaced {
            _entry: old,
            _live: replaced_live,
        }
    }
}

/// Parses `text` and extracts its tags.
/// A file's records with its names interned, and, when known, the distinct names of the
/// file's records before (found outside the write lock, for revision `rev`).
pub(super) struct Records {
    pub defs: Box<[DefRec]>,
    pub refs: Box<[RefRec]>,
    /// Distinct, sorted.
    pub new_defs: Vec<Spur>,
    pub new_refs: Vec<Spur>,
    pub old: Option<OldNames>,
}

/// The distinct, sorted names of a file's records at revision `rev`.
pub(super) struct OldNames {
    pub rev: u64,
    pub defs: Vec<Spur>,
    pub refs: Vec<Spur>,
}

/// What an update replaced: dropped by whoever holds it, after the index's lock is let go.
#[must_use = "drop it after letting the index's lock go"]
pub struct Replaced {
    _entry: Option<FileEntry>,
    _live: Option<LiveTree>,
}

impl std::fmt::Debug for Replaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replaced").finish_non_exhaustive()
    }
}

pub(super) fn parse_file(path: PathBuf, lang: Language, text: &str) -> Option<Parsed> {
    let tree = lang.parse(text, None)?;
    let tags = tags::extract(lang, &tree, text);
    Some(Parsed {
        path,
        lang,
        lines: count_lines(text),
        tags,
    })
}

pub(super) fn distinct(syms: impl Iterator<Item = Spur>) -> Vec<Spur> {
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
pub(super) fn affected_range(
    old_edited: &Tree,
    new: &Tree,
    edit: &InputEdit,
) -> std::ops::Range<usize> {
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
}
