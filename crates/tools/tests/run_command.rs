//! `run_command` in the real sandbox (`sh -c`): output, the live buffers it sees, its
//! file changes landing through the sink, the policy, approvals and the timeout.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;

use agentls_sandbox::{Decision, Policy, Sandbox, SandboxConfig};
use agentls_tools::{ErrorClass, MemorySink};
use common::{FixedApprover, Ws, ws, ws_with};
use serde_json::json;

fn with_sandbox(mut w: Ws) -> Ws {
    w.ctx.sandbox = Some(Arc::new(Sandbox::new(SandboxConfig::new(&w.root)).unwrap()));
    w
}

#[tokio::test]
async fn runs_sees_buffers_and_lands_its_changes_on_disk() {
    let w = with_sandbox(ws(&[("a.txt", "disk\n"), ("gone.txt", "bye\n")]));
    w.open("a.txt", "buffer\n");
    let out = w
        .ok(
            "run_command",
            json!({"command": "cat a.txt; echo made > new.txt; echo more >> a.txt; rm gone.txt; echo oops >&2; exit 3"}),
        )
        .await;
    assert!(out.starts_with("exit code 3"), "{out}");
    assert!(out.contains("--- stdout ---\nbuffer\n"), "{out}");
    assert!(out.contains("--- stderr ---\noops\n"), "{out}");
    assert!(out.contains("Created new.txt"), "{out}");
    assert!(out.contains("Deleted gone.txt"), "{out}");
    assert_eq!(w.disk("new.txt"), "made\n");
    assert!(!w.path("gone.txt").exists());
    // The command appended to the buffer's text, and that is what lands.
    assert_eq!(w.disk("a.txt"), "buffer\nmore\n");
}

#[tokio::test]
async fn changes_go_through_the_sink() {
    let sink = Arc::new(MemorySink::new());
    let w = with_sandbox(ws_with(&[("a.txt", "a\n")], sink.clone()));
    w.ok("run_command", json!({"command": "echo b > a.txt"}))
        .await;
    assert_eq!(sink.plans().len(), 1);
    assert_eq!(sink.file(&w.path("a.txt")), Some(Some("b\n".into())));
    assert_eq!(w.disk("a.txt"), "a\n", "nothing behind the sink's back");
    // A refused landing is an error that still carries the output.
    sink.refuse_with("editor said no");
    let e = w
        .err(
            "run_command",
            json!({"command": "echo visible; echo c > a.txt"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
    assert!(e.message.contains("visible"), "{}", e.message);
    assert!(e.message.contains("NOT applied"), "{}", e.message);
}

#[tokio::test]
async fn policy_forbids_and_asks() {
    let mut w = with_sandbox(ws(&[]));
    w.ctx.policy = Arc::new(
        Policy::new(Decision::Allow)
            .with("rm", Decision::Forbid)
            .with("touch", Decision::Ask),
    );
    let e = w.err("run_command", json!({"command": "rm -f x"})).await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(e.message.contains("forbidden"), "{}", e.message);
    let e = w.err("run_command", json!({"command": "touch x"})).await;
    assert_eq!(e.class, ErrorClass::UserAborted);
    assert!(e.message.contains("`touch x` was refused"), "{}", e.message);
    assert!(!w.path("x").exists());
    let yes = Arc::new(FixedApprover {
        answer: true,
        asked: Default::default(),
    });
    w.ctx.approver = yes.clone();
    w.ok("run_command", json!({"command": "touch x"})).await;
    assert!(w.path("x").exists());
    assert_eq!(*yes.asked.lock().unwrap(), ["run `touch x`"]);
}

#[tokio::test]
async fn timeout_and_no_sandbox() {
    let w = with_sandbox(ws(&[]));
    let e = w
        .err(
            "run_command",
            json!({"command": "echo started; echo late > late.txt; sleep 30", "timeout_secs": 1}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::Timeout);
    assert!(e.message.contains("started"), "{}", e.message);
    assert!(
        !w.path("late.txt").exists(),
        "changes of a killed command are dropped"
    );
    let e = w
        .err("run_command", json!({"command": "true", "cwd": "../.."}))
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    let w = ws(&[]);
    let e = w.err("run_command", json!({"command": "true"})).await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
}

#[tokio::test]
async fn cancellation_stops_the_command_and_drops_its_changes() {
    let w = with_sandbox(ws(&[]));
    let cancel = w.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let e = w
        .err(
            "run_command",
            json!({"command": "echo x > x.txt; sleep 30"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::UserAborted);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(!w.path("x.txt").exists());
}

#[tokio::test]
async fn the_users_typing_during_the_run_is_never_overwritten() {
    let w = with_sandbox(ws(&[("a.txt", "v1\n")]));
    w.open("a.txt", "v1\n");
    let store = w.store.clone();
    let uri = agentls_text::DocUri::from_file_path(&w.path("a.txt")).unwrap();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        // The user types while the command runs.
        store.close(&uri);
        store.open(uri, "rust", 2, "v1 typed\n");
    });
    let e = w
        .err(
            "run_command",
            json!({"command": "sleep 1; echo cmd > a.txt"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
    assert!(
        e.message.contains("a.txt changed while the command ran"),
        "{}",
        e.message
    );
    assert_eq!(w.disk("a.txt"), "v1\n");
}

#[tokio::test]
async fn output_streams_to_the_progress_sink_while_the_command_runs() {
    let mut w = with_sandbox(ws(&[]));
    let start = std::time::Instant::now();
    let rec = Arc::new(common::Recorder {
        epoch: Some(start),
        ..Default::default()
    });
    w.ctx.progress = Some(rec.clone());
    let out = w
        .ok(
            "run_command",
            json!({"command": "echo one; echo warn >&2; sleep 0.3; echo two"}),
        )
        .await;
    let ended = start.elapsed();
    assert!(out.contains("--- stdout ---\none\ntwo\n"), "{out}");
    let seen = rec.output.lock().unwrap().clone();
    let (first_at, stream, text) = seen.first().unwrap().clone();
    assert!(
        (stream.as_str(), text.as_str()) == ("stdout", "one\n")
            || (stream.as_str(), text.as_str()) == ("stderr", "warn\n"),
        "{seen:?}"
    );
    assert!(
        first_at + std::time::Duration::from_millis(200) < ended,
        "first output at {first_at:?}, the call returned at {ended:?}"
    );
    let joined = |s: &str| -> String {
        seen.iter()
            .filter(|(_, st, _)| st == s)
            .map(|(_, _, t)| t.as_str())
            .collect()
    };
    assert_eq!(joined("stdout"), "one\ntwo\n");
    assert_eq!(joined("stderr"), "warn\n");
}
