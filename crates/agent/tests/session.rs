//! End to end: the loop over real HTTP against the fixture model server.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentls_agent::{Budget, Event, Mode, SessionConfig, Status, ToolSet, Trajectory};
use agentls_model::ModelProfile;
use agentls_testkit::model_server::{Fault, ModelServer, Turn};
use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn greps_reads_edits_fails_retries_runs_tests_and_finishes() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    server.push_turn(call("c1", "grep", json!({"pattern": "fn add"})));
    server.push_turn(call("c2", "read_file", json!({"path": "src/lib.rs"})));
    // A failed edit (wrong old text) is reported and retried.
    server.push_turn(call(
        "c3",
        "str_replace",
        json!({"path": "src/lib.rs", "old": "a-b", "new": "a + b"}),
    ));
    server.push_turn(call("c4", "run_tests", json!({})));
    server.push_turn(call(
        "c5",
        "str_replace",
        json!({"path": "src/lib.rs", "old": "a - b", "new": "a + b"}),
    ));
    server.push_turn(call("c6", "run_tests", json!({})));
    server.push_turn(Turn::text("Fixed `add`; the test passes.").usage(1200, 1000, 9));

    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await
    .with_events(tx)
    .with_trajectory(Trajectory::create(dir.path(), "t1", vec![]).unwrap());
    let status = s.run("Make the failing test pass.").await;
    assert_eq!(
        status,
        Status::Done {
            answer: "Fixed `add`; the test passes.".into()
        }
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/lib.rs")).unwrap(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 7);
    // The failed edit came back to the model as a classified error.
    let results = tool_messages(&reqs[3].body);
    assert!(
        results[2].contains("InvalidArguments") && results[2].contains("not found"),
        "{results:?}"
    );
    // It saw the failing test, then the passing one.
    assert!(tool_messages(&reqs[4].body)[3].contains("FAILED"));
    assert!(tool_messages(&reqs[6].body)[5].contains("test result: ok"));
    // The stable prefix is identical on every request: system prompt and tools.
    let prefix = |r: &Value| (r["messages"][0].clone(), r["tools"].clone());
    assert!(
        reqs.iter()
            .all(|r| prefix(&r.body) == prefix(&reqs[0].body))
    );
    assert!(
        reqs[0].body["messages"][0]["content"]
            .to_string()
            .contains("Run the tests after every edit.")
    );

    let m = s.metrics();
    assert_eq!(m.steps, 7);
    assert_eq!(m.calls_by_tool["str_replace"], 2);
    assert_eq!(m.errors_by_class["InvalidArguments"], 1);
    assert_eq!((m.input_tokens, m.cached_input_tokens), (7200, 5800));
    assert!((m.cache_hit_rate() - 5800.0 / 7200.0).abs() < 1e-9);
    assert!(m.wall_ms >= m.model_ms + m.tool_ms);

    // Every started call finished exactly once.
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    let started = events
        .iter()
        .filter(|e| matches!(e, Event::ToolStarted { .. }))
        .count();
    let finished = events
        .iter()
        .filter(|e| matches!(e, Event::ToolFinished { .. }))
        .count();
    assert_eq!((started, finished), (6, 6));
    let first_args = events.iter().find_map(|e| match e {
        Event::ToolStarted {
            name, arguments, ..
        } if name == "grep" => Some(arguments.clone()),
        _ => None,
    });
    assert_eq!(first_args, Some(json!({"pattern": "fn add"})));
    assert!(matches!(events.last(), Some(Event::Finished { .. })));

    // The trajectory has every kind of record, in order.
    let text = std::fs::read_to_string(s.trajectory().unwrap().path()).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("session"));
    assert_eq!(kinds.last().map(String::as_str), Some("end"));
    assert_eq!(kinds.iter().filter(|k| *k == "tool").count(), 6);
    assert_eq!(kinds.iter().filter(|k| *k == "response").count(), 7);
    assert!(text.contains("\"error_class\":\"InvalidArguments\""));
}

