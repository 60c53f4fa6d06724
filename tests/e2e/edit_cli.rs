//! The edit conformance corpus (`fixtures/edits/`), run through the built binary's
//! `apply-patch` and `edit` subcommands rather than the library.

use std::path::{Path, PathBuf};
use std::process::Command;

use agentls_testkit::fs_tree;

use crate::support::bin;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/edits")
}

fn run_case(dir: &Path) -> Result<(), String> {
    let format = std::fs::read_to_string(dir.join("format")).map_err(|e| e.to_string())?;
    let format = format.trim();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    fs_tree::copy(&dir.join("input"), work.path()).map_err(|e| e.to_string())?;
    let before = fs_tree::read(work.path()).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(bin());
    if format == "apply-patch" {
        cmd.arg("apply-patch");
    } else {
        cmd.args(["edit", "--format", format]);
    }
    let out = cmd
        .arg("--root")
        .arg(work.path())
        .arg(dir.join("edit"))
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let after = fs_tree::read(work.path()).map_err(|e| e.to_string())?;
    if let Ok(want) = std::fs::read_to_string(dir.join("expected_error")) {
        let want = want.trim_end_matches('\n');
        if out.status.success() {
            return Err(format!("expected failure containing {want:?}, got success"));
        }
        if !stderr.contains(want) {
            return Err(format!("stderr does not contain {want:?}:\n{stderr}"));
        }
        if after != before {
            return Err(format!(
                "a failed edit changed the tree:\n{}",
                fs_tree::show(&after)
            ));
        }
        return Ok(());
    }
    if !out.status.success() {
        return Err(format!("failed: {stderr}"));
    }
    let expected = fs_tree::read(&dir.join("expected")).map_err(|e| e.to_string())?;
    if after != expected {
        return Err(format!(
            "tree differs\nactual:\n{}expected:\n{}",
            fs_tree::show(&after),
            fs_tree::show(&expected)
        ));
    }
    Ok(())
}

#[test]
fn conformance_corpus_through_the_cli() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus())
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
                .map(|e| format!("== {}\n{e}", d.display()))
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

#[test]
fn a_patch_on_stdin_works_and_a_bad_one_exits_non_zero() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let run = |patch: &str| {
        let mut child = Command::new(bin())
            .args(["apply-patch", "--root"])
            .arg(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(patch.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let ok = run("*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** End Patch\n");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout).lines().next(),
        Some("M a.txt")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\n2\n"
    );
    let bad = run("*** Begin Patch\n*** Update File: a.txt\n@@\n-three\n+3\n*** End Patch\n");
    assert!(!bad.status.success());
    assert!(!String::from_utf8_lossy(&bad.stderr).is_empty());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\n2\n"
    );
}

#[test]
fn new_syntax_errors_are_reported_and_the_edit_still_lands() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "fn a() {\n    one();\n}\n").unwrap();
    let edit = r#"{"path": "lib.rs", "old_string": "    one();\n}", "new_string": "    one(;\n}"}"#;
    let edit_file = dir.path().join("edit.json");
    std::fs::write(&edit_file, edit).unwrap();
    let out = Command::new(bin())
        .args(["edit", "--format", "str-replace", "--root"])
        .arg(dir.path())
        .arg(&edit_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("M lib.rs"), "{stdout}");
    assert!(stdout.contains("lib.rs:2: new syntax error"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib.rs")).unwrap(),
        "fn a() {\n    one(;\n}\n"
    );
}
