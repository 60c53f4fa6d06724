//! Paths as the model writes them: relative to the workspace root, never leaving it.

use std::path::{Component, Path, PathBuf};

use agentls_edit::{Beneath, EditError};
use agentls_text::{DocUri, Origin, ReadError, SourceText};

use crate::{ToolContext, ToolError};

/// The absolute path for `written` (relative to `root`, or absolute under it), refusing
/// anything that leaves the root: lexically (`..`, absolute paths elsewhere) and on disk
/// (links leading out, dangling final links, hard-linked files), through the edit
/// engine's one beneath-root resolver. An empty path or `.` is the root itself.
pub(crate) fn resolve(root: &Path, written: &str) -> Result<PathBuf, ToolError> {
    let rel = Beneath::relative(root, written).map_err(refused_path)?;
    match Beneath::open(root) {
        Ok(b) => {
            b.check(&rel, written.trim()).map_err(refused_path)?;
        }
        // No root on disk: nothing there to follow.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(ToolError::environment(format!(
                "cannot open the workspace root {}: {e}",
                root.display()
            )));
        }
    }
    Ok(normalize_root(root).join(rel))
}

fn normalize_root(root: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in root.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The text of `path` as the editor shows it: the live buffer when open, otherwise the
/// file read beneath the root (no link out, no hard-linked file).
pub(crate) fn read(ctx: &ToolContext, path: &Path) -> Result<SourceText, ReadError> {
    if let Some(snap) = DocUri::from_file_path(path).and_then(|u| ctx.store.snapshot(&u)) {
        return Ok(SourceText {
            rope: snap.rope,
            origin: Origin::Buffer,
            version: Some(snap.version),
        });
    }
    let beneath = Beneath::open(&ctx.root).map_err(|source| ReadError::Io {
        path: ctx.root.clone(),
        source,
    })?;
    let text = beneath.read_text(path, &ctx.read_limits)?;
    Ok(SourceText {
        rope: ropey::Rope::from_str(&text),
        origin: Origin::Disk,
        version: None,
    })
}

/// `path` relative to `root` for display (`src/lib.rs`), or as is when not under it.
pub(crate) fn display(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// A path the resolver refused, worded for the model: one outside the root as written is
/// the model's to fix (InvalidArguments); one the workspace's links lead out is the
/// environment's (UnexpectedEnvironment), like a missing file.
pub(crate) fn refused_path(e: EditError) -> ToolError {
    if e.is_environment() {
        ToolError::environment(e.to_string())
    } else {
        ToolError::invalid_arguments(e.to_string())
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
