//! End to end with the tools crate's real tools: grep, read, edit in each edit format
//! (a failed edit reported and retried), run the check in the sandbox, see it fail,
//! fix, see it pass; edits land on disk through the DiskSink.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agentls_agent::{Session, SessionConfig, StaticContext, Status, ToolSet};
use agentls_model::{EditFormat, ModelProfile, WireFormat};
use agentls_sandbox::{Decision, Policy, Sandbox, SandboxConfig};
use agentls_testkit::model_server::{ModelServer, Turn};
use common::{call, provider, tool_messages, workspace};
use serde_json::{Value, json};

const CHECK: &str = "grep -q 'a + b' src/lib.rs && echo 'test tests::adds ... ok' || { echo 'test tests::adds ... FAILED'; exit 1; }\n";

async fn run(format: EditFormat, fix: Turn) -> (ModelServer, tempfile::TempDir, Status) {
    let profile = ModelProfile {
        edit_format: format,
        ..ModelProfile::default()
    };
    run_as(profile, fix).await
}

async fn run_as(profile: ModelProfile, fix: Turn) -> (ModelServer, tempfile::TempDir, Status) {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("check.sh"), CHECK).unwrap();
    server.push_turn(call("c1", "grep", json!({"pattern": "fn add"})));
    server.push_turn(call("c2", "read_file", json!({"path": "src/lib.rs"})));
    server.push_turn(call("c3", "run_command", json!({"command": "sh check.sh"})));
    server.push_turn(fix);
    server.push_turn(call("c5", "run_command", json!({"command": "sh check.sh"})));
    server.push_turn(Turn::text("Fixed add; check passes."));

    let ctx = sandboxed(ws.path());
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let mut s = Session::new(
        provider(&server, WireFormat::OpenaiChat, profile),
        tools,
        ctx,
        SessionConfig::default(),
        static_ctx,
    );
    let status = s.run("Make the check pass.").await;
    (server, ws, status)
}

/// A tool context whose commands run in the real sandbox, every command allowed.
fn sandboxed(root: &std::path::Path) -> agentls_tools::ToolContext {
    let mut ctx = agentls_tools::ToolContext::on_disk(root);
    ctx.sandbox = Some(Arc::new(Sandbox::new(SandboxConfig::new(root)).unwrap()));
    ctx.policy = Arc::new(Policy::new(Decision::Allow));
    ctx
}

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn check_run(server: &ModelServer, ws: &tempfile::TempDir, status: Status) {
    assert_eq!(
        status,
        Status::Done {
            answer: "Fixed add; check passes.".into()
        }
    );
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
    let reqs = server.requests();
    let results = tool_messages(&reqs.last().unwrap().body);
    assert_eq!(results.len(), 5, "{results:?}");
    assert!(
        results[0].contains("src/lib.rs"),
        "grep found it: {results:?}"
    );
    assert!(results[1].contains("a - b"), "read it: {results:?}");
    assert!(
        results[2].contains("FAILED"),
        "saw the failure: {results:?}"
    );
    assert!(
        results[4].contains("tests::adds ... ok"),
        "saw the pass: {results:?}"
    );
}

#[tokio::test]
async fn str_replace_model_fixes_the_crate() {
    let fix = call(
        "c4",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    );
    let (server, ws, status) = run(EditFormat::StrReplace, fix).await;
    let names = offered(&server.requests()[0].body);
    assert!(
        names.contains(&"str_replace".to_owned()) && !names.contains(&"apply_patch".to_owned()),
        "{names:?}"
    );
    check_run(&server, &ws, status);
}

