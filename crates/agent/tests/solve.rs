//! The small-model pipeline end to end over a fixture model on loopback HTTP: the
//! real sandbox runs the workspace's tests on each candidate, and only the chosen one
//! lands, through the session's edit sink. Needs `python3` (the tests are unittest).

#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentls_agent::solve::{SolveConfig, SolveReport};
use agentls_agent::{BuildHooks, HeadlessOptions, SessionConfig, Status};
use agentls_model::{CancellationToken, ModelProfile, Solver, WireFormat};
use agentls_testkit::model_server::{ModelServer, Turn};
use agentls_text::DocUri;
use agentls_tools::{EditSink, ToolError};
use async_trait::async_trait;
use common::provider;

const CALC: &str = "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a - b\n";
const TESTS: &str = "import unittest\n\nfrom calc import add, sub\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n";
/// Fixes `add` and breaks `sub`. (The task names both, so the whole short file is
/// the target: an answer for one function is spliced as that function alone.)
const BREAKS_SUB: &str =
    "```python\ndef sub(a, b):\n    return 0\n\n\ndef add(a, b):\n    return a + b\n```";
/// Compiles, still wrong.
const WRONG: &str =
    "```python\ndef sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a * b\n```";
const GOOD: &str =
    "```python\ndef sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a + b\n```";
const FIXED: &str = "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a + b\n";

/// What the disk and the editor's buffer held each time anyone looked.
#[derive(Default)]
struct Watch {
    disk: Vec<String>,
    buffer: Vec<String>,
}

/// The session's edit sink, wrapped: what the disk and buffer held when the plan came.
struct Observed {
    inner: Arc<dyn EditSink>,
    file: PathBuf,
    store: Arc<agentls_text::DocumentStore>,
    at_apply: Arc<Mutex<Vec<(String, String)>>>,
}

#[async_trait]
impl EditSink for Observed {
    async fn apply(&self, tool: &str, plan: agentls_edit::Plan) -> Result<(), ToolError> {
        let disk = std::fs::read_to_string(&self.file).unwrap();
        let buffer = buffer_text(&self.store);
        self.at_apply.lock().unwrap().push((disk, buffer));
        self.inner.apply(tool, plan).await
    }
}

fn buffer_text(store: &agentls_text::DocumentStore) -> String {
    store
        .snapshots()
        .into_iter()
        .map(|s| s.rope.to_string())
        .next()
        .unwrap_or_default()
}

#[tokio::test]
async fn the_good_candidate_lands_and_no_candidate_touches_disk_or_buffers_before_the_pick() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 is missing under CI"
        );
        eprintln!("SKIPPED: python3 is not installed");
        return;
    }
    let server = ModelServer::start().await.unwrap();
    for answer in [BREAKS_SUB, WRONG, GOOD] {
        server.push_turn(Turn::text(answer));
    }
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("tests")).unwrap();
    std::fs::write(root.join("calc.py"), CALC).unwrap();
    std::fs::write(root.join("tests/test_calc.py"), TESTS).unwrap();
    let file = root.join("calc.py");

    let mut ctx = agentls_agent::workspace_context(&root, &Default::default(), true).await;
    assert!(
        ctx.sandbox.is_some() || std::env::var_os("CI").is_none(),
        "no sandbox under CI"
    );
    // The editor holds calc.py open, unchanged.
    let uri = DocUri::from_file_path(&file).unwrap();
    assert!(!ctx.store.open(uri, "python", 1, CALC), "opened once");
    let at_apply = Arc::new(Mutex::new(Vec::new()));
    ctx.edits = Arc::new(Observed {
        inner: ctx.edits.clone(),
        file: file.clone(),
        store: ctx.store.clone(),
        at_apply: at_apply.clone(),
    });
    // Looks at the disk and the buffer every few milliseconds while the run lasts.
    let watch = Arc::new(Mutex::new(Watch::default()));
    let stop = CancellationToken::new();
    let watcher = tokio::spawn({
        let (watch, stop, store, file) =
            (watch.clone(), stop.clone(), ctx.store.clone(), file.clone());
        async move {
            while !stop.is_cancelled() {
                let disk = std::fs::read_to_string(&file).unwrap_or_default();
                let buffer = buffer_text(&store);
                {
                    let mut w = watch.lock().unwrap();
                    if w.disk.last() != Some(&disk) {
                        w.disk.push(disk);
                    }
                    if w.buffer.last() != Some(&buffer) {
                        w.buffer.push(buffer);
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        }
    });

    let tap: Arc<Mutex<Option<SolveReport>>> = Arc::default();
    let profile = ModelProfile {
        solver: Solver::Pipeline,
        ..ModelProfile::default()
    };
    let mut options = HeadlessOptions::new(
        root.clone(),
        "calc.add returns the wrong result; calc.sub is right. Fix it.",
    );
    options.provider = Some(provider(&server, WireFormat::OpenaiChat, profile));
    options.session = SessionConfig {
        solve: SolveConfig {
            samples: 3,
            report: Some(tap.clone()),
            ..SolveConfig::default()
        },
        ..SessionConfig::default()
    };
    let hooks = BuildHooks {
        context: Some(ctx),
        ..BuildHooks::default()
    };
    let mut lines = Vec::new();
    let outcome = agentls_agent::run_headless_with(options, hooks, |ev| {
        if let Some(l) = agentls_agent::headless::render_event(ev) {
            lines.push(l);
        }
    })
    .await
    .unwrap();
    stop.cancel();
    watcher.await.unwrap();

    let report = tap.lock().unwrap().clone().expect("the pipeline ran");
    assert!(
        matches!(outcome.status, Status::Done { .. }),
        "{:?}\n{}",
        outcome.status,
        lines.join("\n")
    );
    assert_eq!(report.candidates.len(), 3, "{report:#?}");
    assert_eq!(report.chosen, Some(2), "{report:#?}");
    assert!(!report.candidates[0].passes, "breaks test_sub: {report:#?}");
    assert!(!report.candidates[1].passes, "still wrong: {report:#?}");
    assert!(report.landed);
    assert_eq!(report.tally(), "3/3 candidates compile, 1 pass the tests");
    // The model was asked three times and no more.
    assert_eq!(server.remaining_turns(), 0);
    // One plan landed, and when it came the disk and the buffer were as they started.
    let seen = at_apply.lock().unwrap().clone();
    assert_eq!(seen, vec![(CALC.to_owned(), CALC.to_owned())]);
    // The disk went from the original to the good candidate and held nothing else.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), FIXED);
    let w = watch.lock().unwrap();
    assert_eq!(w.disk.first().map(String::as_str), Some(CALC));
    assert!(
        w.disk.iter().all(|t| t == CALC || t == FIXED),
        "disk held {:?}",
        w.disk
    );
    assert!(
        w.buffer.iter().all(|t| t == CALC || t == FIXED),
        "buffer held {:?}",
        w.buffer
    );
    // Progress said what happened.
    let all = lines.join("\n");
    assert!(
        all.contains("3/3 candidates compile, 1 pass the tests"),
        "{all}"
    );
}

/// A completer that answers every fill-in-the-middle request with one body, and keeps
/// the requests.
#[derive(Debug)]
struct FakeFim {
    body: &'static str,
    seen: Mutex<Vec<agentls_model::FimRequest>>,
}

impl agentls_model::Completer for FakeFim {
    fn name(&self) -> &str {
        "fake-fim"
    }

    fn complete<'a>(
        &'a self,
        req: &'a agentls_model::FimRequest,
        _rules: &'a agentls_model::StopRules,
        _cancel: CancellationToken,
    ) -> agentls_model::FimFuture<'a> {
        self.seen.lock().unwrap().push(req.clone());
        Box::pin(async move {
            Ok(agentls_model::FimAnswer {
                text: self.body.to_owned(),
                tokens: 5,
                cached_tokens: 0,
                prompt_tokens: 40,
                stop: agentls_model::FimStop::EndOfText,
            })
        })
    }
}

