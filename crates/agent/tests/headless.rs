//! A session from `build_session` without a front end's context: the standard tools,
//! a subagent through `task`, edits on disk, the trajectory file, and events in order.

#![allow(clippy::unwrap_used)]

mod common;

use agentls_agent::{
    BuildHooks, Event, HeadlessError, HeadlessOptions, HeadlessOutcome, Status, ToolSet,
    build_session,
};
use agentls_model::{ModelProfile, ModelsConfig, WireFormat};
use agentls_testkit::model_server::{ModelServer, Turn};
use common::{call, provider, workspace};
use serde_json::{Value, json};

/// Builds the session `options` describe and runs one turn on `task`.
async fn run_one(
    options: HeadlessOptions,
    task: &str,
    print: impl FnMut(&Event) + Send,
) -> Result<HeadlessOutcome, HeadlessError> {
    let mut built = build_session(options, BuildHooks::default()).await?;
    Ok(built.run(task.to_owned(), print).await)
}

#[tokio::test]
async fn a_headless_run_uses_a_subagent_edits_the_disk_and_logs_a_trajectory() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let logs = tempfile::tempdir().unwrap();
    server.push_turn(call(
        "t1",
        "task",
        json!({"prompt": "Where is add defined?"}),
    ));
    // The subagent's two steps: a read, then its answer.
    server.push_turn(call("s1", "read_file", json!({"path": "src/lib.rs"})));
    server.push_turn(Turn::text("add is defined in src/lib.rs and subtracts."));
    server.push_turn(call(
        "e1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    ));
    server.push_turn(Turn::text("Fixed."));
    let mut options = HeadlessOptions::new(ws.path().to_path_buf());
    options.provider = Some(provider(
        &server,
        WireFormat::OpenaiResponses,
        ModelProfile::default(),
    ));
    options.trajectory_dir = Some(logs.path().to_path_buf());
    let mut events = Vec::new();
    let outcome = run_one(options, "Fix add.", |ev| events.push(ev.clone()))
        .await
        .unwrap();
    assert_eq!(
        outcome.status,
        Status::Done {
            answer: "Fixed.".into()
        }
    );
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
    // The subagent's answer came back as the task's result.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    assert!(
        reqs[3]
            .body
            .to_string()
            .contains("add is defined in src/lib.rs")
    );
    // What the subagent did streamed as the task call's output, as it happened.
    let streamed: String = events
        .iter()
        .filter_map(|ev| match ev {
            Event::ToolOutput { id, text, .. } if id == "t1" => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        streamed.contains("▸ read_file src/lib.rs\n")
            && streamed.contains("add is defined in src/lib.rs and subtracts.\n"),
        "{streamed:?}"
    );
    // The subagent started fresh: one user message, no parent history.
    assert!(!reqs[1].body.to_string().contains("Fix add."));
    assert!(matches!(events.first(), Some(Event::Status { .. })));
    assert!(
        matches!(events.last(), Some(Event::Finished { status, steps, .. })
            if *status == agentls_agent::SessionStatus::Done && *steps == outcome.metrics.steps),
        "{:?}",
        events.last()
    );
    assert_eq!(outcome.metrics.calls_by_tool["task"], 1);
    // Every event serialises as a JSON line with a type.
    for ev in &events {
        let v: Value = serde_json::from_str(&serde_json::to_string(ev).unwrap()).unwrap();
        assert!(v["type"].is_string());
    }
    let path = outcome.trajectory.unwrap();
    assert!(path.starts_with(logs.path()));
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\"kind\":\"end\"") && text.contains("\"name\":\"task\""));
}

