//! Runs every case of `fixtures/edits/` through [`agentls_edit::apply_to_dir`], the
//! function behind `agentls apply-patch` and `agentls edit`, and compares whole trees.
//!
//! A case is `NNN_name/{input/, edit, format, expected/ | expected_error}`; see
//! `fixtures/edits/gen.py`. `.keep` files only keep empty directories in git.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] fns: a panic is a test failure"
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use agentls_edit::{Format, apply_to_dir};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/edits")
}

/// Every file under `root` (relative path -> bytes), `.keep` left out.
fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != ".keep") {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let p = to.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }
}

fn show(t: &BTreeMap<PathBuf, Vec<u8>>) -> String {
    t.iter()
        .map(|(p, b)| format!("--- {}\n{:?}\n", p.display(), String::from_utf8_lossy(b)))
        .collect()
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
