//! Paths as the model writes them: relative to the workspace root, never leaving it.

use std::path::{Component, Path, PathBuf};

use crate::ToolError;

/// The absolute path for `written` (relative to `root`, or absolute under it), refusing
/// anything that leaves the root. An empty path or `.` is the root itself.
pub(crate) fn resolve(root: &Path, written: &str) -> Result<PathBuf, ToolError> {
    let trimmed = written.trim();
    let p = Path::new(trimmed);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    if !out.starts_with(root) {
        return Err(ToolError::invalid_arguments(format!(
            "{written}: outside the workspace root; use a path relative to the root"
        )));
    }
    Ok(out)
}

/// `path` relative to `root` for display (`src/lib.rs`), or as is when not under it.
pub(crate) fn display(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_inside_and_refuses_outside() {
        let root = Path::new("/ws");
        assert_eq!(
            resolve(root, "src/a.rs").unwrap(),
            Path::new("/ws/src/a.rs")
        );
        assert_eq!(
            resolve(root, "./src/../b.rs").unwrap(),
            Path::new("/ws/b.rs")
        );
        assert_eq!(resolve(root, "/ws/c").unwrap(), Path::new("/ws/c"));
        assert_eq!(resolve(root, "").unwrap(), Path::new("/ws"));
        assert!(resolve(root, "../etc/passwd").is_err());
        assert!(resolve(root, "/etc/passwd").is_err());
        assert!(resolve(root, "/wsx/a").is_err());
        assert_eq!(display(root, Path::new("/ws/src/a.rs")), "src/a.rs");
    }
}