#[tokio::test]
async fn parallel_reads_overlap_and_writes_wait_for_them() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    server.push_turn(
        Turn::default()
            .tool_call(
                "r1",
                "read_file",
                json!({"path": "src/lib.rs", "delay_ms": 300}),
            )
            .tool_call(
                "r2",
                "read_file",
                json!({"path": "Cargo.toml", "delay_ms": 300}),
            )
            .tool_call(
                "r3",
                "read_file",
                json!({"path": "AGENTS.md", "delay_ms": 300}),
            )
            .tool_call(
                "w1",
                "str_replace",
                json!({"path": "src/lib.rs", "old": "a - b", "new": "a + b"}),
            )
            .tool_call("r4", "read_file", json!({"path": "src/lib.rs"})),
    );
    server.push_turn(Turn::text("ok"));
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 100),
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await;
    assert_eq!(
        s.run("look").await,
        Status::Done {
            answer: "ok".into()
        }
    );
    let sp = spans.get();
    let reads: Vec<_> = sp.iter().filter(|s| s.0 == "read_file").take(3).collect();
    let write = sp.iter().find(|s| s.0 == "str_replace").unwrap();
    let last_read = sp.iter().filter(|s| s.0 == "read_file").nth(3).unwrap();
    // The three slow reads overlap: each starts before any ends.
    let first_end = reads.iter().map(|r| r.2).min().unwrap();
    assert!(reads.iter().all(|r| r.1 < first_end), "{sp:?}");
    // The write starts after all three reads ended, the last read after the write.
    assert!(reads.iter().all(|r| r.2 <= write.1), "{sp:?}");
    assert!(write.2 <= last_read.1, "{sp:?}");
    // The wall time of the reads is that of the slowest, not the sum.
    let batch = reads.iter().map(|r| r.2).max().unwrap() - reads.iter().map(|r| r.1).min().unwrap();
    assert!(batch < Duration::from_millis(800), "{batch:?}");
    // The read after the write saw it.
    let results = tool_messages(&server.requests()[1].body);
    assert!(results[4].contains("a + b"), "{results:?}");
}

#[tokio::test]
async fn unknown_tools_broken_json_and_panics_each_get_one_error_result() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    server.push_turn(
        Turn::default()
            .tool_call("u1", "no_such_tool", json!({}))
            .tool_call(
                "b1",
                "read_file",
                Value::String("{\"path\": \"src/li".into()),
            )
            .tool_call("p1", "boom", json!({})),
    );
    server.push_turn(Turn::text("sorry"));
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await;
    assert_eq!(
        s.run("go").await,
        Status::Done {
            answer: "sorry".into()
        }
    );
    let results = tool_messages(&server.requests()[1].body);
    assert_eq!(results.len(), 3);
    assert!(
        results[0].contains("InvalidArguments") && results[0].contains("read_file"),
        "{results:?}"
    );
    assert!(
        results[1].contains("InvalidArguments") && results[1].contains("not valid JSON"),
        "{results:?}"
    );
    assert!(results[2].contains("Unknown"), "{results:?}");
    assert_eq!(s.metrics().errors_by_class["InvalidArguments"], 2);
    assert_eq!(s.metrics().errors_by_class["Unknown"], 1);
}

#[tokio::test]
async fn cancellation_reaches_a_running_tool_and_the_session_goes_on() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let saw_cancel = Arc::new(Mutex::new(false));
    let tools = ToolSet::new(vec![Arc::new(Wait(saw_cancel.clone()))]);
    server.push_turn(call("w1", "wait", json!({})));
    let mut s = session(
        &server,
        ws.path(),
        tools,
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await;
    let token = s.cancel_token();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel();
    });
    let started = std::time::Instant::now();
    assert_eq!(s.run("wait").await, Status::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    // The call has its one result, and it says the user aborted.
    let last = s.transcript().last().unwrap();
    let agentls_model::Part::ToolResult(r) = &last.parts[0] else {
        panic!("{last:?}")
    };
    assert!(r.is_error && r.content.contains("UserAborted"), "{r:?}");
    assert_eq!(s.metrics().errors_by_class["UserAborted"], 1);
    // The session goes on with a fresh token.
    server.push_turn(Turn::text("stopped as asked"));
    assert_eq!(
        s.run("ok, stop").await,
        Status::Done {
            answer: "stopped as asked".into()
        }
    );
}

