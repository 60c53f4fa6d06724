//! Whether the workspace walk would visit a path, for paths it has not met: open buffers
//! not yet on disk and file-watcher events.

use std::path::Path;

use ignore::gitignore::GitignoreBuilder;

/// Whether a walk of `root` would include `path`: under the root, not hidden (unless
/// `hidden`), and not ignored by the `.gitignore`/`.ignore` files of the directories from
/// the root down to it (when `respect_ignore_files`). Git's global excludes and
/// `.git/info/exclude` are not consulted: best effort.
pub fn walk_would_visit(
    root: &Path,
    path: &Path,
    hidden: bool,
    respect_ignore_files: bool,
) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    if !hidden
        && rel
            .components()
            .any(|c| c.as_os_str().to_str().is_some_and(|s| s.starts_with('.')))
    {
        return false;
    }
    if !respect_ignore_files {
        return true;
    }
    let mut dir = root.to_path_buf();
    let mut dirs = vec![dir.clone()];
    for comp in rel.parent().into_iter().flat_map(Path::components) {
        dir.push(comp);
        dirs.push(dir.clone());
    }
    for d in dirs {
        let mut b = GitignoreBuilder::new(&d);
        let mut any = false;
        for name in [".gitignore", ".ignore"] {
            let file = d.join(name);
            if file.is_file() {
                any = true;
                b.add(file);
            }
        }
        if any
            && let Ok(gi) = b.build()
            && gi.matched_path_or_any_parents(path, false).is_ignore()
        {
            return false;
        }
    }
    true
}
