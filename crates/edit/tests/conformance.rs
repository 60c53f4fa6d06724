//! Runs every case of `fixtures/edits/` through [`agentls_edit::apply_to_dir`], the
//! function behind `agentls apply-patch` and `agentls edit`, and compares whole trees.
//!
//! A case is `NNN_name/{input/, edit, format, expected/ | expected_error}`; see
//! `fixtures/edits/gen.py`. `.keep` files only keep empty directories in git.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns: a panic is a test failure"
)]

use std::fs;
use std::path::{Path, PathBuf};

use agentls_edit::{Format, apply_to_dir};
use agentls_testkit::fs_tree;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edits")
}

fn tree(root: &Path) -> fs_tree::Tree {
    fs_tree::read(root).unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    fs_tree::copy(from, to).unwrap();
}

fn show(t: &fs_tree::Tree) -> String {
    fs_tree::show(t)
}

/// Runs one case; `Err` says what went wrong.
fn run_case(dir: &Path) -> Result<(), String> {
    let format: Format = fs::read_to_string(dir.join("format"))
        .map_err(|e| format!("format: {e}"))?
        .parse()
        .map_err(|e| format!("{e}"))?;
    let edit = fs::read_to_string(dir.join("edit")).map_err(|e| format!("edit: {e}"))?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    copy_tree(&dir.join("input"), work.path());
    let before = tree(work.path());
    let result = apply_to_dir(work.path(), format, &edit, None);
    let after = tree(work.path());
    if let Ok(want) = fs::read_to_string(dir.join("expected_error")) {
        let want = want.trim_end_matches('\n');
        return match result {
            Ok(summary) => Err(format!(
                "expected error containing {want:?}, got success:\n{summary}"
            )),
            Err(e) if !e.to_string().contains(want) => {
                Err(format!("error does not contain {want:?}:\n{e}"))
            }
            Err(_) if after != before => Err(format!(
                "failed edit changed the tree:\n{}\nwas:\n{}",
                show(&after),
                show(&before)
            )),
            Err(_) => Ok(()),
        };
    }
    if let Err(e) = result {
        return Err(format!("unexpected error:\n{e}"));
    }
    let expected = tree(&dir.join("expected"));
    if after != expected {
        return Err(format!(
            "tree differs\nactual:\n{}expected:\n{}",
            show(&after),
            show(&expected)
        ));
    }
    Ok(())
}

#[test]
fn conformance_corpus() {
    let mut dirs: Vec<PathBuf> = fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("format").is_file())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 40,
        "corpus not found or too small: {}",
        dirs.len()
    );
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| {
            run_case(d)
                .err()
                .map(|e| format!("== {}\n{e}", d.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
}
