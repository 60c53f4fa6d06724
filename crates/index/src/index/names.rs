//! The interned names: every name of every file's records, once. Names are interned for
//! good (keys are plain numbers in the records and postings), so once the files that
//! used most of them are gone (closed buffers, removed files), the interner is rebuilt
//! with only the names still used and every key rewritten. Without it, opening and
//! closing 2,000 documents of 100 KB of distinct names kept their 1.7 million names.

use lasso::{Rodeo, Spur};
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::Index;

/// Unused names tolerated beyond the used ones before a rebuild. A rebuild costs a pass
/// over every record of the index, so it waits until at least as many names as are
/// used went unused: its cost is paid for by the updates that made them.
const UNUSED_SLACK: usize = 4_096;

impl Index {
    /// Rebuilds the interner when more of its names are unused than used (by a slack).
    /// The postings hold every used name (definitions and references), so their keys
    /// bound the used names from above.
    pub(super) fn maybe_compact_names(&mut self) {
        let used_at_most = self.def_files.len() + self.ref_files.len();
        if self.names.len() > 2 * used_at_most + UNUSED_SLACK {
            self.compact_names();
        }
    }

    /// Interns the used names afresh and rewrites every key. Keys looked up before
    /// (a parse's names resolved outside the write lock) are stale after: the epoch
    /// tells.
    pub(super) fn compact_names(&mut self) {
        let before = self.names.len();
        let mut fresh: Rodeo<Spur, FxBuildHasher> = Rodeo::with_hasher(FxBuildHasher);
        let mut map: FxHashMap<Spur, Spur> = FxHashMap::default();
        for &old in self.def_files.keys().chain(self.ref_files.keys()) {
            map.entry(old)
                .or_insert_with(|| fresh.get_or_intern(self.names.resolve(&old)));
        }
        let key = |old: Spur| map.get(&old).copied().unwrap_or_default();
        for entry in self.files.iter_mut().flatten() {
            for d in entry.defs.iter_mut() {
                d.name = key(d.name);
            }
            for r in entry.refs.iter_mut() {
                r.name = key(r.name);
            }
        }
        // Fresh maps, sized to what is left.
        self.def_files = std::mem::take(&mut self.def_files)
            .into_iter()
            .map(|(k, files)| (key(k), files))
            .collect();
        self.ref_files = std::mem::take(&mut self.ref_files)
            .into_iter()
            .map(|(k, files)| (key(k), files))
            .collect();
        self.names = fresh;
        self.names_epoch += 1;
        self.ids.shrink_to_fit();
        self.live.shrink_to_fit();
        self.plain.shrink_to_fit();
        tracing::debug!(before, after = self.names.len(), "index: names compacted");
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::Index;

    #[test]
    fn closed_buffers_leave_neither_text_symbols_nor_names() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept.py");
        std::fs::write(&kept, "def kept_fn(x):\n    return shared(x)\n").unwrap();
        let mut index = Index::default();
        index.refresh_file(&kept);
        let names_before = index.names.len();
        // Unsaved buffers: one over a file on disk, the rest with nothing on disk.
        assert!(index.update_file(&kept, "def kept_fn(x):\n    return buffer_only_0(x)\n"));
        let docs: Vec<PathBuf> = (0..400)
            .map(|d| dir.path().join(format!("new_{d}.py")))
            .collect();
        for (d, path) in docs.iter().enumerate() {
            let text: String = (0..200)
                .map(|i| format!("def buffer_only_{d}_{i}(x):\n    return shared(x)\n"))
                .collect();
            assert!(index.update_file(path, &text));
        }
        assert!(index.names.len() > 80_000);
        index.close_file(&kept);
        for path in &docs {
            index.close_file(path);
        }
        // The file on disk is indexed from disk again; the others are gone.
        assert_eq!(index.live_text(&kept), None);
        assert!(!index.is_live(&kept));
        assert_eq!(index.references("shared").len(), 1);
        assert!(index.definitions("buffer_only_3_7").is_empty());
        assert!(index.references("buffer_only_0").is_empty());
        assert!(
            docs.iter()
                .all(|p| !index.contains(p) && index.live_text(p).is_none())
        );
        assert!(index.workspace_symbols("buffer_only", 10).is_empty());
        // And their names went with them (the interner was rebuilt on the way).
        assert!(
            index.names.len() <= names_before + super::UNUSED_SLACK,
            "{} names kept after closing every buffer, {names_before} before",
            index.names.len()
        );
        assert!(index.names.get("buffer_only_0_0").is_none());
        // Keys were rewritten consistently: the file still answers by name.
        assert_eq!(
            index.definitions("kept_fn")[0].path.as_ref(),
            kept.as_path()
        );
    }

    #[test]
    fn compacting_keeps_every_answer() {
        let mut index = Index::default();
        let a = Path::new("/ws/a.py");
        let b = Path::new("/ws/b.py");
        index.update_file(a, "class A:\n    def run(self):\n        helper()\n");
        index.update_file(b, "def helper():\n    pass\n\ndef unused():\n    A()\n");
        index.update_file(Path::new("/ws/gone.py"), "def gone():\n    helper()\n");
        index.remove_file(Path::new("/ws/gone.py"));
        let before = (
            index.definitions("helper"),
            index.references("helper"),
            index.outline(a),
            index.workspace_symbols("", 100),
        );
        index.compact_names();
        assert!(index.names.get("gone").is_none());
        let after = (
            index.definitions("helper"),
            index.references("helper"),
            index.outline(a),
            index.workspace_symbols("", 100),
        );
        assert_eq!(format!("{before:?}"), format!("{after:?}"));
        // And updates after it still move the right postings.
        index.update_file(b, "def helper2():\n    pass\n");
        assert!(index.definitions("helper").is_empty());
        assert_eq!(index.references("helper").len(), 1);
    }
}