/// With a completer, a stub's first candidate is its body written as the middle of
/// the file: here it passes the tests, lands, and the chat model is never asked.
#[tokio::test]
async fn a_stub_is_filled_in_the_middle_when_a_completer_is_given() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 is missing under CI"
        );
        eprintln!("SKIPPED: python3 is not installed");
        return;
    }
    const STUB: &str = "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    raise NotImplementedError\n";
    let server = ModelServer::start().await.unwrap();
    server.push_turn(Turn::text(WRONG));
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("tests")).unwrap();
    std::fs::write(root.join("calc.py"), STUB).unwrap();
    std::fs::write(root.join("tests/test_calc.py"), TESTS).unwrap();
    let ctx = agentls_agent::workspace_context(&root, &Default::default(), true).await;
    let fim = Arc::new(FakeFim {
        body: "return a + b\n",
        seen: Mutex::default(),
    });
    let tap: Arc<Mutex<Option<SolveReport>>> = Arc::default();
    let profile = ModelProfile {
        solver: Solver::Pipeline,
        ..ModelProfile::default()
    };
    let mut options = HeadlessOptions::new(root.clone(), "Implement add in calc.py.");
    options.provider = Some(provider(&server, WireFormat::OpenaiChat, profile));
    options.session = SessionConfig {
        solve: SolveConfig {
            samples: 2,
            report: Some(tap.clone()),
            completer: Some(fim.clone()),
            ..SolveConfig::default()
        },
        ..SessionConfig::default()
    };
    let hooks = BuildHooks {
        context: Some(ctx),
        ..BuildHooks::default()
    };
    let outcome = agentls_agent::run_headless_with(options, hooks, |_| {})
        .await
        .unwrap();
    let report = tap.lock().unwrap().clone().expect("the pipeline ran");
    assert!(
        matches!(outcome.status, Status::Done { .. }),
        "{:?}",
        outcome.status
    );
    assert_eq!(report.chosen, Some(0), "{report:#?}");
    assert!(report.candidates[0].fim, "{report:#?}");
    assert_eq!(report.candidates.len(), 1, "{report:#?}");
    // The chat model was not needed.
    assert_eq!(server.remaining_turns(), 1);
    // The middle: the body below the docstring, the rest of the file after it.
    let seen = fim.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0]
            .prefix
            .ends_with("\"\"\"The sum of a and b.\"\"\"\n    "),
        "{:?}",
        seen[0].prefix
    );
    assert_eq!(seen[0].suffix, "\n");
    assert_eq!(
        std::fs::read_to_string(root.join("calc.py")).unwrap(),
        "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a + b\n"
    );
}