/// `outage`: makes the model server fail the next request (an outage mid-loop).
struct Outage(Arc<ModelServer>);

#[async_trait::async_trait]
impl agentls_tools::Tool for Outage {
    fn spec(&self) -> agentls_tools::ToolSpec {
        agentls_tools::ToolSpec {
            name: "outage",
            description: "x",
            parameters: json!({"type": "object"}),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(
        &self,
        _: &agentls_tools::ToolContext,
        _: Value,
    ) -> Result<agentls_tools::ToolOutput, agentls_tools::ToolError> {
        self.0.inject(Fault::Status {
            status: 503,
            message: "overloaded".into(),
        });
        Ok(agentls_tools::ToolOutput::text("the lights flicker"))
    }
}

#[tokio::test]
async fn a_provider_outage_mid_session_loses_nothing() {
    let server = Arc::new(ModelServer::start().await.unwrap());
    let ws = workspace();
    server.push_turn(call("c1", "outage", json!({})));
    server.push_turn(Turn::text("Back: the lights flickered."));
    let tools = ToolSet::new(vec![Arc::new(Outage(server.clone()))]);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut s = session(
        &server,
        ws.path(),
        tools,
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await
    .with_events(tx);
    let status = s.run("check the lights").await;
    // The editor hears of the failure, then of the end of the run.
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    let n = events.len();
    assert!(n >= 2, "{events:?}");
    assert!(
        matches!(&events[n - 2], Event::Error { class, message } if class == "ProviderError" && message.contains("503")),
        "{:?}",
        events[n - 2]
    );
    assert!(matches!(events[n - 1], Event::Finished { .. }));
    let Status::ProviderError { class, message } = &status else {
        panic!("{status:?}")
    };
    assert_eq!(class, "ProviderError");
    assert!(
        message.contains("503") && message.contains("overloaded"),
        "{message}"
    );
    // The transcript is whole: user, the call, its result.
    assert_eq!(s.transcript().len(), 3);
    assert_eq!(s.metrics().steps, 1);
    // Going on sends the kept transcript and finishes.
    assert_eq!(
        s.resume().await,
        Status::Done {
            answer: "Back: the lights flickered.".into()
        }
    );
    let reqs = server.requests();
    let last = &reqs.last().unwrap().body;
    assert!(tool_messages(last)[0].contains("the lights flicker"));
    assert_eq!(s.transcript().len(), 4);
}

#[tokio::test]
async fn ask_mode_offers_no_writes_and_refuses_them() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    server.push_turn(call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old": "a - b", "new": "a + b"}),
    ));
    server.push_turn(Turn::text("I may not edit."));
    let config = SessionConfig {
        mode: Mode::Ask,
        ..SessionConfig::default()
    };
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        config,
        ModelProfile::default(),
    )
    .await;
    assert_eq!(
        s.run("fix it").await,
        Status::Done {
            answer: "I may not edit.".into()
        }
    );
    let reqs = server.requests();
    let names: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"read_file")
            && !names.contains(&"str_replace")
            && !names.contains(&"run_tests"),
        "{names:?}"
    );
    assert!(tool_messages(&reqs[1].body)[0].contains("InvalidArguments"));
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a - b")
    );
}

#[tokio::test]
async fn the_step_budget_stops_the_loop() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    for i in 0..3 {
        server.push_turn(call(
            &format!("c{i}"),
            "read_file",
            json!({"path": "src/lib.rs"}),
        ));
    }
    let config = SessionConfig {
        budget: Budget {
            max_steps: 2,
            ..Budget::default()
        },
        ..SessionConfig::default()
    };
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        config,
        ModelProfile::default(),
    )
    .await;
    assert_eq!(
        s.run("loop").await,
        Status::BudgetExhausted {
            limit: "steps".into()
        }
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.remaining_turns(), 1);
}

