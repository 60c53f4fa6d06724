//! The edit conformance corpus (`fixtures/edits/`), run through the built binary's
//! `apply-patch` and `edit` subcommands rather than the library.

use std::path::Path;
use std::process::Command;

use agentls_testkit::edit_corpus;

use crate::support::bin;

/// Applies an edit by running the binary on a file holding it.
fn apply(root: &Path, format: &str, edit: &str) -> Result<(), String> {
    let edit_file = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    std::fs::write(edit_file.path(), edit).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(bin());
    if format == "apply-patch" {
        cmd.arg("apply-patch");
    } else {
        cmd.args(["edit", "--format", format]);
    }
    let out = cmd
        .arg("--root")
        .arg(root)
        .arg(edit_file.path())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn conformance_corpus_through_the_cli() {
    if let Err(failures) = edit_corpus::check_all(40, &apply) {
        panic!("{failures}");
    }
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

#[test]
fn insert_help_and_engine_agree_on_after_the_line() {
    let out = Command::new(bin())
        .args(["edit", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    assert!(
        help.contains("insert after 1-based line `line` (0 = top)"),
        "{help}"
    );
    assert!(!help.contains("insert before"), "{help}");
    // What the help says is what the engine does: at 0, 1 and the last line.
    for (line, expected) in [(0, "new\na\nb\n"), (1, "a\nnew\nb\n"), (2, "a\nb\nnew\n")] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("l.txt"), "a\nb\n").unwrap();
        let edit = dir.path().join("edit.json");
        std::fs::write(
            &edit,
            format!(r#"{{"path": "l.txt", "line": {line}, "text": "new\n"}}"#),
        )
        .unwrap();
        let out = Command::new(bin())
            .args(["edit", "--format", "insert", "--root"])
            .arg(dir.path())
            .arg(&edit)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("l.txt")).unwrap(),
            expected,
            "line {line}"
        );
    }
}
