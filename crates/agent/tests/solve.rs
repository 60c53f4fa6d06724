//! The small-model pipeline end to end over a fixture model on loopback HTTP: the
//! real sandbox runs the workspace's tests on each candidate, and only the chosen one
//! lands, through the session's edit sink. Needs `python3` (the tests are unittest).

#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentls_agent::solve::{SolveConfig, SolveReport};
use agentls_agent::{BuildHooks, HeadlessOptions, SessionConfig, Status};
use agentls_model::{
    CancellationToken, ChatRequest, DecodeStats, EventStream, ManyEvent, ManyStream, ModelProfile,
    Provider, Sampling, Solver, StopReason, StreamEvent, WireFormat,
};
use agentls_testkit::model_server::{ModelServer, Turn};
use agentls_text::DocUri;
use agentls_tools::{EditSink, ToolError};
use async_trait::async_trait;
use common::provider;
use serde_json::json;

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
    let mut options = HeadlessOptions::new(root.clone());
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
    let task = "calc.add returns the wrong result; calc.sub is right. Fix it.";
    let mut built = agentls_agent::build_session(options, hooks).await.unwrap();
    let outcome = built
        .run(task.to_owned(), |ev| {
            if let Some(l) = agentls_agent::render_event(ev) {
                lines.push(l);
            }
        })
        .await;
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
    const STUB: &str = "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    raise NotImplementedError\n";
    let fim = Arc::new(FakeFim {
        body: "return a + b\n",
        seen: Mutex::default(),
    });
    let solve = SolveConfig {
        samples: 2,
        completer: Some(fim.clone()),
        ..SolveConfig::default()
    };
    let files = [("calc.py", STUB), ("tests/test_calc.py", TESTS)];
    let Some((status, report, _, server, ws)) =
        run_python(&files, "Implement add in calc.py.", &[WRONG], solve).await
    else {
        return;
    };
    let root = ws.path();
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
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

/// Counts the plans that reach the editor and the files each one changes.
struct Plans {
    inner: Arc<dyn EditSink>,
    files: Arc<Mutex<Vec<usize>>>,
}

#[async_trait]
impl EditSink for Plans {
    async fn apply(&self, tool: &str, plan: agentls_edit::Plan) -> Result<(), ToolError> {
        self.files.lock().unwrap().push(plan.changes.len());
        self.inner.apply(tool, plan).await
    }
}

/// Runs `task` through the pipeline (`solve`) over the Python workspace `files`, the
/// model answering `turns`: the outcome, the report, the files of each plan that
/// landed, the model's server and the workspace. `None` when python3 is missing
/// (outside CI).
type Ran = Option<(
    Status,
    SolveReport,
    Vec<usize>,
    ModelServer,
    tempfile::TempDir,
)>;

async fn run_python(files: &[(&str, &str)], task: &str, turns: &[&str], solve: SolveConfig) -> Ran {
    let turns: Vec<Turn> = turns.iter().map(|t| Turn::text(*t)).collect();
    run_python_with(files, task, turns, solve, |p| p).await
}

/// The pipeline's defaults with `samples` answers asked for one after another (the
/// scripted model serves one turn a request).
fn one_at_a_time(samples: usize) -> SolveConfig {
    SolveConfig {
        samples,
        together: false,
        ..SolveConfig::default()
    }
}

/// [`run_python`] with the fixture's turns as given and its provider wrapped.
async fn run_python_with(
    files: &[(&str, &str)],
    task: &str,
    turns: Vec<Turn>,
    solve: SolveConfig,
    wrap: fn(Arc<dyn Provider>) -> Arc<dyn Provider>,
) -> Ran {
    run_with(("python3", "--version"), files, task, turns, solve, wrap).await
}

/// A solve of `task` in a workspace of `files` whose checks need `program` (run
/// with its version argument to tell whether it is installed): `None` when it is
/// not (outside CI only).
async fn run_with(
    program: (&str, &str),
    files: &[(&str, &str)],
    task: &str,
    turns: Vec<Turn>,
    solve: SolveConfig,
    wrap: fn(Arc<dyn Provider>) -> Arc<dyn Provider>,
) -> Ran {
    let solver = Solver::Pipeline;
    run_as(solver, program, files, task, turns, solve, wrap).await
}

/// [`run_with`] on a profile whose `solver` is `solver`.
async fn run_as(
    solver: Solver,
    (program, version): (&str, &str),
    files: &[(&str, &str)],
    task: &str,
    turns: Vec<Turn>,
    solve: SolveConfig,
    wrap: fn(Arc<dyn Provider>) -> Arc<dyn Provider>,
) -> Ran {
    if std::process::Command::new(program)
        .arg(version)
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is missing under CI"
        );
        eprintln!("SKIPPED: {program} is not installed");
        return None;
    }
    let server = ModelServer::start().await.unwrap();
    for t in turns {
        server.push_turn(t);
    }
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut ctx = agentls_agent::workspace_context(&root, &Default::default(), true).await;
    let plans = Arc::new(Mutex::new(Vec::new()));
    ctx.edits = Arc::new(Plans {
        inner: ctx.edits.clone(),
        files: plans.clone(),
    });
    let tap: Arc<Mutex<Option<SolveReport>>> = Arc::default();
    // `auto` takes the pipeline for the lean profile's (embedded) models.
    let profile = ModelProfile {
        solver,
        lean_tools: solver == Solver::Auto,
        ..ModelProfile::default()
    };
    let mut options = HeadlessOptions::new(root.clone());
    options.provider = Some(wrap(provider(&server, WireFormat::OpenaiChat, profile)));
    options.session = SessionConfig {
        solve: SolveConfig {
            report: Some(tap.clone()),
            ..solve
        },
        ..SessionConfig::default()
    };
    let hooks = BuildHooks {
        context: Some(ctx),
        ..BuildHooks::default()
    };
    let mut built = agentls_agent::build_session(options, hooks).await.unwrap();
    let outcome = built.run(task.to_string(), |_| {}).await;
    let Some(report) = tap.lock().unwrap().clone() else {
        panic!("the pipeline left no report");
    };
    let plans = plans.lock().unwrap().clone();
    Some((outcome.status, report, plans, server, ws))
}

const ITEM: &str = "class StockItem:\n    \"\"\"One StockItem on a shelf.\"\"\"\n\n    def __init__(self, name, count):\n        self.name = name\n        self.count = count\n\n\nclass StockItemError(Exception):\n    pass\n\n\ndef stock_item_count(items):\n    return sum(i.count for i in items)\n";
const SHELF: &str = "from inventory.item import StockItem, StockItemError\n\n\ndef restock(item: StockItem, n):\n    if n < 0:\n        raise StockItemError(item.name)\n    return StockItem(item.name, item.count + n)\n";
const INVENTORY_TESTS: &str = "import unittest\n\nfrom inventory.item import StockItem, stock_item_count\nfrom inventory.shelf import restock\n\n\nclass T(unittest.TestCase):\n    def test_restock(self):\n        self.assertEqual(restock(StockItem(\"a\", 1), 2).count, 3)\n\n    def test_count(self):\n        self.assertEqual(stock_item_count([StockItem(\"a\", 1), StockItem(\"b\", 2)]), 3)\n";