/// The lean profile (the embedded models') offers the lean tools only (and the prompt
/// lists the files), and they do the whole job: find, read, run, edit, run.
#[tokio::test]
async fn compact_model_gets_the_lean_tools_and_fixes_the_crate() {
    let fix = call(
        "c4",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    );
    // The embedded models' profile is the lean one.
    let profile = lean_loop();
    assert!(profile.lean_tools);
    let (server, ws, status) = run_as(profile, fix).await;
    let body = &server.requests()[0].body;
    let mut names = offered(body);
    names.sort();
    let mut lean: Vec<String> = agentls_agent::toolset::LEAN
        .iter()
        .map(|n| (*n).to_owned())
        .collect();
    lean.sort();
    assert_eq!(names, lean);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("- src/lib.rs\n"), "{system}");
    check_run(&server, &ws, status);
}

/// The lean profile's prompt lists only the workspace's first files; when there are more,
/// the files semantic search finds for the task follow it, so a small model starts from
/// the files that matter. Other profiles, which have `semantic_search`, get no note.
#[tokio::test]
async fn a_lean_model_is_told_the_files_semantic_search_finds_for_its_task() {
    let ws = workspace();
    for i in 0..agentls_agent::context::LISTED_FILES + 5 {
        std::fs::write(
            ws.path().join(format!("src/filler_{i:02}.rs")),
            format!("pub fn filler_{i}() -> u32 {{ {i} }}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(ws.path().join("zz/net")).unwrap();
    std::fs::write(
        ws.path().join("zz/net/upload.rs"),
        "/// Tries again when the server drops a file.\npub fn retry_failed_upload(attempts: u32) -> u32 {\n    attempts\n}\n",
    )
    .unwrap();
    let task = "Retry failed uploads one time more.";
    let first_user = |profile: ModelProfile| {
        let root = ws.path().to_path_buf();
        async move {
            let server = ModelServer::start().await.unwrap();
            // The lean workflow sends an answer without an edit back once.
            for _ in 0..6 {
                server.push_turn(Turn::text("Nothing to change."));
            }
            let ctx = sandboxed(&root);
            ctx.index
                .write()
                .unwrap()
                .crawl(&root, &agentls_index::Overlay::new());
            let static_ctx = StaticContext::gather(&root, &[]).await;
            let system_lists_it = system_of(&static_ctx, &profile).contains("zz/net/upload.rs");
            let mut s = Session::new(
                provider(&server, WireFormat::OpenaiChat, profile),
                ToolSet::from_registry(&agentls_tools::Registry::standard()),
                ctx,
                SessionConfig::default(),
                static_ctx,
            );
            s.run(task).await;
            let body = &server.requests()[0].body;
            let messages = body["messages"].as_array().unwrap();
            let user = messages.last().unwrap()["content"].to_string();
            // A follow-up is not a new task: no files are looked up for it, even when its
            // words would find some.
            let asked = server.requests().len();
            s.run("and retry failed uploads twice").await;
            let body = &server.requests()[asked].body;
            let messages = body["messages"].as_array().unwrap();
            let follow_up = messages.last().unwrap()["content"].to_string();
            assert!(follow_up.contains("twice"), "{follow_up}");
            assert!(!follow_up.contains("Files that may matter"), "{follow_up}");
            (system_lists_it, user)
        }
    };
    let (listed, user) = first_user(lean_loop()).await;
    assert!(!listed, "beyond the prompt's list");
    assert!(user.contains(task), "{user}");
    assert!(
        user.contains(
            "Files that may matter for this task (semantic search on it): zz/net/upload.rs"
        ),
        "{user}"
    );
    let (_, user) = first_user(ModelProfile::default()).await;
    assert!(!user.contains("Files that may matter"), "{user}");
}

/// The embedded models' profile (the lean one) held to the tool loop: these tests are
/// about the loop, which the embedded models otherwise take only after the pipeline.
fn lean_loop() -> ModelProfile {
    ModelProfile {
        solver: agentls_model::Solver::Loop,
        ..agentls_model::local::profile(4096)
    }
}

fn system_of(ctx: &StaticContext, profile: &ModelProfile) -> String {
    agentls_agent::context::system_prompt(profile, agentls_agent::Mode::Agent, ctx)
}

/// The lean profile holds a small model to its workflow: an edit of a file it never read
/// is answered with the file instead of being made; an answer with no edit in the run,
/// and one after an edit nothing checked, each go back once per run; so does an answer
/// that copies a tool result.
#[tokio::test]
async fn a_lean_model_reads_before_it_edits_and_is_held_to_its_workflow() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("check.sh"), CHECK).unwrap();
    // A piece of a line, not whole lines: a guess unless the model has seen the file.
    let fix = json!({"path": "src/lib.rs", "old_string": "- b", "new_string": "+ b"});
    server.push_turn(call("c1", "str_replace", fix.clone()));
    server.push_turn(Turn::text("No changes needed."));
    server.push_turn(call("c2", "str_replace", fix));
    // A copy of the tool result is not an answer.
    server.push_turn(Turn::text("Edited src/lib.rs (1 change)"));
    server.push_turn(Turn::text("Fixed."));
    server.push_turn(call("c3", "run_command", json!({"command": "sh check.sh"})));
    server.push_turn(Turn::text("Fixed add; check passes."));
    // A second run: held once more, since each run starts over; a second unchecked
    // answer stands.
    server.push_turn(Turn::text("Nothing to do."));
    server.push_turn(Turn::text("Nothing to do: add already adds."));
    // A third run asks a question: an answer without an edit is what it wants.
    server.push_turn(Turn::text("It adds a and b."));

    let ctx = sandboxed(ws.path());
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let mut s = Session::new(
        provider(&server, WireFormat::OpenaiChat, lean_loop()),
        tools,
        ctx,
        SessionConfig::default(),
        static_ctx,
    );
    let status = s.run("Make the check pass.").await;
    assert_eq!(
        status,
        Status::Done {
            answer: "Fixed add; check passes.".into()
        }
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 7);
    let blind = tool_messages(&reqs[1].body);
    assert!(
        blind[0].contains("this edit was not made") && blind[0].contains("     2\t    a - b"),
        "the file instead of the edit: {blind:?}"
    );
    let last_user = |i: usize| {
        let messages = reqs[i].body["messages"].as_array().unwrap();
        messages.last().unwrap()["content"].to_string()
    };
    assert!(
        last_user(2).contains("You answered without changing any file"),
        "{}",
        last_user(2)
    );
    assert!(
        last_user(4).contains("repeated a tool result"),
        "{}",
        last_user(4)
    );
    assert!(
        last_user(5).contains("ran nothing after the last change"),
        "{}",
        last_user(5)
    );
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );

    let status = s.run("Check the crate again.").await;
    assert_eq!(
        status,
        Status::Done {
            answer: "Nothing to do: add already adds.".into()
        }
    );
    assert_eq!(server.requests().len(), 9);

    let status = s.run("What does add do now?").await;
    assert_eq!(
        status,
        Status::Done {
            answer: "It adds a and b.".into()
        }
    );
    assert_eq!(server.requests().len(), 10);
}

