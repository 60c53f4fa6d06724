//! Directory trees as values: snapshot a folder, copy one, show a difference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under a folder: relative path → bytes. `.keep` files, which only keep
/// empty folders in git, are left out.
pub type Tree = BTreeMap<PathBuf, Vec<u8>>;

/// Reads every file under `root`.
pub fn read(root: &Path) -> std::io::Result<Tree> {
    let mut out = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n != ".keep") {
                let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
                out.insert(rel, std::fs::read(&path)?);
            }
        }
    }
    Ok(out)
}

/// Copies every file under `from` (as [`read`] sees them) to `to`.
pub fn copy(from: &Path, to: &Path) -> std::io::Result<()> {
    for (rel, bytes) in read(from)? {
        let path = to.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    Ok(())
}

/// A readable listing of a tree, for assertion messages.
pub fn show(tree: &Tree) -> String {
    tree.iter()
        .map(|(p, b)| format!("--- {}\n{:?}\n", p.display(), String::from_utf8_lossy(b)))
        .collect()
}
