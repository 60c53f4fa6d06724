//! A prompt's fixed head, read once and kept on disk: the system prompt and the tool
//! definitions are the same in every run of a model, and on two cores reading them
//! took 12 to 18 s of each headless run (`agentls run`, `eval`, the demo) before the
//! first token.
//!
//! One file per (model file, engine settings, head tokens), named by their sha256,
//! holding llama.cpp's state right after the head was read (`llama_state_save_file`:
//! the KV cache and the tokens). A later engine loads it when its prompt starts with
//! the same head, and checks the stored tokens before it trusts the cache. Files are
//! written whole under a temporary name and renamed, so a reader never sees half of
//! one; at most [`KEEP`] are kept, the least recently used removed.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Files kept: about 12 KiB per token for the 0.5B model, 40 MB for the default
/// profile's 3.3k-token head.
pub const KEEP: usize = 4;

/// A directory of saved heads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixStore {
    dir: PathBuf,
}

impl PrefixStore {
    /// A store in `dir` (created when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The default store, `$XDG_CACHE_HOME/agentls/prefix`, else
    /// `~/.cache/agentls/prefix`; `None` without a home directory.
    pub fn in_default_dir() -> Option<Self> {
        crate::fetch::user_dir("XDG_CACHE_HOME", ".cache").map(|d| Self::new(d.join("prefix")))
    }

    /// The file for `head` read by the engine `identity` names.
    pub fn path(&self, identity: &str, head: &[u32]) -> PathBuf {
        let mut h = Sha256::new();
        h.update(identity.as_bytes());
        h.update([0]);
        for t in head {
            h.update(t.to_le_bytes());
        }
        let digest = h.finalize();
        let name: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.kv"))
    }

    /// A fresh temporary name beside `path`, for writing before the rename.
    pub fn temporary(&self, path: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        Ok(path.with_extension(format!("tmp{}-{}", std::process::id(), fastrand::u64(..))))
    }

    /// Marks `path` as just used (its modification time), so pruning keeps it.
    pub fn touch(path: &Path) {
        if let Ok(f) = std::fs::File::options().append(true).open(path) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
    }

    /// Removes all but the [`KEEP`] most recently used files, and temporary files
    /// left by a process that died while writing (older than a minute).
    pub fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        let mut kept = Vec::new();
        for e in entries.flatten() {
            let path = e.path();
            let Ok(modified) = e.metadata().and_then(|m| m.modified()) else {
                continue;
            };
            match path.extension().and_then(|x| x.to_str()) {
                Some("kv") => kept.push((modified, path)),
                Some(x)
                    if x.starts_with("tmp")
                        && now.duration_since(modified).is_ok_and(|d| d.as_secs() > 60) =>
                {
                    let _ = std::fs::remove_file(&path);
                }
                _ => {}
            }
        }
        kept.sort_by_key(|k| std::cmp::Reverse(k.0));
        for (_, path) in kept.into_iter().skip(KEEP) {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_differ_by_engine_and_head_and_pruning_keeps_the_newest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = PrefixStore::new(dir.path());
        let a = store.path("model-a", &[1, 2, 3]);
        assert_eq!(a, store.path("model-a", &[1, 2, 3]));
        assert_ne!(a, store.path("model-b", &[1, 2, 3]));
        assert_ne!(a, store.path("model-a", &[1, 2, 4]));
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for i in 0..KEEP + 2 {
            let p = store.path("m", &[i as u32]);
            std::fs::create_dir_all(dir.path()).expect("mkdir");
            std::fs::write(&p, "kv").expect("write");
            if i < 2 {
                let f = std::fs::File::options()
                    .append(true)
                    .open(&p)
                    .expect("open");
                f.set_modified(old).expect("mtime");
            }
        }
        let stale = store.temporary(&a).expect("temporary");
        std::fs::write(&stale, "half").expect("write");
        std::fs::File::options()
            .append(true)
            .open(&stale)
            .expect("open")
            .set_modified(old)
            .expect("mtime");
        store.prune();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .collect();
        assert_eq!(left.len(), KEEP);
        assert!(!store.path("m", &[0]).exists() && !store.path("m", &[1]).exists());
        assert!(!stale.exists());
    }
}