#[tokio::test]
async fn apply_patch_model_fixes_the_crate() {
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@ pub fn add(a: i32, b: i32) -> i32 {\n-    a - b\n+    a + b\n }\n*** End Patch\n";
    let fix = call("c4", "apply_patch", json!({"patch": patch}));
    let (server, ws, status) = run(EditFormat::ApplyPatch, fix).await;
    let names = offered(&server.requests()[0].body);
    assert!(
        names.contains(&"apply_patch".to_owned()) && !names.contains(&"str_replace".to_owned()),
        "{names:?}"
    );
    check_run(&server, &ws, status);
}

#[tokio::test]
async fn a_failed_real_edit_is_reported_and_retried() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    server.push_turn(call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a-b", "new_string": "a + b"}),
    ));
    server.push_turn(call(
        "c2",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    ));
    server.push_turn(Turn::text("done"));
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let mut s = Session::new(
        provider(&server, WireFormat::Anthropic, ModelProfile::default()),
        tools,
        agentls_tools::ToolContext::on_disk(ws.path()),
        SessionConfig::default(),
        static_ctx,
    );
    assert_eq!(
        s.run("fix").await,
        Status::Done {
            answer: "done".into()
        }
    );
    assert_eq!(
        s.metrics().errors_by_class.get("InvalidArguments"),
        Some(&1)
    );
    let body = server.requests()[1].body.to_string();
    assert!(
        body.contains("is_error") && body.contains("InvalidArguments"),
        "{body}"
    );
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
}