/// Compaction's estimate follows the provider's own count of the prompt: the same
/// transcript compacts when the model reports its prompts far denser than 4 characters
/// a token (code and JSON on a small model's tokenizer), and does not without a count.
#[tokio::test]
async fn compaction_is_calibrated_by_the_providers_token_count() {
    async fn compactions(reported_input: u64) -> u32 {
        let server = ModelServer::start().await.unwrap();
        let ws = workspace();
        std::fs::write(
            ws.path().join("big.txt"),
            "filler line of a file\n".repeat(60),
        )
        .unwrap();
        for i in 1..=2 {
            server.push_turn(
                call(&format!("c{i}"), "read_file", json!({"path": "big.txt"})).usage(
                    reported_input,
                    0,
                    5,
                ),
            );
        }
        server.push_turn(Turn::text("done").usage(reported_input, 0, 1));
        let profile = ModelProfile {
            context_window: 4_000,
            ..ModelProfile::default()
        };
        let spans = Spans::default();
        let mut s = session(
            &server,
            ws.path(),
            tools(&spans, 0),
            SessionConfig::default(),
            profile,
        )
        .await;
        assert!(matches!(s.run("read it").await, Status::Done { .. }));
        s.metrics().compactions
    }
    // A few thousand characters in all: under 0.7 of 4k tokens at 4 characters a token.
    assert_eq!(compactions(0).await, 0);
    // The provider says each prompt was 3.9k tokens: the window is nearly full.
    assert!(compactions(3_900).await > 0);
}

#[tokio::test]
async fn compaction_keeps_the_goal_the_user_and_the_failing_tests() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    std::fs::write(
        ws.path().join("big.txt"),
        "filler line of a big file\n".repeat(300),
    )
    .unwrap();
    let spans = Spans::default();
    server.push_turn(call("t0", "run_tests", json!({})));
    for i in 1..=8 {
        server.push_turn(call(
            &format!("c{i}"),
            "read_file",
            json!({"path": "big.txt"}),
        ));
    }
    server.push_turn(Turn::text("done reading"));
    // A window of 4k tokens: every read adds ~2k.
    let profile = ModelProfile {
        context_window: 4_000,
        ..ModelProfile::default()
    };
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        SessionConfig::default(),
        profile,
    )
    .await;
    let goal = "Make tests::adds pass without touching Cargo.toml.";
    assert_eq!(
        s.run(goal).await,
        Status::Done {
            answer: "done reading".into()
        }
    );
    assert!(s.metrics().compactions > 0);
    let reqs = server.requests();
    let last = reqs.last().unwrap().body.to_string();
    assert!(last.contains(goal), "the goal is kept verbatim");
    assert!(
        last.contains("tests::adds ... FAILED"),
        "the failing test is kept"
    );
    assert!(
        last.len() < 4_000 * 4,
        "the request fits the window: {}",
        last.len()
    );
    // Masked outputs can be read back by id.
    assert!(s.artifacts().get("art-1").unwrap().contains("filler line"));
}

