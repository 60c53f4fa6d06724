//! An open buffer re-indexed without keeping readers waiting: its parse is prepared
//! under the index's read lock ([`Index::prepare_update`]: the old tree, text and tags
//! are shared, not copied), runs with no lock held ([`PendingParse::parse`]), has its
//! names looked up under a read lock again ([`Index::resolve_names`]), and is swapped in
//! under the write lock ([`Index::commit`]), which then only interns the names the index
//! did not know and moves the postings of names that changed. [`update_buffer`] does
//! the four steps on an `RwLock<Index>`.
//!
//! A parse never overwrites a newer state of its file: the commit takes it only when
//! the file is as it was when the parse was prepared, or when the file's live buffer is
//! of an older version than the parse's. A close or a newer update that got in between
//! makes it [`Commit::Stale`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use lasso::{Rodeo, Spur};
use rustc_hash::{FxBuildHasher, FxHashMap};
use tree_sitter::Tree;

use super::locks::{read, write};
use super::update::{OldNames, Records, Replaced, affected_range, diff_edit, distinct};
use super::{DefRec, Index, LiveTree, RefRec, count_lines};
use crate::Language;
use crate::tags::{self, FileTags};

/// A parse of one open buffer, prepared from the index ([`Index::prepare_update`]) and
/// not yet run.
pub struct PendingParse {
    path: PathBuf,
    lang: Language,
    text: Arc<str>,
    version: Option<u64>,
    /// The file's revision when prepared; `None`: it was not indexed.
    seen: Option<u64>,
    /// The live buffer's tree, text and tags to parse incrementally from.
    base: Option<Base>,
}

struct Base {
    tree: Tree,
    text: Arc<str>,
    tags: Arc<FileTags>,
}

/// A parsed open buffer on its way into the index ([`Index::commit`]).
pub struct ParsedBuffer {
    path: PathBuf,
    lang: Language,
    text: Arc<str>,
    version: Option<u64>,
    seen: Option<u64>,
    lines: u32,
    tree: Tree,
    tags: Arc<FileTags>,
    names: Option<Resolved>,
}

/// What a commit did.
#[derive(Debug)]
pub enum Commit {
    /// Swapped in; what it replaced is to be dropped after the index's lock is let go.
    Applied(Replaced),
    /// Left out: the file changed since the parse was prepared (closed, or updated to a
    /// version at least as new).
    Stale,
}

impl std::fmt::Debug for PendingParse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingParse")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ParsedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedBuffer")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// The names of a parsed buffer's records as keys of the index, as far as the index
/// knew them when they were looked up; the rest are interned at the commit.
struct Resolved {
    /// The index's `names_epoch` then: keys of an earlier epoch are stale.
    epoch: u64,
    defs: Box<[DefRec]>,
    refs: Box<[RefRec]>,
    /// Names the index did not know, each once.
    missing: Vec<Box<str>>,
    /// (record, index into `missing`) of the records that name one of them.
    def_missing: Vec<(u32, u32)>,
    ref_missing: Vec<(u32, u32)>,
    /// Distinct known keys, sorted.
    known_defs: Vec<Spur>,
    known_refs: Vec<Spur>,
    /// The file's distinct names then, for moving only the postings that change.
    old: Option<OldNames>,
}

impl Index {
    /// Prepares a parse of `text`, the live text of `path` in `lang`, at `version` (the
    /// caller's, such as the document store's revision; `None`: unversioned). Cheap: it
    /// shares the current live tree, text and tags to parse from.
    pub fn prepare_update(
        &self,
        path: &Path,
        lang: Language,
        text: Arc<str>,
        version: Option<u64>,
    ) -> PendingParse {
        let current = self
            .file_id(path)
            .and_then(|id| Some((id, self.entry(id)?)));
        let base = current
            .filter(|(_, e)| e.lang == lang)
            .and_then(|(id, _)| self.live.get(&id))
            .map(|live| Base {
                tree: live.tree.clone(),
                text: live.text.clone(),
                tags: live.tags.clone(),
            });
        PendingParse {
            path: path.to_owned(),
            lang,
            text,
            version,
            seen: current.map(|(_, e)| e.rev),
            base,
        }
    }