/// A command's output reaches the events while it runs (in the real sandbox), and the
/// plan comes out when the todo tool changes it.
#[tokio::test]
async fn command_output_and_the_plan_stream_out_as_events() {
    use agentls_agent::{Event, PlanItem};
    use std::time::{Duration, Instant};

    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    server.push_turn(call(
        "p1",
        "todo",
        json!({"todos": [{"content": "run it", "status": "in_progress"}]}),
    ));
    server.push_turn(call(
        "r1",
        "run_command",
        json!({"command": "echo first; sleep 0.3; echo second >&2"}),
    ));
    server.push_turn(Turn::text("ran"));
    let ctx = sandboxed(ws.path());
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut s = Session::new(
        provider(&server, WireFormat::OpenaiChat, ModelProfile::default()),
        tools,
        ctx,
        SessionConfig::default(),
        static_ctx,
    )
    .with_events(tx);
    let start = Instant::now();
    let collect = async {
        let mut seen = Vec::new();
        while let Some(ev) = rx.recv().await {
            seen.push((start.elapsed(), ev));
        }
        seen
    };
    let run = async {
        let status = s.run("run it").await;
        drop(s); // the session holds the sender: let the collector end
        status
    };
    let (status, seen) = tokio::join!(run, collect);
    assert_eq!(
        status,
        Status::Done {
            answer: "ran".into()
        }
    );

    let plan = seen.iter().find_map(|(_, e)| match e {
        Event::Plan { items } => Some(items.clone()),
        _ => None,
    });
    assert_eq!(
        plan,
        Some(vec![PlanItem {
            text: "run it".into(),
            status: "in_progress".into()
        }])
    );
    let output: Vec<(Duration, String, String)> = seen
        .iter()
        .filter_map(|(at, e)| match e {
            Event::ToolOutput { id, stream, text } if id == "r1" => {
                Some((*at, stream.clone(), text.clone()))
            }
            _ => None,
        })
        .collect();
    let finished_at = seen
        .iter()
        .find_map(|(at, e)| match e {
            Event::ToolFinished { id, .. } if id == "r1" => Some(*at),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        output
            .iter()
            .map(|(_, s, t)| (s.as_str(), t.as_str()))
            .collect::<Vec<_>>(),
        vec![("stdout", "first\n"), ("stderr", "second\n")]
    );
    assert!(
        output[0].0 + Duration::from_millis(200) < finished_at,
        "first output at {:?}, the call finished at {finished_at:?}",
        output[0].0
    );
}

/// Issue 15 at the session level: the model reads a file, something else adds a line to
/// it, the model writes the whole file from its read. The added line survives and the
/// model is told its content was merged.
#[tokio::test]
async fn a_whole_file_write_after_a_concurrent_change_keeps_that_change() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    server.push_turn(call("c1", "read_file", json!({"path": "src/lib.rs"})));
    server.push_turn(call(
        "c2",
        "run_command",
        json!({"command": "printf '// added by the user\\n' >> src/lib.rs"}),
    ));
    server.push_turn(call(
        "c3",
        "write_file",
        json!({"path": "src/lib.rs", "content": "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"}),
    ));
    server.push_turn(Turn::text("Rewrote add."));
    let ctx = sandboxed(ws.path());
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let mut s = Session::new(
        provider(&server, WireFormat::OpenaiChat, ModelProfile::default()),
        tools,
        ctx,
        SessionConfig::default(),
        static_ctx,
    );
    let status = s.run("Fix add by rewriting the file.").await;
    assert_eq!(
        status,
        Status::Done {
            answer: "Rewrote add.".into()
        }
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/lib.rs")).unwrap(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n// added by the user\n"
    );
    let reqs = server.requests();
    let results = tool_messages(&reqs.last().unwrap().body);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[2].contains("merged"), "{results:?}");
}