/// A rename needs no model: every use in every file (code, tests, docstrings, the
/// camel-case names built on it) changes, the tests still pass, and it lands as one
/// plan of three files; `stock_item_count` keeps its name.
#[tokio::test]
async fn a_rename_spans_files_and_lands_as_one_plan_without_the_model() {
    let files = [
        ("inventory/__init__.py", ""),
        ("inventory/item.py", ITEM),
        ("inventory/shelf.py", SHELF),
        ("tests/__init__.py", ""),
        ("tests/test_inventory.py", INVENTORY_TESTS),
    ];
    let Some((status, report, plans, server, ws)) = run_python(
        &files,
        "Rename the class StockItem to Product throughout the inventory package and its tests.",
        &[],
        SolveConfig::default(),
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert_eq!(plans, vec![3], "one plan of three files");
    assert!(server.requests().is_empty(), "the model was asked");
    let root = ws.path();
    let item = std::fs::read_to_string(root.join("inventory/item.py")).unwrap();
    assert_eq!(item, ITEM.replace("StockItem", "Product"));
    assert!(item.contains("def stock_item_count"), "{item}");
    let tests = std::fs::read_to_string(root.join("tests/test_inventory.py")).unwrap();
    assert_eq!(tests, INVENTORY_TESTS.replace("StockItem", "Product"));
    let shelf = std::fs::read_to_string(root.join("inventory/shelf.py")).unwrap();
    assert!(shelf.contains("raise ProductError(item.name)"), "{shelf}");
}

/// A rename onto a name the workspace already has would merge two names: the rename
/// strategy does not apply, nothing is renamed, and the model's ways take the task.
#[tokio::test]
async fn a_rename_onto_a_name_already_taken_is_not_carried_out() {
    const SHAPES: &str =
        "class Widget:\n    kind = \"widget\"\n\n\nclass Gadget:\n    kind = \"gadget\"\n";
    const SHAPE_TESTS: &str = "import unittest\n\nfrom shapes import Gadget, Widget\n\n\nclass T(unittest.TestCase):\n    def test_kinds(self):\n        self.assertEqual(Gadget.kind, \"gadget\")\n        self.assertEqual(Widget.kind, \"widget\")\n";
    let files = [("shapes.py", SHAPES), ("tests/test_shapes.py", SHAPE_TESTS)];
    let Some((_, report, plans, _, ws)) = run_python(
        &files,
        "Rename the class Widget to Gadget.",
        &["I will not change anything.", "I will not change anything."],
        SolveConfig {
            samples: 1,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert_ne!(report.strategy, "rename", "{report:#?}");
    assert!(!report.landed, "{report:#?}");
    assert!(plans.is_empty(), "{plans:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("shapes.py")).unwrap(),
        SHAPES
    );
}

/// The same rename asked three ways takes the same strategy and makes the same
/// change: the workspace, not the wording, says what is a rename.
#[tokio::test]
async fn a_rename_phrased_three_ways_takes_the_rename_strategy_each_time() {
    let files = [
        ("inventory/__init__.py", ""),
        ("inventory/item.py", ITEM),
        ("inventory/shelf.py", SHELF),
        ("tests/__init__.py", ""),
        ("tests/test_inventory.py", INVENTORY_TESTS),
    ];
    for task in [
        "Rename the class StockItem to Product throughout the inventory package and its tests.",
        "Let's call StockItem `Product` instead; the package and the tests should follow.",
        "StockItem should be named Product everywhere, tests included.",
    ] {
        let Some((status, report, plans, server, ws)) =
            run_python(&files, task, &[], SolveConfig::default()).await
        else {
            return;
        };
        assert_eq!(report.strategy, "rename", "{task}: {report:#?}");
        assert!(
            report.applies.contains("`StockItem`"),
            "{task}: {}",
            report.applies
        );
        assert!(matches!(status, Status::Done { .. }), "{task}: {status:?}");
        assert_eq!(plans, vec![3], "{task}: one plan of three files");
        assert!(server.requests().is_empty(), "{task}: the model was asked");
        let item = std::fs::read_to_string(ws.path().join("inventory/item.py")).unwrap();
        assert_eq!(item, ITEM.replace("StockItem", "Product"), "{task}");
    }
}

const CLOCK: &str =
    "def fmt_time(minutes):\n    return \"%d:%02d\" % (minutes // 60, minutes % 60)\n";
const AUDIT: &str = "from clock import fmt_time\n\n\ndef audit_line(user, minutes, seconds):\n    return user + \" at \" + fmt_time(minutes)\n";
const REPORT: &str = "from clock import fmt_time\n\n\ndef report_line(title, minutes):\n    return title + \": \" + fmt_time(minutes)\n";
const CLOCK_TESTS: &str = "import unittest\n\nfrom clock import fmt_time\nfrom report import report_line\n\n\nclass T(unittest.TestCase):\n    def test_fmt(self):\n        self.assertEqual(fmt_time(75), \"1:15\")\n\n    def test_report(self):\n        self.assertEqual(report_line(\"up\", 75), \"up: 1:15\")\n";
const CLOCK_NEW: &str = "def fmt_time(minutes, seconds=None):\n    text = \"%d:%02d\" % (minutes // 60, minutes % 60)\n    if seconds is not None:\n        text += \":%02d\" % seconds\n    return text\n";
const AUDIT_NEW: &str = "from clock import fmt_time\n\n\ndef audit_line(user, minutes, seconds):\n    return user + \" at \" + fmt_time(minutes, seconds)\n";

/// A new parameter and its callers: the single-function rewrite changes the
/// signature of a function two other files call, so it is not landed; the edit set
/// of the function and its callers writes the three files in turn (the callee's new
/// signature shown when each caller is written), verifies them together and lands
/// one plan, with the caller that needs no change left as it was.
#[tokio::test]
async fn a_parameter_and_its_callers_in_two_files_land_as_one_plan() {
    let files = [
        ("clock.py", CLOCK),
        ("audit.py", AUDIT),
        ("report.py", REPORT),
        ("tests/test_clock.py", CLOCK_TESTS),
    ];
    let fenced = |code: &str| format!("```python\n{code}```");
    let turns = [
        // The rewrite of fmt_time alone: the signature changes.
        fenced(CLOCK_NEW),
        // The edit set: clock.py, then audit.py, then report.py as it was.
        fenced(CLOCK_NEW),
        fenced(AUDIT_NEW),
        fenced(REPORT),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let Some((status, report, plans, _, ws)) = run_python(
        &files,
        "give fmt_time() an optional seconds argument and have the audit line pass it",
        &turns,
        SolveConfig {
            samples: 1,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert_eq!(
        report.strategy, "edit set (function and callers)",
        "{report:#?}"
    );
    assert!(report.landed, "{report:#?}");
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(plans, vec![2], "one plan of the two changed files");
    let root = ws.path();
    assert_eq!(
        std::fs::read_to_string(root.join("clock.py")).unwrap(),
        CLOCK_NEW
    );
    assert_eq!(
        std::fs::read_to_string(root.join("audit.py")).unwrap(),
        AUDIT_NEW
    );
    assert_eq!(
        std::fs::read_to_string(root.join("report.py")).unwrap(),
        REPORT
    );
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "from audit import audit_line; print(audit_line('ann', 75, 9))",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ann at 1:15:09\n");
}

/// Candidates that change the signature and break the callers in other files (a
/// required parameter that `report.py` does not pass) hand the task to the edit set
/// of the function and its callers at the second such candidate: the rewrite does not
/// sample on to its deadline.
#[tokio::test]
async fn a_rewrite_whose_candidates_break_the_callers_hands_over_to_the_edit_set() {
    let files = [
        ("clock.py", CLOCK),
        ("audit.py", AUDIT),
        ("report.py", REPORT),
        ("tests/test_clock.py", CLOCK_TESTS),
    ];
    let breaking = CLOCK_NEW.replace("seconds=None", "seconds");
    let fenced = |code: &str| format!("```python\n{code}```");
    let turns = [
        fenced(&breaking),
        fenced(&breaking),
        fenced(CLOCK_NEW),
        fenced(AUDIT_NEW),
        fenced(REPORT),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let Some((status, report, plans, server, ws)) = run_python(
        &files,
        "give fmt_time() an optional seconds argument and have the audit line pass it",
        &turns,
        SolveConfig {
            samples: 3,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert_eq!(
        report.strategy, "edit set (function and callers)",
        "{report:#?}"
    );
    assert!(report.landed, "{report:#?}");
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(plans, vec![2], "one plan of the two changed files");
    // A third rewrite would have taken the turn the edit set writes clock.py with.
    assert!(server.requests().len() >= 5);
    let root = ws.path();
    assert_eq!(
        std::fs::read_to_string(root.join("clock.py")).unwrap(),
        CLOCK_NEW
    );
    assert_eq!(
        std::fs::read_to_string(root.join("audit.py")).unwrap(),
        AUDIT_NEW
    );
}

/// A set of the function and its callers that keeps the function's signature is no
/// candidate (the single rewrite writes such changes): the greedy set, which leaves
/// `clock.py` as it was, stops after its first file, and the next set lands.
#[tokio::test]
async fn a_callers_set_that_keeps_the_signature_is_no_candidate() {
    let files = [
        ("clock.py", CLOCK),
        ("audit.py", AUDIT),
        ("report.py", REPORT),
        ("tests/test_clock.py", CLOCK_TESTS),
    ];
    let fenced = |code: &str| format!("```python\n{code}```");
    let turns = [
        fenced(CLOCK_NEW),
        fenced(CLOCK),
        fenced(CLOCK_NEW),
        fenced(AUDIT_NEW),
        fenced(REPORT),
        fenced(CLOCK_TESTS),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let Some((status, report, plans, _, ws)) = run_python(
        &files,
        "give fmt_time() an optional seconds argument and have the audit line pass it",
        &turns,
        SolveConfig {
            samples: 2,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert!(report.landed, "{report:#?}");
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(
        report.candidates[0]
            .verdict
            .contains("keeps the signature of `fmt_time`"),
        "{report:#?}"
    );
    assert_eq!(report.chosen, Some(1), "{report:#?}");
    assert_eq!(plans, vec![2]);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("audit.py")).unwrap(),
        AUDIT_NEW
    );
}

/// A required parameter: the tests that call the function take the new argument in
/// the set too (written last, after the function), and only their calls change: the
/// model's rewrite of the test file also drops an assertion and adds a line, and
/// neither lands.
#[tokio::test]
async fn the_tests_that_call_a_changed_function_change_only_in_their_calls() {
    let files = [
        ("clock.py", CLOCK),
        ("audit.py", AUDIT),
        ("report.py", REPORT),
        ("tests/test_clock.py", CLOCK_TESTS),
    ];
    let required = CLOCK_NEW.replace("seconds=None", "seconds");
    let report_new = REPORT.replace("fmt_time(minutes)", "fmt_time(minutes, None)");
    let tests_answer = CLOCK_TESTS
        .replace("fmt_time(75)", "fmt_time(75, None)")
        .replace(
            "        self.assertEqual(report_line(\"up\", 75), \"up: 1:15\")\n",
            "        pass\n",
        );
    let tests_answer = format!("{tests_answer}\nprint('weakened')\n");
    let fenced = |code: &str| format!("```python\n{code}```");
    let turns = [
        fenced(&required),
        fenced(&required),
        fenced(&required),
        fenced(AUDIT_NEW),
        fenced(&report_new),
        fenced(&tests_answer),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let Some((status, report, plans, _, ws)) = run_python(
        &files,
        "fmt_time() must take the seconds too (required, None for none); the audit line passes them, the rest pass None",
        &turns,
        SolveConfig {
            samples: 2,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert_eq!(
        report.strategy, "edit set (function and callers)",
        "{report:#?}"
    );
    assert!(
        report.applies.contains("its tests call `fmt_time`"),
        "{}",
        report.applies
    );
    assert!(report.landed, "{report:#?}");
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(plans, vec![4], "one plan of the four changed files");
    let root = ws.path();
    assert_eq!(
        std::fs::read_to_string(root.join("clock.py")).unwrap(),
        required
    );
    assert_eq!(
        std::fs::read_to_string(root.join("tests/test_clock.py")).unwrap(),
        CLOCK_TESTS.replace("fmt_time(75)", "fmt_time(75, None)"),
        "only the call changed"
    );
}

const UPLOAD: &str = "import tomllib\n\n\ndef timeout():\n    with open(\"settings.toml\", \"rb\") as f:\n        return tomllib.load(f)[\"upload\"][\"timeout_seconds\"]\n";
const SETTINGS: &str = "[upload]\ntimeout_seconds = 30\nretries = 2\n";
const UPLOAD_TESTS: &str = "import unittest\n\nfrom upload import timeout\n\n\nclass T(unittest.TestCase):\n    def test_timeout(self):\n        self.assertGreater(timeout(), 0)\n";

/// A value in a config file: the data file the code reads, holding the key the task
/// names, is written with the code beside it, and the change lands in the data file
/// (the code, answered unchanged, stays).
#[tokio::test]
async fn a_toml_value_changes_in_the_data_file_the_code_reads() {
    let files = [
        ("upload.py", UPLOAD),
        ("settings.toml", SETTINGS),
        ("tests/test_upload.py", UPLOAD_TESTS),
    ];
    let new_settings = SETTINGS.replace("30", "90");
    let turns = [
        format!("```python\n{UPLOAD}```"),
        format!("```toml\n{new_settings}```"),
    ];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let Some((status, report, plans, _, ws)) = run_python(
        &files,
        "Uploads give up too early. Set the upload timeout to 90 seconds.",
        &turns,
        SolveConfig {
            samples: 1,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(report.strategy, "edit set (code and data)", "{report:#?}");
    assert!(
        report.applies.contains("settings.toml"),
        "{}",
        report.applies
    );
    assert_eq!(plans, vec![1], "one plan of one file");
    let root = ws.path();
    assert_eq!(
        std::fs::read_to_string(root.join("settings.toml")).unwrap(),
        new_settings
    );
    assert_eq!(
        std::fs::read_to_string(root.join("upload.py")).unwrap(),
        UPLOAD
    );
}

const COUNT: &str = "import sys\n\n\ndef main(argv):\n    lines = sys.stdin.read().splitlines()\n    print(len(lines))\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main(sys.argv[1:]))\n";
const COUNT_NEW: &str = "import argparse\nimport sys\n\n\ndef main(argv):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--blank\", action=\"store_true\")\n    args = parser.parse_args(argv)\n    lines = sys.stdin.read().splitlines()\n    if not args.blank:\n        lines = [l for l in lines if l.strip()]\n    print(len(lines))\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main(sys.argv[1:]))\n";

/// A command-line option: no keyword sends it to the tool loop any more; the short
/// script is written whole (its parsing and its use of the option together) and the
/// pick lands as one edit.
#[tokio::test]
async fn a_cli_option_is_written_into_the_script_whole() {
    let turns = [format!("```python\n{COUNT_NEW}```")];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let Some((status, report, plans, _, ws)) = run_python(
        &[("count.py", COUNT)],
        "count.py should skip blank lines unless it's given a --blank switch",
        &turns,
        SolveConfig {
            samples: 1,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(report.strategy, "rewrite", "{report:#?}");
    assert_eq!(plans, vec![1]);
    let run = |args: &[&str]| {
        use std::io::Write;
        let mut child = std::process::Command::new("python3")
            .arg("count.py")
            .args(args)
            .current_dir(ws.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"a\n\nb\n").unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    assert_eq!(run(&[]), "2\n");
    assert_eq!(run(&["--blank"]), "3\n");
}

/// Where nothing fails before, a sampled candidate that no other sample agrees with
/// is not landed: it passes only what the code passed already, and nothing else says
/// it is right. The other samples change nothing; the pipeline says why it landed
/// none, and the workspace is as it was.
#[tokio::test]
async fn a_lone_candidate_that_passes_only_what_passed_before_is_not_landed() {
    let new = format!("```python\n{COUNT_NEW}```");
    let same = format!("```python\n{COUNT}```");
    let Some((status, report, plans, _, ws)) = run_python(
        &[("count.py", COUNT)],
        "count.py should skip blank lines unless it's given a --blank switch",
        // Past `samples`, sampling goes on while no candidate is chosen (the
        // session's budget leaves time), up to four times as many.
        &[
            &[new.as_str()][..],
            &[same.as_str(); 11],
            &["No change made."],
        ]
        .concat(),
        one_at_a_time(3),
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(report.candidates.len(), 12, "{report:#?}");
    assert!(!report.landed, "{report:#?}");
    assert!(report.reason.contains("no 2 agree"), "{}", report.reason);
    assert!(plans.is_empty(), "{plans:?}");
    let text = std::fs::read_to_string(ws.path().join("count.py")).unwrap();
    assert_eq!(text, COUNT);
}

/// With `solver = "auto"`, a pipeline that drew candidates and verified none ends the
/// turn saying so: the tool loop after it (on the suite, it solved none of the tasks
/// the embedded models failed and made unverified edits) never runs, and the
/// workspace is as it was. With `pipeline`, the test above, the loop takes its turn.
#[tokio::test]
async fn an_auto_session_whose_candidates_all_fail_says_so_and_runs_no_loop() {
    let new = format!("```python\n{COUNT_NEW}```");
    let same = format!("```python\n{COUNT}```");
    let mut turns: Vec<Turn> = [&[new.as_str()][..], &[same.as_str(); 11]]
        .concat()
        .into_iter()
        .map(Turn::text)
        .collect();
    // What the loop would do next: an edit no check verified.
    turns.push(Turn::default().tool_call(
        "w1",
        "write_file",
        json!({"path": "count.py", "content": "print('junk')\n"}),
    ));
    turns.push(Turn::text("Done."));
    let Some((status, report, plans, server, ws)) = run_as(
        Solver::Auto,
        ("python3", "--version"),
        &[("count.py", COUNT)],
        "count.py should skip blank lines unless it's given a --blank switch",
        turns,
        one_at_a_time(3),
        |p| p,
    )
    .await
    else {
        return;
    };
    let Status::Done { answer } = &status else {
        panic!("{status:?}");
    };
    assert!(
        answer.starts_with("No change made: candidates pass every check"),
        "{answer}"
    );
    assert!(answer.contains("no 2 agree"), "{answer}");
    assert!(
        answer.contains("The rewrite tried count.py: the task names it (1/12 candidates compile"),
        "{answer}"
    );
    assert!(!report.landed, "{report:#?}");
    assert_eq!(server.remaining_turns(), 2, "the loop ran");
    assert!(plans.is_empty(), "{plans:?}");
    let text = std::fs::read_to_string(ws.path().join("count.py")).unwrap();
    assert_eq!(text, COUNT);
}

const UPLOADER: &str = "from batching import batches\n\n\ndef upload(records, send, size=10):\n    sent = batches(records, size)\n    for b in sent:\n        send(b)\n    return len(sent)\n";
const BATCHING: &str = "def batches(items, size):\n    out = []\n    start = 0\n    while start + size < len(items):\n        out.append(items[start:start + size])\n        start += size\n    return out\n";
const BATCHING_FIXED: &str = "def batches(items, size):\n    out = []\n    start = 0\n    while start < len(items):\n        out.append(items[start:start + size])\n        start += size\n    return out\n";
const UPLOADER_TESTS: &str = "import unittest\n\nfrom uploader import upload\n\n\nclass T(unittest.TestCase):\n    def test_last(self):\n        sent = []\n        self.assertEqual(upload(list(range(25)), sent.append), 3)\n        self.assertEqual(sent[-1], list(range(20, 25)))\n";

/// The file the task names gives way to `upload`, which its failing test calls; the
/// samples leave that as it was (two change nothing, one does not parse: the model
/// sees nothing wrong in it): the function it calls in another file is the next
/// target, found through the index, and its fix lands there; the named file stays
/// as it was.
#[tokio::test]
async fn a_target_every_sample_leaves_as_it_was_hands_over_to_what_it_calls() {
    let same = format!("```python\n{UPLOADER}```");
    let fixed = format!("```python\n{BATCHING_FIXED}```");
    let broken = "```python\ndef upload(records, send, size=10:\n    pass\n```";
    let Some((status, report, plans, _, ws)) = run_python(
        &[
            ("uploader.py", UPLOADER),
            ("batching.py", BATCHING),
            ("tests/__init__.py", ""),
            ("tests/test_uploader.py", UPLOADER_TESTS),
        ],
        "Uploads through uploader.py never send their final records: 25 of them, 10 at a time, go out as two requests, not three. Fix it.",
        // Two answers change nothing, one does not parse: nothing to change there.
        &[same.as_str(), broken, same.as_str(), fixed.as_str()],
        one_at_a_time(3),
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert_eq!(report.candidates.len(), 4, "{report:#?}");
    assert!(
        report
            .targets
            .iter()
            .any(|t| t.starts_with("batching.py: `batches`: `upload` calls it")),
        "{:?}",
        report.targets
    );
    assert_eq!(plans, [1], "{plans:?}");
    let root = ws.path();
    assert_eq!(
        std::fs::read_to_string(root.join("batching.py")).unwrap(),
        BATCHING_FIXED
    );
    assert_eq!(
        std::fs::read_to_string(root.join("uploader.py")).unwrap(),
        UPLOADER
    );
}

const NAMES: &str = "TAKEN = {\"root\", \"admin\"}\n\n\ndef register(name):\n    if not free(name):\n        raise ValueError(\"Bad name\")\n    return name\n\n\ndef free(name):\n    return name not in TAKEN\n\n\ndef check_all(names):\n    return [\"Bad name: %s\" % n for n in names if not free(n)]\n";
const NAMES_TESTS: &str = "import unittest\n\nfrom accounts.names import check_all, register\n\n\nclass T(unittest.TestCase):\n    def test_register(self):\n        self.assertEqual(register(\"ann\"), \"ann\")\n        with self.assertRaisesRegex(ValueError, \"Bad name\"):\n            register(\"root\")\n\n    def test_check(self):\n        self.assertEqual(check_all([\"x\", \"admin\"]), [\"Bad name: admin\"])\n";

/// A message reworded needs no model: the message with no value takes the one its
/// `if` tested, the `%` format keeps its verb, the tests' expected messages follow
/// (the one that names no value takes the test's string the tests agree with), and
/// it lands as one plan that passes.
#[tokio::test]
async fn a_message_is_reworded_everywhere_without_the_model() {
    let files = [
        ("accounts/__init__.py", ""),
        ("accounts/names.py", NAMES),
        ("tests/__init__.py", ""),
        ("tests/test_names.py", NAMES_TESTS),
    ];
    let Some((status, report, plans, server, ws)) = run_python(
        &files,
        "Users find our \"Bad name\" errors unhelpful. Every such message must read exactly `name 'X' is taken`, with the rejected name in place of X. Update the tests.",
        &[],
        SolveConfig::default(),
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert_eq!(plans, vec![2], "one plan of two files");
    assert!(server.requests().is_empty(), "the model was asked");
    let root = ws.path();
    let names = std::fs::read_to_string(root.join("accounts/names.py")).unwrap();
    assert_eq!(
        names,
        NAMES
            .replace("\"Bad name\")", "f\"name '{name}' is taken\")")
            .replace("\"Bad name: %s\"", "\"name '%s' is taken\"")
    );
    let tests = std::fs::read_to_string(root.join("tests/test_names.py")).unwrap();
    assert_eq!(
        tests,
        NAMES_TESTS
            .replace("\"Bad name\")", "\"name 'root' is taken\")")
            .replace("\"Bad name: admin\"", "\"name 'admin' is taken\"")
    );
    let ran = std::process::Command::new("python3")
        .args(["-B", "-m", "unittest", "discover", "-s", "tests", "-t", "."])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

const CLAMP: &str = "def clamp(x, lo, hi):\n    \"\"\"x limited to lo..hi; a ValueError when lo > hi.\"\"\"\n    if lo > hi:\n        raise ValueError(\"lo > hi\")\n    return max(lo, min(x, hi))\n";

/// Tests for code that has none: the model's answer gives the calls (its expected
/// values are wrong, one call names a variable it never set), the code as it is gives
/// the expected values, and each call's neighbours join in. The file lands, passes,
/// and fails on a broken `clamp`; `clamp.py` is untouched.
#[tokio::test]
async fn tests_written_for_code_pin_what_it_does_and_catch_a_broken_version() {
    let answer = "```python\nimport unittest\nfrom clamp import clamp\n\nclass T(unittest.TestCase):\n    def test_clamp(self):\n        self.assertEqual(clamp(5, 0, 10), 7)\n        self.assertEqual(clamp(-3, 0, 10), 0)\n        with self.assertRaises(ValueError):\n            clamp(1, 5, 0)\n        self.assertEqual(clamp(x, 0, 1), 0)\n```";
    let Some((status, report, plans, server, ws)) = run_python(
        &[("clamp.py", CLAMP)],
        "clamp.py has no tests. Write unit tests in tests/test_clamp.py that pin down what clamp promises. Do not change clamp.py.",
        &[answer],
        SolveConfig {
            samples: 1,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert_eq!(plans, vec![1], "one plan of one file");
    // The first answer is the fixture's; with the session's deadline it asks on while
    // the calls are few (the server has no more answers).
    assert!(!server.requests().is_empty(), "the model was not asked");
    let root = ws.path();
    assert_eq!(
        std::fs::read_to_string(root.join("clamp.py")).unwrap(),
        CLAMP
    );
    let tests = std::fs::read_to_string(root.join("tests/test_clamp.py")).unwrap();
    // The code's values, not the model's.
    assert!(
        tests.contains("self.assertEqual(clamp(5, 0, 10), 5)"),
        "{tests}"
    );
    assert!(!tests.contains(", 7)"), "{tests}");
    // A neighbour of a proposed call.
    assert!(
        tests.contains("self.assertEqual(clamp(5, 0, 11), 5)"),
        "{tests}"
    );
    assert!(
        tests.contains("with self.assertRaises(ValueError):\n            clamp(1, 5, 0)"),
        "{tests}"
    );
    assert!(!tests.contains("clamp(x"), "{tests}");
    let unittest = |dir: &std::path::Path| {
        std::process::Command::new("python3")
            .args(["-B", "-m", "unittest", "discover", "-s", "tests", "-q"])
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(unittest(root), "the new tests fail on the code they pin");
    // A broken clamp (no lower bound) fails them.
    std::fs::write(
        root.join("clamp.py"),
        CLAMP.replace("max(lo, min(x, hi))", "min(x, hi)"),
    )
    .unwrap();
    assert!(!unittest(root), "the new tests pass on a broken clamp");
}

const FIZZ: &str = "def fizz(n):\n    \"\"\"The word for n in the game.\n\n    >>> fizz(3)\n    'Fizz'\n    >>> fizz(10)\n    'Buzz'\n    >>> fizz(30)\n    'FizzBuzz'\n    >>> fizz(7)\n    '7'\n    \"\"\"\n    raise NotImplementedError\n";
/// Right for multiples of 3 and 5 apart, wrong for both (checks 3 first).
const FIZZ_WRONG: &str = "```python\ndef fizz(n):\n    if n % 3 == 0:\n        return \"Fizz\"\n    if n % 5 == 0:\n        return \"Buzz\"\n    if n % 15 == 0:\n        return \"FizzBuzz\"\n    return str(n)\n```";
const FIZZ_RIGHT: &str = "```python\ndef fizz(n):\n    if n % 15 == 0:\n        return \"FizzBuzz\"\n    if n % 3 == 0:\n        return \"Fizz\"\n    if n % 5 == 0:\n        return \"Buzz\"\n    return str(n)\n```";

/// No test tells the candidates apart, the docstring's examples do: the candidate
/// that fails `fizz(30)` is never chosen, though it came first.
#[tokio::test]
async fn the_docstring_examples_choose_between_candidates_no_test_tells_apart() {
    let Some((status, report, plans, _, ws)) = run_python(
        &[("fizz.py", FIZZ)],
        "Implement fizz in fizz.py.",
        &[FIZZ_WRONG, FIZZ_RIGHT],
        SolveConfig {
            samples: 2,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert!(report.reason.contains("examples"), "{}", report.reason);
    assert_eq!(report.assertions.len(), 4, "{:?}", report.assertions);
    assert_eq!(plans, vec![1]);
    let text = std::fs::read_to_string(ws.path().join("fizz.py")).unwrap();
    assert!(
        text.find("% 15").unwrap() < text.find("% 3").unwrap(),
        "{text}"
    );
}

const TOTAL: &str = "def total(xs):\n    \"\"\"The sum of xs.\"\"\"\n    t = 0\n    for i in range(len(xs) - 1):\n        t += xs[i]\n    return t\n";
/// Right, each in other words than the others.
const TOTAL_SUM: &str =
    "```python\ndef total(xs):\n    \"\"\"The sum of xs.\"\"\"\n    return sum(xs)\n```";
const TOTAL_ACC: &str = "```python\ndef total(xs):\n    \"\"\"The sum of xs.\"\"\"\n    acc = 0\n    for x in xs:\n        acc += x\n    return acc\n```";
const TOTAL_INDEX: &str = "```python\ndef total(xs):\n    \"\"\"The sum of xs.\"\"\"\n    t = 0\n    for i in range(len(xs)):\n        t += xs[i]\n    return t\n```";
/// New text, the old behaviour: it settles nothing.
const TOTAL_SAME: &str = "```python\ndef total(xs):\n    \"\"\"The sum of xs.\"\"\"\n    t = 0\n    for x in xs[:-1]:\n        t += x\n    return t\n```";

/// Where nothing fails before and no two candidates share a text, sampling stops
/// once three candidates return the same on the calls of the model's assertions
/// (and not what the code as it was returns): ten samples were asked for, four are
/// drawn (a fourth with the old behaviour in new words counts for nothing), and the
/// assertions asked for between the rounds are those the pick then uses.
#[tokio::test]
async fn sampling_stops_once_three_candidates_behave_alike() {
    let asserts = "```python\nassert total([1, 2, 3]) == 6\nassert total([]) == 0\n```";
    let Some((status, report, plans, _, ws)) = run_python(
        &[("total.py", TOTAL)],
        "total in total.py skips the last element. Fix it.",
        &[TOTAL_SUM, TOTAL_ACC, asserts, TOTAL_SAME, TOTAL_INDEX],
        one_at_a_time(10),
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(report.candidates.len(), 4, "{report:#?}");
    assert!(report.landed, "{report:#?}");
    assert_eq!(report.chosen, Some(0), "{report:#?}");
    assert!(report.reason.contains("assertions"), "{}", report.reason);
    assert_eq!(report.assertions.len(), 2, "{:?}", report.assertions);
    assert_eq!(plans, vec![1]);
    let text = std::fs::read_to_string(ws.path().join("total.py")).unwrap();
    assert!(text.contains("return sum(xs)"), "{text}");
}

/// The fixture model behind a provider that decodes several answers "together" as
/// the embedded engine does (`Provider::stream_many`): here, concurrent requests to
/// the fixture server, their events tagged by index. Counts the answers whose stream
/// was dropped before it ended: sampling stopped.
#[derive(Debug)]
struct Together {
    inner: Arc<dyn Provider>,
    dropped: Arc<std::sync::atomic::AtomicUsize>,
    /// The width of each batch asked for.
    widths: Arc<Mutex<Vec<usize>>>,
}

static DROPPED: std::sync::OnceLock<Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::OnceLock::new();
static ENDED: std::sync::OnceLock<Arc<std::sync::atomic::AtomicUsize>> = std::sync::OnceLock::new();

/// Counts its drop unless it saw its stream's end.
struct Unfinished(bool, Arc<std::sync::atomic::AtomicUsize>);

impl Unfinished {
    fn ended(&mut self) {
        self.0 = true;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.0 {
            self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl Provider for Together {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> &ModelProfile {
        self.inner.profile()
    }
    fn stream(&self, req: &ChatRequest, cancel: CancellationToken) -> EventStream {
        self.inner.stream(req, cancel)
    }
    fn stream_many(
        &self,
        req: &ChatRequest,
        samplings: &[Sampling],
        cancel: CancellationToken,
    ) -> Option<ManyStream> {
        use futures::StreamExt;
        self.widths.lock().unwrap().push(samplings.len());
        let ends = agentls_model::SequenceEnds::default();
        let streams = samplings.iter().enumerate().map(|(i, s)| {
            let mut req = req.clone();
            req.sampling = s.clone();
            let mut guard = Unfinished(false, self.dropped.clone());
            let tagged = self
                .inner
                .stream(&req, cancel.clone())
                .flat_map(move |ev| {
                    let items = match ev {
                        Ok(StreamEvent::Stop(r)) => {
                            guard.ended();
                            vec![
                                Ok(ManyEvent::Stats(i, DecodeStats::default())),
                                Ok(ManyEvent::Event(i, StreamEvent::Stop(r))),
                            ]
                        }
                        Ok(ev) => vec![Ok(ManyEvent::Event(i, ev))],
                        Err(e) => vec![Err(e)],
                    };
                    futures::stream::iter(items)
                })
                .boxed();
            // As the engine does: a sequence its reader ends stops (its answer's
            // stream dropped unfinished), with its figures and its stop.
            let ends = ends.clone();
            futures::stream::unfold(Some(tagged), move |state| {
                let ends = ends.clone();
                async move {
                    let mut inner = state?;
                    if ends.is_ended(i) {
                        let stop = StreamEvent::Stop(StopReason::Other("ended".into()));
                        let items = vec![
                            Ok(ManyEvent::Stats(i, DecodeStats::default())),
                            Ok(ManyEvent::Event(i, stop)),
                        ];
                        return Some((items, None));
                    }
                    let item = inner.next().await?;
                    Some((vec![item], Some(inner)))
                }
            })
            .flat_map(futures::stream::iter)
            .boxed()
        });
        Some(ManyStream::new(
            futures::stream::select_all(streams).boxed(),
            ends,
        ))
    }
}

static CHARACTERISED: std::sync::OnceLock<Arc<Mutex<Vec<usize>>>> = std::sync::OnceLock::new();

/// Tests for code that has none, through a provider that decodes samples together:
/// after the greedy answer, the sampled test answers come four in one batch, and the
/// calls of every one of them are pinned.
#[tokio::test]
async fn sampled_test_answers_are_decoded_together_and_all_their_calls_pinned() {
    let answer = |call: &str| {
        format!(
            "```python\nimport unittest\nfrom clamp import clamp\n\nclass T(unittest.TestCase):\n    def test_clamp(self):\n        self.assertEqual({call}, 0)\n```"
        )
    };
    let calls = [
        "clamp(5, 0, 10)",
        "clamp(-7, 0, 3)",
        "clamp(40, 2, 9)",
        "clamp(6, 6, 6)",
        "clamp(-2, -5, -1)",
    ];
    // Five answers: the greedy one and a batch of four. The batch of three asked
    // next (the calls are still few) finds none: the server has no more.
    let turns = calls.iter().map(|c| Turn::text(answer(c))).collect();
    let widths = CHARACTERISED.get_or_init(Arc::default).clone();
    let Some((status, report, _plans, server, ws)) = run_python_with(
        &[("clamp.py", CLAMP)],
        "clamp.py has no tests. Write unit tests in tests/test_clamp.py that pin down what clamp promises. Do not change clamp.py.",
        turns,
        SolveConfig {
            samples: 2,
            ..SolveConfig::default()
        },
        |inner| {
            Arc::new(Together {
                inner,
                dropped: Arc::default(),
                widths: CHARACTERISED.get_or_init(Arc::default).clone(),
            })
        },
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert_eq!(
        widths.lock().unwrap().first(),
        Some(&4),
        "the samples after the greedy answer were not asked together"
    );
    // Answers asked count whether or not they came: eight in all (samples 2, four
    // times as many at most), not a loop asking on until the deadline.
    assert_eq!(server.requests().len(), 8, "{:?}", widths.lock().unwrap());
    let tests = std::fs::read_to_string(ws.path().join("tests/test_clamp.py")).unwrap();
    // Each answer's call, with the value the code returns.
    for (call, value) in calls.iter().zip([5, 0, 9, 6, -2]) {
        assert!(
            tests.contains(&format!("self.assertEqual({call}, {value})")),
            "{call} in {tests}"
        );
    }
}

/// A wrong answer written slowly: about 20 s.
fn slow_wrong() -> Turn {
    Turn::text(WRONG)
        .chunked(2)
        .frame_delay(std::time::Duration::from_millis(500))
}

/// `add` to fix in calc.py, its tests beside it, through the batching provider `wrap`.
async fn calc_batched(turns: Vec<Turn>, wrap: fn(Arc<dyn Provider>) -> Arc<dyn Provider>) -> Ran {
    run_python_with(
        &[("calc.py", CALC), ("test_calc.py", TESTS)],
        "add returns the difference; it should return the sum",
        turns,
        SolveConfig::default(),
        wrap,
    )
    .await
}

/// With a provider that decodes samples together, the samples after the greedy one
/// come as one batch, each checked as soon as it is complete: the first to turn the
/// failing test green lands and the rest of the batch, still being written slowly,
/// is dropped rather than waited for.
#[tokio::test]
async fn a_batch_of_samples_is_checked_as_each_completes_and_dropped_once_one_is_green() {
    let turns = vec![
        Turn::text(WRONG),
        Turn::text(GOOD),
        slow_wrong(),
        slow_wrong(),
        slow_wrong(),
        slow_wrong(),
    ];
    let dropped = DROPPED.get_or_init(Arc::default).clone();
    let Some((status, report, plans, _server, ws)) = calc_batched(turns, |inner| {
        Arc::new(Together {
            inner,
            dropped: DROPPED.get_or_init(Arc::default).clone(),
            widths: Arc::default(),
        })
    })
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{report:?}");
    assert!(report.landed, "{report:?}");
    assert_eq!(plans, vec![1], "one plan of one file");
    let root = ws.path();
    assert_eq!(
        std::fs::read_to_string(root.join("calc.py")).unwrap(),
        FIXED
    );
    // The greedy answer alone, then the batch's first (the good one): two checked.
    assert_eq!(report.candidates.len(), 2, "{:#?}", report.candidates);
    assert!(report.candidates[1].passes && report.candidates[1].temperature > 0.0);
    assert_eq!(
        dropped.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "the four slow answers were dropped unfinished"
    );
}

/// An answer that writes the function asked for and then goes on (examples, slowly)
/// is checked once the function is written: its sequence is ended in the engine, not
/// decoded to its end, and it lands.
#[tokio::test]
async fn an_answer_that_goes_on_past_its_function_is_ended_and_checked() {
    // The fixed `add` at once, then 40 lines of examples, a line every 0.5 s.
    let examples: String = (0..40).map(|i| format!("print(add({i}, {i}))\n")).collect();
    let (head, tail) = GOOD.split_at(GOOD.len() - 3);
    let goes_on = Turn::text(format!("{head}\n\n{examples}{tail}"))
        .chunked(20)
        .frame_delay(std::time::Duration::from_millis(500));
    let turns = vec![
        Turn::text(WRONG),
        goes_on,
        slow_wrong(),
        slow_wrong(),
        slow_wrong(),
        slow_wrong(),
    ];
    let dropped = ENDED.get_or_init(Arc::default).clone();
    let Some((status, report, _plans, _server, ws)) = calc_batched(turns, |inner| {
        Arc::new(Together {
            inner,
            dropped: ENDED.get_or_init(Arc::default).clone(),
            widths: Arc::default(),
        })
    })
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{report:?}");
    assert!(report.landed, "{report:?}");
    let text = std::fs::read_to_string(ws.path().join("calc.py")).unwrap();
    assert!(
        text.contains("return a + b") && !text.contains("print("),
        "{text}"
    );
    assert!(report.candidates[1].passes, "{:#?}", report.candidates);
    // The answer that went on was stopped, not read to its end: with the four slow
    // ones, five streams dropped unfinished.
    assert_eq!(dropped.load(std::sync::atomic::Ordering::SeqCst), 5);
}

/// A solve with the task's checks on, whose checks need `tool`: the fixture model
/// answers `checks`, then the `wrong` candidate three times, then `right`.
async fn three_wrong_then_right(
    tool: (&str, &str),
    files: &[(&str, &str)],
    task: &str,
    [checks, wrong, right]: [&str; 3],
) -> Ran {
    let turns = [checks, wrong, wrong, wrong, right];
    let solve = SolveConfig {
        samples: 4,
        task_checks: true,
        ..SolveConfig::default()
    };
    let turns = turns.iter().map(|t| Turn::text(*t)).collect();
    run_with(tool, files, task, turns, solve, |p| p).await
}

/// The fourth candidate landed, alone, through the task's checks, with `kept` the one
/// check kept.
fn the_fourth_landed_by_the_check(ran: &(Status, SolveReport, Vec<usize>), kept: &str) {
    let (status, report, plans) = ran;
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert!(report.reason.contains("task's values"), "{}", report.reason);
    assert_eq!(report.assertions, vec![kept]);
    assert_eq!(report.chosen, Some(3), "{report:#?}");
    assert_eq!(*plans, vec![1]);
}

const VERSIONS: &str = "def index(versions, v):\n    \"\"\"The position of v in versions (sorted oldest first), or -1.\"\"\"\n    lo, hi = 0, len(versions)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if versions[mid] < v:\n            lo = mid + 1\n        else:\n            hi = mid\n    return lo if lo < len(versions) and versions[lo] == v else -1\n";
const VERSIONS_TESTS: &str = "import unittest\n\nfrom versions import index\n\n\nclass T(unittest.TestCase):\n    def test_found(self):\n        self.assertEqual(index([\"1.0.0\", \"1.2.0\"], \"1.2.0\"), 1)\n\n    def test_missing(self):\n        self.assertEqual(index([\"1.0.0\"], \"2.0.0\"), -1)\n";
/// A candidate that still compares versions as text: it passes the visible tests.
const VERSIONS_WRONG: &str = "```python\ndef index(versions, v):\n    \"\"\"The position of v in versions (sorted oldest first), or -1.\"\"\"\n    lo, hi = 0, len(versions)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if versions[mid] >= v:\n            hi = mid\n        else:\n            lo = mid + 1\n    return lo if lo < len(versions) and versions[lo] == v else -1\n```";
const VERSIONS_RIGHT: &str = "```python\ndef index(versions, v):\n    \"\"\"The position of v in versions (sorted oldest first), or -1.\"\"\"\n    key = lambda s: tuple(int(p) for p in s.split(\".\"))\n    lo, hi = 0, len(versions)\n    while lo < hi:\n        mid = (lo + hi) // 2\n        if key(versions[mid]) < key(v):\n            lo = mid + 1\n        else:\n            hi = mid\n    return lo if lo < len(versions) and versions[lo] == v else -1\n```";

/// Where the visible tests pass already and the task states values, the model's
/// checks of those values decide: three candidates that agree on comparing versions
/// as text (and would settle the pick between them) fail the check the task's
/// example gives, so sampling goes on and the fourth, which passes it, lands.
#[tokio::test]
async fn checks_from_the_task_values_outvote_candidates_that_agree_on_being_wrong() {
    let checks = "```python\nassert index([\"1.0.0\", \"1.2.0\", \"1.10.0\"], \"1.10.0\") == 2\nassert index([\"1.0.0\"], \"1.0.0\") == 0\nassert index([\"1.0.0\"], \"1.0.0\") == undefined_name\n```";
    let Some((status, report, plans, _, ws)) = three_wrong_then_right(
        ("python3", "--version"),
        &[("versions.py", VERSIONS), ("test_versions.py", VERSIONS_TESTS)],
        "index cannot find some versions that are in the list: with the releases 1.0.0, 1.2.0, 1.10.0, looking up 1.10.0 returns -1. Fix it.",
        [checks, VERSIONS_WRONG, VERSIONS_RIGHT],
    )
    .await
    else {
        return;
    };
    // Only the check the code as it was fails is kept: the one it passes says
    // nothing, the one that names nothing compares nothing.
    the_fourth_landed_by_the_check(
        &(status, report, plans),
        "index([\"1.0.0\", \"1.2.0\", \"1.10.0\"], \"1.10.0\") == 2",
    );
    let text = std::fs::read_to_string(ws.path().join("versions.py")).unwrap();
    assert!(text.contains("int(p)"), "{text}");
}

const GO_VERSIONS: &str = "package versions\n\n// Index is the position of v in sorted (oldest first), or -1.\nfunc Index(sorted []string, v string) int {\n\tlo, hi := 0, len(sorted)\n\tfor lo < hi {\n\t\tmid := (lo + hi) / 2\n\t\tif sorted[mid] < v {\n\t\t\tlo = mid + 1\n\t\t} else {\n\t\t\thi = mid\n\t\t}\n\t}\n\tif lo < len(sorted) && sorted[lo] == v {\n\t\treturn lo\n\t}\n\treturn -1\n}\n";
const GO_VERSIONS_TESTS: &str = "package versions\n\nimport \"testing\"\n\nfunc TestFound(t *testing.T) {\n\tif got := Index([]string{\"1.0.0\", \"1.2.0\"}, \"1.2.0\"); got != 1 {\n\t\tt.Fatalf(\"got %d\", got)\n\t}\n}\n";
/// A Go candidate that still compares versions as text.
const GO_VERSIONS_WRONG: &str = "```go\nfunc Index(sorted []string, v string) int {\n\tfor i, s := range sorted {\n\t\tif s == v && s <= v {\n\t\t\treturn i\n\t\t}\n\t\tif s > v {\n\t\t\tbreak\n\t\t}\n\t}\n\treturn -1\n}\n```";
const GO_VERSIONS_RIGHT: &str = "```go\nfunc Index(sorted []string, v string) int {\n\tfor i, s := range sorted {\n\t\tif s == v {\n\t\t\treturn i\n\t\t}\n\t}\n\treturn -1\n}\n```";

/// The same in Go, the checks probed in a test file laid beside the package: a
/// check the compiler rejects (a method that does not exist) is dropped, the one the
/// code as it was fails is kept, and the candidate that passes it lands though two
/// earlier ones agree.
#[tokio::test]
async fn go_checks_from_the_task_values_are_probed_in_the_package() {
    let checks = "```go\nif got := Index([]string{\"1.0.0\", \"1.2.0\", \"1.10.0\"}, \"1.10.0\"); got != 2 {\ncheck(Index([]string{\"1.0.0\"}, \"1.0.0\"), 0)\nif Index([]string{\"1.0.0\"}, \"1.0.0\").Missing() != 0 {\n```";
    let Some((status, report, plans, _, ws)) = three_wrong_then_right(
        ("go", "version"),
        &[
            ("go.mod", "module example.com/v\n\ngo 1.19\n"),
            ("versions/versions.go", GO_VERSIONS),
            ("versions/versions_test.go", GO_VERSIONS_TESTS),
        ],
        "versions.Index cannot find some versions that are in the list: with the releases 1.0.0, 1.2.0, 1.10.0, looking up 1.10.0 returns -1. Fix it.",
        [checks, GO_VERSIONS_WRONG, GO_VERSIONS_RIGHT],
    )
    .await
    else {
        return;
    };
    the_fourth_landed_by_the_check(
        &(status, report, plans),
        "Index([]string{\"1.0.0\", \"1.2.0\", \"1.10.0\"}, \"1.10.0\") == 2",
    );
    let text = std::fs::read_to_string(ws.path().join("versions/versions.go")).unwrap();
    assert!(!text.contains("s > v"), "{text}");
    // The probe file never reaches the workspace.
    assert!(!ws.path().join("versions/agentls_checks_test.go").exists());
}

/// A wrong check (here `== 3`) leaves no candidate passing them all: once sampling
/// ends, the candidate that passes the most of the task's checks (one of two) is
/// chosen over three that pass none.
#[tokio::test]
async fn with_a_wrong_check_the_candidate_passing_the_most_task_checks_lands() {
    let checks = "```python\nassert index([\"1.0.0\", \"1.2.0\", \"1.10.0\"], \"1.10.0\") == 2\nassert index([\"1.0.0\", \"1.10.0\"], \"1.10.0\") == 3\n```";
    let Some((status, report, _, _, ws)) = run_python(
        &[("versions.py", VERSIONS), ("test_versions.py", VERSIONS_TESTS)],
        "index cannot find some versions that are in the list: with the releases 1.0.0, 1.2.0, 1.10.0, looking up 1.10.0 returns -1. Fix it.",
        &[
            checks,
            VERSIONS_WRONG,
            VERSIONS_RIGHT,
            VERSIONS_WRONG,
            VERSIONS_WRONG,
        ],
        SolveConfig {
            samples: 4,
            task_checks: true,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert!(
        report.reason.contains("passes the most (1)"),
        "{}",
        report.reason
    );
    assert_eq!(report.chosen, Some(1), "{report:#?}");
    let text = std::fs::read_to_string(ws.path().join("versions.py")).unwrap();
    assert!(text.contains("int(p)"), "{text}");
}

const RS_ROLLING: &str = "/// The sum of every window of `width` consecutive values.\npub fn rolling_sums(values: &[i64], width: usize) -> Vec<i64> {\n    if width == 0 || width > values.len() {\n        return Vec::new();\n    }\n    let mut sum: i64 = values[..width].iter().sum();\n    let mut out = vec![sum];\n    for i in width..values.len() - 1 {\n        sum += values[i] - values[i - width];\n        out.push(sum);\n    }\n    out\n}\n";
/// A Rust candidate that still drops the newest window.
const RS_ROLLING_WRONG: &str = "```rust\npub fn rolling_sums(values: &[i64], width: usize) -> Vec<i64> {\n    if width == 0 || width > values.len() {\n        return vec![];\n    }\n    let mut sum: i64 = values[..width].iter().sum();\n    let mut out = vec![sum];\n    for i in width..values.len() - 1 {\n        sum += values[i] - values[i - width];\n        out.push(sum);\n    }\n    out\n}\n```";
const RS_ROLLING_RIGHT: &str = "```rust\npub fn rolling_sums(values: &[i64], width: usize) -> Vec<i64> {\n    if width == 0 || width > values.len() {\n        return Vec::new();\n    }\n    values.windows(width).map(|w| w.iter().sum()).collect()\n}\n```";

/// The same in Rust, the checks probed in an integration test laid in `tests/`: the
/// wrong candidates agree, the right one passes the task's check and lands.
#[tokio::test]
async fn rust_checks_from_the_task_values_are_probed_as_an_integration_test() {
    let checks = "```rust\nassert_eq!(rolling_sums(&[1, 2, 3, 4], 2), vec![3, 5, 7]);\nassert_eq!(rolling_sums(&[1, 2], 0), vec![]);\n```";
    let Some((status, report, plans, _, ws)) = three_wrong_then_right(
        ("cargo", "--version"),
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"rolling\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            ("src/lib.rs", RS_ROLLING),
        ],
        "rolling_sums drops the newest window: rolling_sums(&[1, 2, 3, 4], 2) gives [3, 5] where it should give [3, 5, 7]. Fix it.",
        [checks, RS_ROLLING_WRONG, RS_ROLLING_RIGHT],
    )
    .await
    else {
        return;
    };
    // `vec![]` has no type of its own: the compiler rejects that check.
    the_fourth_landed_by_the_check(
        &(status, report, plans),
        "rolling_sums(&[1, 2, 3, 4], 2) == vec![3, 5, 7]",
    );
    let text = std::fs::read_to_string(ws.path().join("src/lib.rs")).unwrap();
    assert!(text.contains("windows(width)"), "{text}");
    assert!(!ws.path().join("tests/agentls_checks.rs").exists());
}

/// Checks no different candidate passes are doubted once three such candidates
/// pass every test: they stop holding the pick open, and candidates that agree
/// settle it again (five answers asked for, not the eight allowed).
#[tokio::test]
async fn checks_that_no_candidate_passes_stop_deciding() {
    let checks = "```python\nassert index([\"1.0.0\", \"1.10.0\"], \"1.10.0\") == 7\n```";
    let other =
        VERSIONS_WRONG.replace("    return lo if", "    # Found, or not.\n    return lo if");
    let third = VERSIONS_WRONG.replace(
        "\"\"\"The position",
        "# Binary search.\n    \"\"\"The position",
    );
    let Some((status, report, _, _, _ws)) = run_python(
        &[("versions.py", VERSIONS), ("test_versions.py", VERSIONS_TESTS)],
        "index cannot find some versions that are in the list: with the releases 1.0.0, 1.2.0, 1.10.0, looking up 1.10.0 returns -1. Fix it.",
        &[checks, VERSIONS_WRONG, &other, &third, VERSIONS_WRONG, VERSIONS_WRONG],
        SolveConfig {
            samples: 8,
            task_checks: true,
            ..SolveConfig::default()
        },
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert_eq!(report.candidates.len(), 5, "{report:#?}");
    assert!(report.reason.contains("agree"), "{}", report.reason);
}

const SCHEDULE: &str = "def merge(bookings):\n    merged = []\n    for start, end in sorted(bookings):\n        if merged and start <= merged[-1][1]:\n            merged[-1] = (merged[-1][0], end)\n        else:\n            merged.append((start, end))\n    return merged\n\n\ndef free_slots(bookings, day_end=100):\n    slots, cursor = [], 0\n    for start, end in merge(bookings):\n        if start > cursor:\n            slots.append((cursor, start))\n        cursor = max(cursor, end)\n    if cursor < day_end:\n        slots.append((cursor, day_end))\n    return slots\n";
const MERGE_FIXED: &str = "def merge(bookings):\n    merged = []\n    for start, end in sorted(bookings):\n        if merged and start <= merged[-1][1]:\n            merged[-1] = (merged[-1][0], max(merged[-1][1], end))\n        else:\n            merged.append((start, end))\n    return merged\n";
const SCHEDULE_TESTS: &str = "import unittest\n\nfrom schedule import free_slots, merge\n\n\nclass T(unittest.TestCase):\n    def test_free(self):\n        self.assertEqual(free_slots([(10, 20)]), [(0, 10), (20, 100)])\n\n    def test_inside(self):\n        self.assertEqual(merge([(10, 50), (20, 30)]), [(10, 50)])\n";

/// A task told by a failing test names no function, so localisation takes the file;
/// the failing run names `test_inside`, which calls `merge`, and the model is asked
/// for that one function (a function's tokens a sample, not the file's): its answer
/// lands spliced into the file, the rest of the file kept.
#[tokio::test]
async fn a_failing_test_narrows_the_file_to_the_function_it_calls() {
    let fixed = format!("```python\n{MERGE_FIXED}```");
    let Some((status, report, plans, server, ws)) = run_python(
        &[
            ("schedule.py", SCHEDULE),
            ("tests/__init__.py", ""),
            ("tests/test_schedule.py", SCHEDULE_TESTS),
        ],
        "test_schedule.py fails: a booking that lies inside another one loses part of the day. Find the cause and fix it.",
        &[fixed.as_str(), fixed.as_str(), fixed.as_str()],
        one_at_a_time(3),
    )
    .await
    else {
        return;
    };
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(report.landed, "{report:#?}");
    assert_eq!(
        report.targets,
        ["schedule.py: `merge`: the failing test `test_inside` calls it"],
        "{report:#?}"
    );
    assert_eq!(plans, [1], "{plans:?}");
    let asked = server.requests()[0].body.to_string();
    assert!(
        asked.contains("the function `merge`"),
        "the model was asked for more than the function: {asked}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("schedule.py")).unwrap(),
        SCHEDULE.replacen(
            "(merged[-1][0], end)",
            "(merged[-1][0], max(merged[-1][1], end))",
            1
        )
    );
}
