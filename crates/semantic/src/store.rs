//! Vectors on disk, so a workspace is embedded once: keyed by chunk text hash, tagged
//! with the embedder's id (vectors of another model are never read back).
//!
//! Format (little-endian): `AGLSVEC1`, u32 id length, the id, u32 dimensions, u64 count,
//! then per vector its u64 hash and its floats. Written to a temporary file and renamed,
//! so a reader sees the old file or the new one, never half of one.

use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"AGLSVEC1";

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

/// Where the vectors embedder `id` made for the workspace at `root` are kept: under the
/// user's cache directory, named by a hash of the root's canonical path, so the same
/// workspace opened through a symlink finds its vectors, and by the embedder, so that
/// two models (a quick one searching while a better one embeds) keep theirs apart.
/// `None` without a cache directory.
pub fn default_path(root: &Path, id: &str) -> Option<PathBuf> {
    Some(cache_dir()?.join(format!("{}.{}.vectors", workspace_key(root), file_safe(id))))
}

fn cache_dir() -> Option<PathBuf> {
    Some(dirs::cache_dir()?.join("agentls").join("semantic"))
}

/// The workspace's part of its stores' names: a hash of the root's canonical path.
fn workspace_key(root: &Path) -> String {
    use std::hash::{Hash, Hasher};
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// Vectors the workspace at `root` stored before stores were named by model as well
/// (`<key>.vectors`, until 2026-11-28) are given their model's name, which they hold
/// inside, so that no model embeds them again (the whole model's are half an hour of a
/// workspace's embedding); removed when that name is taken, or when the file is not a
/// store. Returns the new name when one was given.
pub fn adopt_unnamed(root: &Path) -> io::Result<Option<PathBuf>> {
    match cache_dir() {
        Some(dir) => adopt_unnamed_in(&dir, &workspace_key(root)),
        None => Ok(None),
    }
}

fn adopt_unnamed_in(dir: &Path, key: &str) -> io::Result<Option<PathBuf>> {
    let old = dir.join(format!("{key}.vectors"));
    let id = match stored_id(&old) {
        Ok(id) => id,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(_) => {
            std::fs::remove_file(&old)?;
            return Ok(None);
        }
    };
    let new = dir.join(format!("{key}.{}.vectors", file_safe(&id)));
    if new.exists() {
        std::fs::remove_file(&old)?;
        return Ok(None);
    }
    std::fs::rename(&old, &new)?;
    Ok(Some(new))
}

/// The id of the embedder that made the store at `path`.
fn stored_id(path: &Path) -> io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut head = [0u8; 12];
    f.read_exact(&mut head)?;
    if &head[..8] != MAGIC {
        return Err(bad("not a vector store"));
    }
    let len = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
    if len > 1024 {
        return Err(bad("not a vector store"));
    }
    let mut id = vec![0u8; len];
    f.read_exact(&mut id)?;
    String::from_utf8(id).map_err(|_| bad("not a vector store"))
}

/// `id` with every character but ASCII letters, digits, `-` and `.` as `-`: an
/// embedder's id in a file name.
pub fn file_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Writes `vectors` made by embedder `id` to `path`; returns how many.
pub fn save<'a>(
    path: &Path,
    id: &str,
    vectors: impl Iterator<Item = (u64, &'a [f32])>,
) -> io::Result<usize> {
    let vectors: Vec<(u64, &[f32])> = vectors.collect();
    let dims = vectors.first().map_or(0, |(_, v)| v.len());
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // Unique to this call: two threads of one process may store the same file at once
    // (the server's background task and its tool), and must not write one temporary
    // file together.
    static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
    let mut w = BufWriter::new(std::fs::File::create(&tmp)?);
    w.write_all(MAGIC)?;
    w.write_all(&(id.len() as u32).to_le_bytes())?;
    w.write_all(id.as_bytes())?;
    w.write_all(&(dims as u32).to_le_bytes())?;
    let same: Vec<&(u64, &[f32])> = vectors.iter().filter(|(_, v)| v.len() == dims).collect();
    w.write_all(&(same.len() as u64).to_le_bytes())?;
    for (h, v) in &same {
        w.write_all(&h.to_le_bytes())?;
        for x in v.iter() {
            w.write_all(&x.to_le_bytes())?;
        }
    }
    w.into_inner()
        .map_err(io::IntoInnerError::into_error)?
        .sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(same.len())
}

