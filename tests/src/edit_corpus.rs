//! The edit conformance corpus (`fixtures/edits/`), runnable through any way of applying
//! an edit: the library, the CLI, later the agent's tools. One runner, so every path is
//! held to the same expectations.
//!
//! A case is `NNN_name/{input/, edit, format, expected/ | expected_error}` (see the
//! corpus README).

use std::path::{Path, PathBuf};

use crate::fs_tree;

/// The corpus folder.
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/edits")
}

/// Every case folder, sorted.
pub fn cases() -> std::io::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(corpus())? {
        let path = entry?.path();
        if path.join("format").is_file() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// One way of applying an edit: `(workspace, format word, edit text)` → `Ok` or the
/// error message.
pub trait Applier: Fn(&Path, &str, &str) -> Result<(), String> {}
impl<F: Fn(&Path, &str, &str) -> Result<(), String>> Applier for F {}

/// Runs one case in a temporary copy of its input; `Err` says what went wrong.
pub fn check_case(dir: &Path, apply: &impl Applier) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let format = std::fs::read_to_string(dir.join("format")).map_err(io)?;
    let edit = std::fs::read_to_string(dir.join("edit")).map_err(io)?;
    let work = tempfile::tempdir().map_err(io)?;
    fs_tree::copy(&dir.join("input"), work.path()).map_err(io)?;
    let before = fs_tree::read(work.path()).map_err(io)?;
    let result = apply(work.path(), format.trim(), &edit);
    let after = fs_tree::read(work.path()).map_err(io)?;
    if let Ok(want) = std::fs::read_to_string(dir.join("expected_error")) {
        let want = want.trim_end_matches('\n');
        return match result {
            Ok(()) => Err(format!(
                "expected an error containing {want:?}, got success"
            )),
            Err(e) if !e.contains(want) => Err(format!("error does not contain {want:?}:\n{e}")),
            Err(_) if after != before => Err(format!(
                "a failed edit changed the tree:\n{}\nwas:\n{}",
                fs_tree::show(&after),
                fs_tree::show(&before)
            )),
            Err(_) => Ok(()),
        };
    }
    result.map_err(|e| format!("unexpected error:\n{e}"))?;
    let expected = fs_tree::read(&dir.join("expected")).map_err(io)?;
    if after != expected {
        return Err(format!(
            "tree differs\nactual:\n{}expected:\n{}",
            fs_tree::show(&after),
            fs_tree::show(&expected)
        ));
    }
    Ok(())
}

/// Runs every case; `Err` lists the failures. Refuses a corpus of fewer than
/// `min_cases` cases, so a moved folder cannot pass by finding nothing.
pub fn check_all(min_cases: usize, apply: &impl Applier) -> Result<usize, String> {
    let dirs = cases().map_err(|e| format!("cannot read {}: {e}", corpus().display()))?;
    if dirs.len() < min_cases {
        return Err(format!(
            "corpus too small: {} cases, expected at least {min_cases}",
            dirs.len()
        ));
    }
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| {
            check_case(d, apply)
                .err()
                .map(|e| format!("== {}\n{e}", d.display()))
        })
        .collect();
    if failures.is_empty() {
        Ok(dirs.len())
    } else {
        Err(format!(
            "{} of {} cases failed:\n{}",
            failures.len(),
            dirs.len(),
            failures.join("\n")
        ))
    }
}