#[tokio::test]
async fn a_failing_test_run_counts_as_a_failed_step() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    server.push_turn(call(
        "r1",
        "run_command",
        json!({"command": "echo '1 test failed' >&2; exit 3"}),
    ));
    server.push_turn(call("r2", "run_command", json!({"command": "true"})));
    server.push_turn(Turn::text("looked"));
    let ctx = sandboxed(ws.path());
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut s = Session::new(
        provider(&server, WireFormat::OpenaiChat, ModelProfile::default()),
        tools,
        ctx,
        SessionConfig::default(),
        static_ctx,
    )
    .with_events(tx);
    assert_eq!(
        s.run("test it").await,
        Status::Done {
            answer: "looked".into()
        }
    );
    let m = s.metrics();
    assert_eq!(m.failed_commands, 1, "{m:?}");
    assert_eq!(m.failed_steps, 1, "{m:?}");
    // Not a tool error: the tool worked.
    assert!(m.errors_by_class.is_empty(), "{m:?}");
    // Yet what editors are told is a failure: the call's event says so.
    drop(s);
    let mut finished = Vec::new();
    while let Some(ev) = rx.recv().await {
        if let agentls_agent::Event::ToolFinished {
            id, error, failed, ..
        } = ev
        {
            finished.push((id, error, failed));
        }
    }
    assert_eq!(
        finished,
        [
            ("r1".to_owned(), None, true),
            ("r2".to_owned(), None, false)
        ]
    );
}

/// The harness's final check: the model edits wrongly and says it is done without
/// running anything; the check runs, fails, and the model gets its output for one more
/// step; without a check command configured nothing runs.
#[tokio::test]
async fn an_unchecked_edit_is_checked_before_the_run_ends() {
    for with_check in [true, false] {
        let server = ModelServer::start().await.unwrap();
        let ws = workspace();
        std::fs::write(ws.path().join("check.sh"), CHECK).unwrap();
        // A wrong fix, then "done" without running anything.
        server.push_turn(call(
            "e1",
            "str_replace",
            json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a * b"}),
        ));
        server.push_turn(Turn::text("Fixed."));
        server.push_turn(Turn::text("It still fails: add multiplies."));
        let ctx = sandboxed(ws.path());
        let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
        let static_ctx = StaticContext::gather(ws.path(), &[]).await;
        let config = SessionConfig {
            final_check: with_check.then(|| "sh check.sh".to_owned()),
            ..SessionConfig::default()
        };
        let mut s = Session::new(
            provider(&server, WireFormat::OpenaiChat, ModelProfile::default()),
            tools,
            ctx,
            config,
            static_ctx,
        );
        let status = s.run("fix add").await;
        let requests = server.requests();
        if with_check {
            assert_eq!(
                status,
                Status::Done {
                    answer: "It still fails: add multiplies.".into()
                }
            );
            assert_eq!(requests.len(), 3);
            let last = requests[2].body.to_string();
            assert!(
                last.contains("the harness ran the project's check"),
                "{last}"
            );
            assert!(last.contains("tests::adds ... FAILED"), "{last}");
            assert_eq!(s.metrics().failed_commands, 1);
        } else {
            assert_eq!(
                status,
                Status::Done {
                    answer: "Fixed.".into()
                }
            );
            assert_eq!(requests.len(), 2);
        }
    }
}