/// Reads the vectors at `path` if embedder `id` made them (else an error).
pub fn load(path: &Path, id: &str) -> io::Result<Vec<(u64, Vec<f32>)>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut bytes)?;
    let mut at = 0usize;
    let mut take = |n: usize| -> io::Result<&[u8]> {
        let s = bytes
            .get(at..at + n)
            .ok_or_else(|| bad("truncated vector store"))?;
        at += n;
        Ok(s)
    };
    if take(8)? != MAGIC {
        return Err(bad("not a vector store"));
    }
    let u32_of = |b: &[u8]| {
        b.try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| bad("short"))
    };
    let id_len = u32_of(take(4)?)? as usize;
    if take(id_len)? != id.as_bytes() {
        return Err(bad("vectors of another embedding model"));
    }
    let dims = u32_of(take(4)?)? as usize;
    let count = take(8)?
        .try_into()
        .map(u64::from_le_bytes)
        .map_err(|_| bad("short"))? as usize;
    let mut out = Vec::with_capacity(count.min(1 << 24));
    for _ in 0..count {
        let h = take(8)?
            .try_into()
            .map(u64::from_le_bytes)
            .map_err(|_| bad("short"))?;
        let v = take(dims * 4)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        out.push((h, v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let dir = std::env::temp_dir().join(format!("agentls-store-{}", std::process::id()));
        let path = dir.join("a.vectors");
        let a = [0.5f32, -1.0, 2.0];
        let b = [1.0f32, 0.0, 0.25];
        assert_eq!(
            save(&path, "m-1", [(7u64, &a[..]), (9, &b[..])].into_iter()).unwrap(),
            2
        );
        let got = load(&path, "m-1").unwrap();
        assert_eq!(got, vec![(7, a.to_vec()), (9, b.to_vec())]);
        assert!(load(&path, "m-2").is_err());
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(load(&path, "m-1").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn saves_of_one_file_at_once_leave_a_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ws.vectors");
        let vectors: Vec<(u64, Vec<f32>)> = (0..2000).map(|i| (i, vec![i as f32; 64])).collect();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..5 {
                        save(&path, "m-1", vectors.iter().map(|(h, v)| (*h, &v[..]))).unwrap();
                    }
                });
            }
        });
        assert_eq!(load(&path, "m-1").unwrap(), vectors);
    }

    #[test]
    fn a_store_named_before_models_had_names_is_given_its_models_name() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let v = [1.0f32, 2.0];
        // Named by its model inside: renamed, and readable under the new name.
        save(&d.join("k1.vectors"), "m/1", [(3u64, &v[..])].into_iter()).unwrap();
        assert_eq!(
            adopt_unnamed_in(d, "k1").unwrap(),
            Some(d.join("k1.m-1.vectors"))
        );
        assert!(!d.join("k1.vectors").exists());
        assert_eq!(
            load(&d.join("k1.m-1.vectors"), "m/1").unwrap(),
            vec![(3, v.to_vec())]
        );
        // The name taken by newer vectors: those stay, the old file goes.
        save(&d.join("k1.vectors"), "m/1", std::iter::empty()).unwrap();
        assert_eq!(adopt_unnamed_in(d, "k1").unwrap(), None);
        assert!(!d.join("k1.vectors").exists());
        assert_eq!(load(&d.join("k1.m-1.vectors"), "m/1").unwrap().len(), 1);
        // Not a store: removed. Nothing there: nothing done.
        std::fs::write(d.join("k2.vectors"), b"garbage").unwrap();
        assert_eq!(adopt_unnamed_in(d, "k2").unwrap(), None);
        assert!(!d.join("k2.vectors").exists());
        assert_eq!(adopt_unnamed_in(d, "k3").unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_workspace_through_a_symlink_keeps_its_vectors_where_its_real_path_does_one_file_a_model() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("ws");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let at_real = default_path(&real, "m-1").expect("a cache directory ($HOME is set)");
        assert_eq!(default_path(&link, "m-1"), Some(at_real.clone()));
        assert_eq!(
            default_path(&real.join("../ws"), "m-1"),
            Some(at_real.clone())
        );
        assert_ne!(default_path(&other, "m-1"), Some(at_real.clone()));
        // Each model its own file, named safely whatever its id holds.
        let other_model = default_path(&real, "m/2 ..").unwrap();
        assert_ne!(other_model, at_real);
        assert_eq!(other_model.parent(), at_real.parent());
        assert!(other_model.to_string_lossy().ends_with(".m-2-...vectors"));
    }
}