    /// Looks the parsed buffer's names up (under a read lock: no interning), so that
    /// the commit interns only the new ones.
    pub fn resolve_names(&self, parsed: &mut ParsedBuffer) {
        parsed.names = Some(self.resolve(&parsed.path, &parsed.tags));
    }

    fn resolve(&self, path: &Path, tags: &FileTags) -> Resolved {
        let mut missing: Vec<Box<str>> = Vec::new();
        let mut missing_ix: FxHashMap<&str, u32> = FxHashMap::default();
        let mut key = |name| key_of(&self.names, name, &mut missing_ix, &mut missing);
        let mut def_missing = Vec::new();
        let mut defs = Vec::with_capacity(tags.defs.len());
        for (i, d) in tags.defs.iter().enumerate() {
            let name = key(tags.name(d.name)).unwrap_or_else(|m| {
                def_missing.push((i as u32, m));
                Spur::default()
            });
            defs.push(DefRec {
                name,
                parent: d.parent,
                kind: d.kind,
                span: d.span,
                name_start: d.name_start,
            });
        }
        let mut ref_missing = Vec::new();
        let mut refs = Vec::with_capacity(tags.refs.len());
        for (i, r) in tags.refs.iter().enumerate() {
            let name = key(tags.name(r.name)).unwrap_or_else(|m| {
                ref_missing.push((i as u32, m));
                Spur::default()
            });
            refs.push(RefRec {
                name,
                kind: r.kind,
                start: r.start,
            });
        }
        let known = |recs: &mut dyn Iterator<Item = Spur>| distinct(recs);
        let known_defs = known(
            &mut defs
                .iter()
                .enumerate()
                .filter(|(i, _)| !is_missing(&def_missing, *i))
                .map(|(_, d)| d.name),
        );
        let known_refs = known(
            &mut refs
                .iter()
                .enumerate()
                .filter(|(i, _)| !is_missing(&ref_missing, *i))
                .map(|(_, r)| r.name),
        );
        let old = self
            .file_id(path)
            .and_then(|id| self.entry(id))
            .map(|e| OldNames {
                rev: e.rev,
                defs: distinct(e.defs.iter().map(|d| d.name)),
                refs: distinct(e.refs.iter().map(|r| r.name)),
            });
        Resolved {
            epoch: self.names_epoch,
            defs: defs.into(),
            refs: refs.into(),
            missing,
            def_missing,
            ref_missing,
            known_defs,
            known_refs,
            old,
        }
    }

    /// Swaps `parsed` in unless the file changed since it was prepared (see the module
    /// doc); holds the index only for interning new names and moving postings.
    pub fn commit(&mut self, parsed: ParsedBuffer) -> Commit {
        let current = self
            .file_id(&parsed.path)
            .and_then(|id| Some((id, self.entry(id)?.rev)));
        let unchanged = current.map(|(_, rev)| rev) == parsed.seen;
        let newer = match (
            parsed.version,
            current.and_then(|(id, _)| self.live.get(&id)),
        ) {
            (Some(v), Some(live)) => live.version.is_some_and(|cur| cur < v),
            _ => false,
        };
        if !unchanged && !newer {
            return Commit::Stale;
        }
        Commit::Applied(self.swap_in(parsed))
    }