#[tokio::test]
async fn a_missing_workspace_is_an_error_not_a_panic() {
    let options = HeadlessOptions::new("/definitely/not/here");
    let err = run_one(options, "x", |_| {}).await.unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[tokio::test]
async fn a_trajectory_replays_its_tool_calls_with_the_same_outcomes() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let logs = tempfile::tempdir().unwrap();
    server.push_turn(call("r1", "read_file", json!({"path": "src/lib.rs"})));
    server.push_turn(call(
        "e0",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "nope", "new_string": "x"}),
    ));
    server.push_turn(call(
        "e1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    ));
    server.push_turn(Turn::text("Fixed."));
    let mut options = HeadlessOptions::new(ws.path().to_path_buf());
    options.provider = Some(provider(
        &server,
        WireFormat::OpenaiChat,
        ModelProfile::default(),
    ));
    options.trajectory_dir = Some(logs.path().to_path_buf());
    let outcome = run_one(options, "Fix add.", |_| {}).await.unwrap();
    // Replay on a fresh copy of the original workspace.
    let fresh = workspace();
    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let ctx = agentls_tools::ToolContext::on_disk(fresh.path());
    let replayed = agentls_agent::replay::replay(&outcome.trajectory.unwrap(), &tools, &ctx)
        .await
        .unwrap();
    let names: Vec<&str> = replayed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["read_file", "str_replace", "str_replace"]);
    assert_eq!(replayed[1].recorded.as_deref(), Some("InvalidArguments"));
    assert!(replayed.iter().all(|r| r.matches()), "{replayed:?}");
    assert!(
        std::fs::read_to_string(fresh.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
}

/// `[models]` with a main model at `main` (a small window, so that compaction starts
/// soon) and a cheap one at `cheap`, plus `extra` lines (`summarizer`, `[router]`).
fn two_models(main: &ModelServer, cheap: &ModelServer, extra: &str) -> ModelsConfig {
    ModelsConfig::from_toml(&format!(
        "{extra}\n[models.main]\nwire = \"openai_chat\"\nbase_url = \"{}\"\nprofile = {{ context_window = 1500 }}\n\n[models.cheap]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n",
        main.url(),
        cheap.url()
    ))
    .unwrap()
}

/// A long run on `main` whose early turns get folded: 20 reads of a 300-byte file in a
/// 1500-token window.
async fn long_run(main: &ModelServer, cheap: &ModelServer, models: ModelsConfig) -> Status {
    let ws = workspace();
    std::fs::write(ws.path().join("small.txt"), "x".repeat(300)).unwrap();
    for i in 1..=20 {
        main.push_turn(call(
            &format!("c{i}"),
            "read_file",
            json!({"path": "small.txt"}),
        ));
    }
    main.push_turn(Turn::text("finished"));
    for _ in 0..30 {
        cheap.push_turn(Turn::text("Goal: read. Next steps: SUMMARY-BY-CHEAP"));
    }
    let mut options = HeadlessOptions::new(ws.path().to_path_buf());
    options.model = Some("main".into());
    options.models = models;
    run_one(options, "Read small.txt many times.", |_| {})
        .await
        .unwrap()
        .status
}

#[tokio::test]
async fn the_configured_summarizer_writes_the_compaction_summaries() {
    let main = ModelServer::start().await.unwrap();
    let cheap = ModelServer::start().await.unwrap();
    let models = two_models(&main, &cheap, "summarizer = \"cheap\"");
    let status = long_run(&main, &cheap, models).await;
    assert_eq!(
        status,
        Status::Done {
            answer: "finished".into()
        }
    );
    let asked = cheap.requests();
    assert!(!asked.is_empty(), "the summarizer was never called");
    assert!(asked[0].body.to_string().contains("You summarise"));
    let last = main.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("SUMMARY-BY-CHEAP"),
        "the summary reached main"
    );
}

#[tokio::test]
async fn without_a_summarizer_compaction_keeps_the_harness_notes_only() {
    let main = ModelServer::start().await.unwrap();
    let cheap = ModelServer::start().await.unwrap();
    let models = two_models(&main, &cheap, "");
    let status = long_run(&main, &cheap, models).await;
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(cheap.requests().is_empty());
    let last = main.requests().last().unwrap().body.to_string();
    assert!(!last.contains("SUMMARY-BY-CHEAP"));
    assert!(
        last.contains(agentls_agent::compaction::SUMMARY_MARK),
        "compaction still happened: {last}"
    );
}

#[tokio::test]
async fn the_routers_fast_model_summarizes_by_default() {
    let main = ModelServer::start().await.unwrap();
    let cheap = ModelServer::start().await.unwrap();
    let models = two_models(
        &main,
        &cheap,
        "[router]\nfast = \"cheap\"\nstrong = \"main\"\n",
    );
    let status = long_run(&main, &cheap, models).await;
    assert!(matches!(status, Status::Done { .. }), "{status:?}");
    assert!(
        !cheap.requests().is_empty(),
        "fast was not asked to summarise"
    );
    assert!(
        cheap.requests()[0]
            .body
            .to_string()
            .contains("You summarise")
    );
}