#[tokio::test]
async fn a_checked_edit_is_not_checked_again() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("check.sh"), CHECK).unwrap();
    server.push_turn(call(
        "e1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    ));
    server.push_turn(call("r1", "run_command", json!({"command": "sh check.sh"})));
    server.push_turn(Turn::text("Fixed and checked."));
    let ctx = sandboxed(ws.path());
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let config = SessionConfig {
        final_check: Some("sh check.sh".to_owned()),
        ..SessionConfig::default()
    };
    let mut s = Session::new(
        provider(&server, WireFormat::OpenaiChat, ModelProfile::default()),
        tools,
        ctx,
        config,
        static_ctx,
    );
    assert_eq!(
        s.run("fix add").await,
        Status::Done {
            answer: "Fixed and checked.".into()
        }
    );
    // The model's own run counted; the harness ran nothing more.
    assert_eq!(s.metrics().calls_by_tool.get("run_command"), Some(&1));
}

/// A provider that constrains its calls: the fixture server's answers, with each
/// request's paths kept for the test to read.
#[derive(Debug)]
struct Constraining {
    inner: Arc<agentls_model::HttpProvider>,
    seen: Seen,
    forbidden: Arc<std::sync::Mutex<Vec<Vec<String>>>>,
}

impl agentls_model::Provider for Constraining {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn profile(&self) -> &ModelProfile {
        self.inner.profile()
    }
    fn constrains_arguments(&self) -> bool {
        true
    }
    fn stream(
        &self,
        req: &agentls_model::ChatRequest,
        cancel: agentls_model::CancellationToken,
    ) -> agentls_model::EventStream {
        self.seen.lock().unwrap().push(req.paths.clone());
        self.forbidden
            .lock()
            .unwrap()
            .push(req.forbidden_tools.clone());
        self.inner.stream(req, cancel)
    }
}

/// The paths each request to a [`Constraining`] provider held.
type Seen = Arc<std::sync::Mutex<Vec<Option<Arc<agentls_model::PathConstraint>>>>>;

/// A session over the standard tools in `ws` whose provider, the fixture server's,
/// constrains its calls; with the paths its requests hold.
async fn constrained_session(server: &ModelServer, ws: &std::path::Path) -> (Session, Seen) {
    let seen: Seen = Arc::default();
    let provider = Arc::new(Constraining {
        inner: provider(server, WireFormat::OpenaiChat, ModelProfile::default()),
        seen: Arc::clone(&seen),
        forbidden: Arc::default(),
    });
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws, &[]).await;
    let session = Session::new(
        provider,
        tools,
        agentls_tools::ToolContext::on_disk(ws),
        SessionConfig::default(),
        static_ctx,
    );
    (session, seen)
}

#[tokio::test]
async fn a_constraining_provider_gets_the_workspace_paths_as_they_are_at_each_step() {
    use agentls_model::{PathCheck, PathKind};
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    server.push_turn(call(
        "c1",
        "write_file",
        json!({"path": "src/extra.rs", "content": "pub fn extra() {}\n"}),
    ));
    server.push_turn(call(
        "c2",
        "read_file",
        json!({"path": "src/lib.rs", "limit": 1}),
    ));
    server.push_turn(Turn::text("Added src/extra.rs."));
    let (mut s, seen) = constrained_session(&server, ws.path()).await;
    let status = s.run("Add src/extra.rs.").await;
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "three requests");
    let first = seen[0].as_ref().expect("the first request holds the paths");
    let second = seen[1]
        .as_ref()
        .expect("the second request holds the paths");
    assert_eq!(first.kind("read_file", "path"), Some(PathKind::File));
    assert_eq!(first.kind("write_file", "path"), Some(PathKind::NewFile));
    assert_eq!(first.kind("run_command", "cwd"), Some(PathKind::Dir));
    assert_eq!(
        first.check(PathKind::File, "src/lib.rs"),
        PathCheck::Complete
    );
    assert_eq!(first.check(PathKind::File, "<path>"), PathCheck::Invalid);
    // The file the first step wrote can be read in the second.
    assert_eq!(
        first.check(PathKind::File, "src/extra.rs"),
        PathCheck::Invalid
    );
    assert_eq!(
        second.check(PathKind::File, "src/extra.rs"),
        PathCheck::Complete
    );
    // Edits are held to the text of the files the model has seen: the one it wrote,
    // then the one it read a window of (whole, as the edit tools match it).
    assert!(first.edit_args("str_replace").is_some());
    assert_eq!(first.text_of("src/lib.rs"), None);
    assert_eq!(second.text_of("src/extra.rs"), Some("pub fn extra() {}\n"));
    assert_eq!(second.text_of("src/lib.rs"), None);
    let third = seen[2].as_ref().expect("the third request holds the paths");
    assert_eq!(
        third.text_of("./src/lib.rs"),
        Some("pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n")
    );
    assert_eq!(third.text_of("Cargo.toml"), None);
}