    /// Swaps `parsed` in whatever the file's state.
    pub(super) fn swap_in(&mut self, parsed: ParsedBuffer) -> Replaced {
        let ParsedBuffer {
            path,
            lang,
            text,
            version,
            lines,
            tree,
            tags,
            names,
            ..
        } = parsed;
        let resolved = match names {
            Some(r) if r.epoch == self.names_epoch => r,
            _ => self.resolve(&path, &tags),
        };
        let Resolved {
            mut defs,
            mut refs,
            missing,
            def_missing,
            ref_missing,
            mut known_defs,
            mut known_refs,
            old,
            ..
        } = resolved;
        let keys: Vec<Spur> = missing
            .iter()
            .map(|n| self.names.get_or_intern(&**n))
            .collect();
        for &(rec, m) in &def_missing {
            if let (Some(d), Some(&k)) = (defs.get_mut(rec as usize), keys.get(m as usize)) {
                d.name = k;
                known_defs.push(k);
            }
        }
        for &(rec, m) in &ref_missing {
            if let (Some(r), Some(&k)) = (refs.get_mut(rec as usize), keys.get(m as usize)) {
                r.name = k;
                known_refs.push(k);
            }
        }
        for (names, patched) in [
            (&mut known_defs, !def_missing.is_empty()),
            (&mut known_refs, !ref_missing.is_empty()),
        ] {
            if patched {
                names.sort_unstable();
                names.dedup();
            }
        }
        let records = Records {
            defs,
            refs,
            new_defs: known_defs,
            new_refs: known_refs,
            old,
        };
        let live = LiveTree {
            tree,
            text,
            tags,
            version,
        };
        self.install(path, lang, lines, records, Some(live))
    }
}

/// The key of `name` if `names` has it, else its index in `missing` (added there once).
fn key_of<'t>(
    names: &Rodeo<Spur, FxBuildHasher>,
    name: &'t str,
    index: &mut FxHashMap<&'t str, u32>,
    missing: &mut Vec<Box<str>>,
) -> Result<Spur, u32> {
    if let Some(k) = names.get(name) {
        return Ok(k);
    }
    Err(*index.entry(name).or_insert_with(|| {
        missing.push(name.into());
        u32::try_from(missing.len() - 1).unwrap_or(u32::MAX)
    }))
}

/// Whether record `i` is one of the `patches` (sorted by record).
fn is_missing(patches: &[(u32, u32)], i: usize) -> bool {
    patches.binary_search_by_key(&(i as u32), |p| p.0).is_ok()
}

impl PendingParse {
    /// Parses: incrementally from the live buffer's tree when there is one (the edit
    /// found by comparing the texts, the tags query run again only over the region it
    /// changed), else from scratch. Holds no lock. `None` if the parser gave up.
    pub fn parse(self) -> Option<ParsedBuffer> {
        #[cfg(test)]
        DURING_PARSE.fire(&self.path);
        let PendingParse {
            path,
            lang,
            text,
            version,
            seen,
            base,
        } = self;
        let (tree, tags) = match base {
            Some(base) => match diff_edit(&base.text, &text) {
                None => (base.tree, base.tags),
                Some(edit) => {
                    // The tree is shared with the index; tree-sitter copies what an edit
                    // touches, so the index's tree stays as it was.
                    let mut old = base.tree;
                    old.edit(&edit);
                    let tree = lang.parse(&text, Some(&old))?;
                    let affected = affected_range(&old, &tree, &edit);
                    let tags = tags::reextract(lang, &tree, &text, &base.tags, &edit, affected);
                    (tree, Arc::new(tags))
                }
            },
            None => {
                let tree = lang.parse(&text, None)?;
                let tags = tags::extract(lang, &tree, &text);
                (tree, Arc::new(tags))
            }
        };
        Some(ParsedBuffer {
            lines: count_lines(&text),
            path,
            lang,
            text,
            version,
            seen,
            tree,
            tags,
            names: None,
        })
    }
}

/// Re-indexes the open buffer `path` with `text` at `version` (the document store's
/// revision) without holding `index`'s write lock while it parses: readers go on
/// answering from the previous state until the swap. A followed text file without a
/// grammar just takes its text. Returns whether the index took it (`false`: no language
/// and not followed, the parser gave up, or a close or newer update got there first).
pub fn update_buffer(index: &RwLock<Index>, path: &Path, text: Arc<str>, version: u64) -> bool {
    let Some(lang) = crate::Language::from_path(path) else {
        if crate::plain::is_plain(path) {
            write(index).set_plain_text(path, text);
            return true;
        }
        return false;
    };
    let pending = read(index).prepare_update(path, lang, text, Some(version));
    let Some(mut parsed) = pending.parse() else {
        return false;
    };
    read(index).resolve_names(&mut parsed);
    // The guard goes at the end of this statement; what the commit replaced, after it.
    let commit = write(index).commit(parsed);
    matches!(commit, Commit::Applied(_))
}

