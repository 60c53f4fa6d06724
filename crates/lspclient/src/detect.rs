//! Which language servers a workspace wants: the file types present (a bounded walk
//! that honours ignore files) and the programs on `PATH`.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::config::{ServerSpec, which};

/// A server found for this workspace.
#[derive(Debug, Clone)]
pub struct Found {
    /// How to start it.
    pub spec: ServerSpec,
    /// The program on `PATH`.
    pub program: PathBuf,
}

/// Files looked at before deciding: enough to see every language of a real project,
/// bounded so a huge tree costs milliseconds.
const MAX_FILES: usize = 20_000;

/// The extensions of the files under `root` (at most [`MAX_FILES`]).
pub fn extensions(root: &Path) -> HashSet<String> {
    let mut seen = HashSet::new();
    let walk = ignore::WalkBuilder::new(root)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(MAX_FILES);
    for entry in walk {
        if let Some(ext) = entry.path().extension().and_then(OsStr::to_str) {
            seen.insert(ext.to_owned());
        }
    }
    seen
}

/// For each spec (in order) whose file types occur under `root` and none already
/// claimed by an earlier one, its program on `path_var`.
pub fn find(root: &Path, specs: &[ServerSpec], path_var: Option<&OsStr>) -> Vec<Found> {
    let present = extensions(root);
    let mut claimed: HashSet<&str> = HashSet::new();
    let mut found = Vec::new();
    for spec in specs {
        let wanted: Vec<&str> = spec
            .filetypes
            .iter()
            .map(String::as_str)
            .filter(|f| present.contains(*f) && !claimed.contains(f))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        let Some(program) = which(&spec.command, path_var) else {
            continue;
        };
        claimed.extend(spec.filetypes.iter().map(String::as_str));
        found.push(Found {
            spec: spec.clone(),
            program,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::known;

    #[test]
    fn finds_by_file_type_and_path_first_on_path_wins() {
        use std::os::unix::fs::PermissionsExt;
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("a.py"), "x = 1\n").unwrap();
        std::fs::write(ws.path().join("b.go"), "package b\n").unwrap();
        let bin = tempfile::tempdir().unwrap();
        for name in ["pylsp", "clangd"] {
            let p = bin.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let found = find(ws.path(), &known(), Some(bin.path().as_os_str()));
        let names: Vec<&str> = found.iter().map(|f| f.spec.name.as_str()).collect();
        // pyright is not on PATH, so pylsp; no Go server; no C files for clangd.
        assert_eq!(names, ["pylsp"]);
    }
}
