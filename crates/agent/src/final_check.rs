//! The harness's last check: the project's own test command, run once before a run ends
//! when the model edited files and ran nothing after its last edit. Small models rarely
//! run the tests on their own; a failure found here goes back to the model for one more
//! try instead of reaching the user as "done".

use std::path::Path;

/// The project's check command, from what the workspace root holds: `cargo test` for a
/// Cargo project, `go test ./...` for a Go module, `npm test` when package.json has a
/// real test script, for Python tests or their configuration pytest where it is
/// installed and `python3 -m unittest` where it is not (as the pipeline's verify
/// does). `None` when nothing says how the project is checked.
pub fn detect(root: &Path) -> Option<String> {
    detect_with(root, &crate::solve::verify::has_pytest)
}

/// [`detect`] with the question "is pytest installed?" answered by `pytest`.
pub fn detect_with(root: &Path, pytest: &dyn Fn() -> bool) -> Option<String> {
    let has = |name: &str| root.join(name).is_file();
    if has("Cargo.toml") {
        return Some("cargo test --quiet".to_owned());
    }
    if has("go.mod") {
        return Some("go test ./...".to_owned());
    }
    if has("package.json") {
        let text = std::fs::read_to_string(root.join("package.json")).unwrap_or_default();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let script = json["scripts"]["test"].as_str().unwrap_or_default();
        // npm's placeholder fails on purpose: it is not a check.
        if !script.is_empty() && !script.contains("no test specified") {
            return Some("npm test --silent".to_owned());
        }
    }
    let python_config = [
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "setup.py",
    ]
    .iter()
    .any(|f| has(f));
    let python_tests = ["tests", "test"].iter().any(|d| {
        std::fs::read_dir(root.join(d)).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("test_") && name.ends_with(".py")
            })
        })
    });
    if python_tests || (python_config && has("conftest.py")) {
        return Some(crate::solve::verify::python_tests(root, pytest()));
    }
    None
}

/// Tools whose success changes the workspace: after one, the project should be checked.
pub(crate) fn edits(tool: &str) -> bool {
    matches!(
        tool,
        "str_replace" | "insert" | "apply_patch" | "write_file" | "delete_file" | "move_file"
    )
}

/// What a lean-profile model reads when it answers without having changed a file in
/// the run ([`crate::Session`]'s challenge, once per run).
pub(crate) const NO_EDIT_NOTE: &str = "(from the harness) You answered without changing any file. If the task asks for a change, make it now: read the files it is about, then edit them with str_replace. If no change is needed, answer with one sentence saying why.";

/// What a lean-profile model reads when it answers after edits nothing has checked and
/// the project has no check the harness knows to run.
pub(crate) const UNTESTED_NOTE: &str = "(from the harness) You changed files but ran nothing after the last change. Check it with run_command (the project's tests, a build, or running the code), fix what fails, then answer.";

/// What the model reads when the check failed.
pub(crate) fn failed_note(command: &str, output: &str) -> String {
    format!(
        "(from the harness) You edited files and ran no check after the last edit, so the harness ran the project's check, `{command}`. It failed:\n\n{output}\n\nFix what fails and run the check again, or say in your answer why it cannot pass."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files of a workspace, `(path, text)`.
    type Files = &'static [(&'static str, &'static str)];

    #[test]
    fn each_kind_of_project_gets_its_command() {
        let cases: [(Files, Option<&str>); 6] = [
            (&[("Cargo.toml", "[package]")], Some("cargo test --quiet")),
            (&[("go.mod", "module x")], Some("go test ./...")),
            (
                &[("package.json", r#"{"scripts":{"test":"vitest run"}}"#)],
                Some("npm test --silent"),
            ),
            (
                &[(
                    "package.json",
                    r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
                )],
                None,
            ),
            (
                &[("tests/test_shop.py", "def test_x(): pass")],
                Some("python3 -B -m pytest -q"),
            ),
            (&[("README.md", "hi")], None),
        ];
        for (files, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in files {
                let path = dir.path().join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
            assert_eq!(
                detect_with(dir.path(), &|| true).as_deref(),
                want,
                "{files:?}"
            );
        }
    }

    #[test]
    fn python_tests_run_with_unittest_where_pytest_is_absent() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(
            dir.path().join("tests/test_shop.py"),
            "import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        self.assertEqual(1, 2)\n",
        )
        .unwrap();
        let command = detect_with(dir.path(), &|| false).unwrap();
        assert_eq!(command, "python3 -B -m unittest discover -s tests -q");
        assert_eq!(
            detect_with(dir.path(), &|| true).as_deref(),
            Some("python3 -B -m pytest -q")
        );
        // The command runs the tests (and finds the failing one) with no pytest.
        let out = std::process::Command::new("sh")
            .args(["-c", &command])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("Ran 1 test") && stderr.contains("FAILED"),
            "{stderr}"
        );
    }
}