/// Runs when a parse starts, holding no lock.
#[cfg(test)]
pub(crate) static DURING_PARSE: super::locks::PathHooks = super::locks::PathHooks::new();

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::SymbolKind;

    /// A Python file of `n` functions named `{prefix}_{i}`, each calling the one before.
    fn python(prefix: &str, n: usize) -> String {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!(
                "def {prefix}_{i}(x):\n    return {prefix}_{}(x) + {i}\n\n",
                i.saturating_sub(1)
            ));
        }
        text
    }

    #[test]
    fn readers_get_the_index_while_a_buffer_parses() {
        let path = Path::new("/ws/readers_while_parsing.py");
        let index = Arc::new(RwLock::new(Index::default()));
        assert!(update_buffer(&index, path, python("old", 2_000).into(), 1));
        let (started_tx, started) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let go_rx = std::sync::Mutex::new(go_rx);
        // The parse stops at its start until the reader below is done.
        DURING_PARSE.on(path, move || {
            let _ = started_tx.send(());
            let _ = go_rx.lock().map(|rx| rx.recv());
        });
        let parser = {
            let index = index.clone();
            std::thread::spawn(move || update_buffer(&index, path, python("new", 20_000).into(), 2))
        };
        started.recv().unwrap();
        // Mid-parse: the index is free, for readers and even for a writer.
        {
            let reader = index.try_read().expect("a reader waited on a parse");
            assert_eq!(reader.definitions("old_7").len(), 1);
            assert!(reader.definitions("new_7").is_empty());
        }
        assert!(index.try_write().is_ok(), "the parse held the write lock");
        go.send(()).unwrap();
        assert!(parser.join().unwrap());
        let index = index.read().unwrap();
        assert!(index.definitions("old_7").is_empty());
        let defs = index.definitions("new_19999");
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].kind, SymbolKind::Function);
        assert_eq!(index.references("new_19998").len(), 1);
    }

    #[test]
    fn a_stale_parse_is_not_swapped_in_over_a_newer_one() {
        let path = Path::new("/ws/stale_parse.py");
        let mut index = Index::default();
        let lang = Language::Python;
        let older = index
            .prepare_update(path, lang, "def v1():\n    pass\n".into(), Some(1))
            .parse()
            .unwrap();
        let newer = index
            .prepare_update(path, lang, "def v2():\n    pass\n".into(), Some(2))
            .parse()
            .unwrap();
        assert!(matches!(index.commit(newer), Commit::Applied(_)));
        assert!(matches!(index.commit(older), Commit::Stale));
        assert_eq!(index.definitions("v2").len(), 1);
        assert!(index.definitions("v1").is_empty());
        // The other way round: the newer version wins over the state it was not
        // prepared from.
        let v3 = index
            .prepare_update(path, lang, "def v3():\n    pass\n".into(), Some(3))
            .parse()
            .unwrap();
        let mut v4 = index
            .prepare_update(path, lang, "def v4():\n    pass\n".into(), Some(4))
            .parse()
            .unwrap();
        index.resolve_names(&mut v4);
        assert!(matches!(index.commit(v3), Commit::Applied(_)));
        assert!(matches!(index.commit(v4), Commit::Applied(_)));
        assert_eq!(index.definitions("v4").len(), 1);
        assert!(index.definitions("v3").is_empty());
        assert_eq!(index.live_text(path), Some("def v4():\n    pass\n"));
    }

    #[test]
    fn a_parse_of_a_buffer_closed_meanwhile_is_not_swapped_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("closed.py");
        std::fs::write(&path, "def on_disk():\n    pass\n").unwrap();
        let mut index = Index::default();
        index.refresh_file(&path);
        assert!(index.update_file(&path, "def typed():\n    pass\n"));
        let late = index
            .prepare_update(
                &path,
                Language::Python,
                "def typed_more():\n    pass\n".into(),
                Some(9),
            )
            .parse()
            .unwrap();
        index.close_file(&path);
        assert!(matches!(index.commit(late), Commit::Stale));
        assert!(!index.is_live(&path));
        assert_eq!(index.definitions("on_disk").len(), 1);
        assert!(index.definitions("typed_more").is_empty());
    }
}
