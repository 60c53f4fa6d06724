//! The tools with a language-server [`Checker`]: edit results carry its errors (not its
//! warnings by default), and the `diagnostics` tool prefers the editor's diagnostics for
//! files the editor has open and reported on, the checker's for the rest.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentls_tools::{CheckResult, Checker, DiagnosticsSource};
use async_trait::async_trait;
use common::ws;
use serde_json::json;

/// One error per line holding `BAD`, one warning always; records what it was asked.
#[derive(Default)]
struct Fake {
    asked: Mutex<Vec<(String, String)>>,
}

#[async_trait]
impl Checker for Fake {
    async fn check(&self, path: &Path, text: &str) -> CheckResult {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        self.asked.lock().unwrap().push((name, text.to_owned()));
        let mut problems: Vec<_> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("BAD"))
            .map(|(i, _)| (i + 1, "error".to_owned(), "bad line".to_owned()))
            .collect();
        problems.push((1, "warning".into(), "style".into()));
        CheckResult::Problems {
            server: "fake-ls".into(),
            problems,
            took: Duration::from_millis(7),
        }
    }
}

struct Editor;
impl DiagnosticsSource for Editor {
    fn diagnostics(&self, path: &Path) -> Vec<(usize, String, String)> {
        if path.ends_with("open.py") {
            vec![(3, "error".into(), "from the editor".into())]
        } else {
            Vec::new()
        }
    }
}

#[tokio::test]
async fn an_edit_result_carries_the_new_errors_of_the_edited_text() {
    let mut w = ws(&[("a.py", "x = 1\n")]);
    let fake = Arc::new(Fake::default());
    w.ctx.checker = Some(fake.clone());
    let out = w
        .ok(
            "str_replace",
            json!({"path": "a.py", "old_string": "x = 1", "new_string": "x = BAD"}),
        )
        .await;
    assert!(
        out.contains("fake-ls reports 1 error in a.py after this edit (7 ms); fix it:")
            && out.contains("a.py:1: error: bad line"),
        "{out}"
    );
    assert!(
        !out.contains("style"),
        "warnings stay out by default: {out}"
    );
    // The checker saw the edited text, not the old one.
    assert_eq!(fake.asked.lock().unwrap().last().unwrap().1, "x = BAD\n");
    let out = w
        .ok(
            "str_replace",
            json!({"path": "a.py", "old_string": "x = BAD", "new_string": "x = 2"}),
        )
        .await;
    assert!(
        out.contains("fake-ls: no errors in a.py after this edit"),
        "{out}"
    );
}

#[tokio::test]
async fn without_a_checker_edit_results_say_nothing_of_it() {
    let w = ws(&[("a.py", "x = 1\n")]);
    let out = w
        .ok(
            "str_replace",
            json!({"path": "a.py", "old_string": "x = 1", "new_string": "x = BAD"}),
        )
        .await;
    assert!(!out.contains("error"), "{out}");
}

#[tokio::test]
async fn diagnostics_prefer_the_editor_for_its_open_files_and_name_each_source() {
    let mut w = ws(&[("open.py", "a = 1\n"), ("closed.py", "BAD\n")]);
    w.open("open.py", "a = 1\nb = 2\nBAD\n");
    let fake = Arc::new(Fake::default());
    w.ctx.checker = Some(fake.clone());
    w.ctx.diagnostics = Some(Arc::new(Editor));
    let out = w.ok("diagnostics", json!({"path": "open.py"})).await;
    assert!(
        out.contains("open.py:3: error: from the editor (editor)"),
        "{out}"
    );
    assert!(!out.contains("fake-ls"), "the editor's win: {out}");
    let out = w.ok("diagnostics", json!({"path": "closed.py"})).await;
    assert!(
        out.contains("closed.py:1: error: bad line (fake-ls)"),
        "{out}"
    );
    assert!(out.contains("checked by: fake-ls"), "{out}");
    let asked: Vec<String> = fake
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.0.clone())
        .collect();
    assert_eq!(asked, ["closed.py"]);
}

#[tokio::test]
async fn diagnostics_say_when_only_syntax_was_checked() {
    let w = ws(&[("a.py", "x = 1\n")]);
    let out = w.ok("diagnostics", json!({"path": "a.py"})).await;
    assert!(
        out.contains("syntax only (no editor diagnostics and no language server) for: a.py"),
        "{out}"
    );
}