#[tokio::test]
async fn a_git_ignored_file_the_user_names_is_one_a_constraining_provider_can_read() {
    use agentls_model::{PathCheck, PathKind};
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir(ws.path().join("build")).unwrap();
    std::fs::write(ws.path().join("build/out.log"), "error: add is wrong\n").unwrap();
    std::fs::write(ws.path().join("build/other.log"), "ok\n").unwrap();
    server.push_turn(call("c1", "read_file", json!({"path": "build/out.log"})));
    server.push_turn(Turn::text("add subtracts."));
    let (mut s, seen) = constrained_session(&server, ws.path()).await;
    let status = s.run("What does `build/out.log` say?").await;
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    let seen = seen.lock().unwrap().clone();
    let first = seen[0].as_ref().expect("the first request holds the paths");
    assert_eq!(
        first.check(PathKind::File, "build/out.log"),
        PathCheck::Complete
    );
    assert_eq!(
        first.check(PathKind::File, "build/other.log"),
        PathCheck::Invalid,
        "an ignored file nobody named stays out"
    );
    let second = seen[1]
        .as_ref()
        .expect("the second request holds the paths");
    assert_eq!(
        second.text_of("build/out.log"),
        Some("error: add is wrong\n")
    );
}

#[tokio::test]
async fn a_tool_whose_call_was_refused_is_forbidden_to_a_constraining_provider_for_a_step() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    for i in 0..agentls_agent::repeats::SAME_OK_REFUSE {
        server.push_turn(Turn::default().tool_call(
            &format!("r{i}"),
            "read_file",
            json!({"path": "src/lib.rs"}),
        ));
    }
    server.push_turn(Turn::default().tool_call("g", "grep", json!({"pattern": "fn add"})));
    server.push_turn(Turn::text("add subtracts."));
    let forbidden = Arc::new(std::sync::Mutex::new(Vec::new()));
    let provider = Arc::new(Constraining {
        inner: provider(&server, WireFormat::OpenaiChat, ModelProfile::default()),
        seen: Arc::default(),
        forbidden: Arc::clone(&forbidden),
    });
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let mut s = Session::new(
        provider,
        tools,
        agentls_tools::ToolContext::on_disk(ws.path()),
        SessionConfig::default(),
        static_ctx,
    );
    let status = s.run("What does add do?").await;
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    let forbidden = forbidden.lock().unwrap().clone();
    let n = agentls_agent::repeats::SAME_OK_REFUSE as usize;
    assert_eq!(forbidden.len(), n + 2, "{forbidden:?}");
    assert!(forbidden[..n].iter().all(Vec::is_empty), "{forbidden:?}");
    // After the fifth identical read, the next step may not call read_file at all.
    assert_eq!(forbidden[n], ["read_file"]);
    assert!(forbidden[n + 1].is_empty(), "{forbidden:?}");
}