#[tokio::test]
async fn long_sessions_are_summarised_by_the_cheap_model_and_keep_the_goal() {
    let server = ModelServer::start().await.unwrap();
    let cheap = ModelServer::start().await.unwrap();
    let ws = workspace();
    std::fs::write(ws.path().join("small.txt"), "x".repeat(300)).unwrap();
    let spans = Spans::default();
    // No token counts in the turns: compaction follows the 4-characters-a-token guess,
    // which the made-up counts of `call` would calibrate away.
    server.push_turn(Turn::default().tool_call("t0", "run_tests", json!({})));
    for i in 1..=30 {
        server.push_turn(Turn::default().tool_call(
            &format!("c{i}"),
            "read_file",
            json!({"path": "small.txt"}),
        ));
    }
    server.push_turn(Turn::text("finished"));
    for _ in 0..10 {
        cheap.push_turn(Turn::text(
            "Goal: fix add. Next steps: SUMMARY-FROM-CHEAP-MODEL",
        ));
    }
    let profile = ModelProfile {
        context_window: 1_500,
        ..ModelProfile::default()
    };
    let goal = "Make tests::adds pass; keep the public API.";
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        SessionConfig::default(),
        profile,
    )
    .await
    .with_summarizer(provider(
        &cheap,
        agentls_model::WireFormat::Anthropic,
        ModelProfile::default(),
    ));
    assert_eq!(
        s.run(goal).await,
        Status::Done {
            answer: "finished".into()
        }
    );
    assert!(
        !cheap.requests().is_empty(),
        "the cheap model wrote a summary"
    );
    assert!(
        cheap.requests()[0]
            .body
            .to_string()
            .contains("tests::adds ... FAILED")
    );
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("SUMMARY-FROM-CHEAP-MODEL"));
    assert!(last.contains(goal));
    assert!(
        last.contains("tests::adds ... FAILED"),
        "the harness keeps failing tests itself"
    );
    // The user's message appears once, verbatim, not duplicated by repeated compactions.
    assert_eq!(
        last.matches(goal).count(),
        2,
        "once as the user's text, once as the goal fact"
    );
}

/// The tool results of the last request, in order.
fn tool_results_of(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_call_failing_the_same_way_is_noted_then_refused() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    for i in 0..4 {
        server.push_turn(call(
            &format!("c{i}"),
            "read_file",
            json!({"path": "<path>"}),
        ));
    }
    server.push_turn(Turn::text("Gave up."));
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await
    .with_trajectory(Trajectory::create(dir.path(), "t-loop", vec![]).unwrap());
    assert_eq!(
        s.run("read it").await,
        Status::Done {
            answer: "Gave up.".into()
        }
    );
    let last = server.requests().last().unwrap().body.clone();
    let results = tool_results_of(&last);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        !results[0].contains("Note from the harness"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("failed the same way 2 times"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("refused for the next step"),
        "{}",
        results[2]
    );
    assert!(results[3].contains("not run:"), "{}", results[3]);
    // The trajectory shows when the guard fired.
    let log = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .collect::<String>();
    let guards: Vec<(u64, String)> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "guard")
        .map(|v| {
            (
                v["step"].as_u64().unwrap(),
                v["guard"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [(2, "noted"), (3, "noted"), (4, "refused")];
    assert_eq!(
        guards,
        expected.map(|(step, g)| (step, g.to_owned())),
        "{log}"
    );
}

#[tokio::test]
async fn an_invented_tool_response_is_not_taken_as_the_answer() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    server.push_turn(Turn::text(
        "<tool_response>\n{\"path\": \"<path>\", \"ok\": true}\n</tool_response>",
    ));
    server.push_turn(Turn::text("done.\n<tool_response>{}</tool_response>"));
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await;
    // The first answer is all template text: the model is asked again; the second
    // keeps the words before the template text.
    assert_eq!(
        s.run("finish").await,
        Status::Done {
            answer: "done.".into()
        }
    );
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("was template text"), "{last}");
}

#[tokio::test]
async fn a_runaway_answer_is_asked_again_once() {
    let server = ModelServer::start().await.unwrap();
    let ws = workspace();
    let spans = Spans::default();
    let mut runaway = Turn::text("done. ".repeat(40));
    runaway.stop = Some(agentls_model::RUNAWAY_STOP.into());
    server.push_turn(runaway.clone());
    server.push_turn(Turn::text("Added the function."));
    let mut s = session(
        &server,
        ws.path(),
        tools(&spans, 0),
        SessionConfig::default(),
        ModelProfile::default(),
    )
    .await;
    assert_eq!(
        s.run("add it").await,
        Status::Done {
            answer: "Added the function.".into()
        }
    );
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("repeated itself over and over"), "{last}");
    // Once per run: a second runaway answer stands rather than loop.
    server.push_turn(runaway.clone());
    server.push_turn(runaway);
    let Status::Done { answer } = s.run("again").await else {
        panic!("not done")
    };
    assert!(answer.starts_with("done. done."), "{answer}");
    assert_eq!(server.requests().len(), 4);
}
