//! A session driven through its submission queue alone (issue 61): a prompt whose
//! command needs approval, answered with an op; the front end's part of the record
//! saved mid-turn; an interrupt mid-turn; a change of model; a compaction; all against
//! the fixture model server over HTTP, read back from the one stream of what the
//! session emits. The test holds no cancel token, approver or session: only a
//! `SessionHandle`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agentls_agent::{Event, Status};
use agentls_host::{Adapters, Emitted, Host, HostOptions, SessionHandle, Spec, config};
use agentls_protocol::agent::ops::Op;
use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

/// The next item of the stream, or a failed test after 60 s.
async fn next(events: &mut UnboundedReceiver<Emitted>) -> Emitted {
    tokio::time::timeout(Duration::from_secs(60), events.recv())
        .await
        .expect("the session went quiet")
        .expect("the session's task ended")
}

/// Reads the stream until the turn of `sub` ends, handing every event to `on`;
/// the turn's status.
async fn until_end(
    events: &mut UnboundedReceiver<Emitted>,
    handle: &SessionHandle,
    sub: &str,
    mut on: impl FnMut(&Event, &SessionHandle),
) -> Status {
    loop {
        match next(events).await {
            Emitted::Event { sub: s, event } => {
                assert_eq!(s, sub, "{event:?}");
                on(&event, handle);
            }
            Emitted::TurnEnded { sub: s, turn } => {
                assert_eq!(s, sub);
                return turn.outcome.status;
            }
            // Ops carried out meanwhile (a save while the turn runs, a model set).
            Emitted::Done { sub: s } => assert_ne!(s, sub),
            Emitted::Refused { sub, error } => panic!("{sub} refused: {error}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_driven_through_ops_alone() {
    let server = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "hello\n").unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "[models.first]\nwire = \"openai_chat\"\nbase_url = \"{url}\"\nmodel = \"first-id\"\n\n\
             [models.second]\nwire = \"openai_chat\"\nbase_url = \"{url}\"\nmodel = \"second-id\"\n\n\
             [sessions]\ndir = \"{sessions}\"\n",
            url = server.url(),
            sessions = dir.path().join("sessions").display()
        ),
    )
    .unwrap();
    let loaded = config::load(&config::LoadOptions {
        user_file: Some(file),
        ..Default::default()
    });
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let options = HostOptions {
        save_sessions: true,
        ..HostOptions::unrecorded("test")
    };
    let host = Host::new(loaded.config, options);
    let spec = Spec {
        workspace: ws.clone(),
        model: Some("first".into()),
        final_check: Some(false),
        trajectory_dir: Some(dir.path().join("trajectories")),
        ..Default::default()
    };
    let (handle, mut events) = host.open(spec, Adapters::default()).await.unwrap().spawn();

    // 1. A prompt whose command the policy asks about: the request comes as an event,
    //    the answer goes back as an op.
    server.push_turn(Turn::default().tool_call(
        "c1",
        "run_command",
        json!({"command": "git push"}),
    ));
    server.push_turn(Turn::text("Pushed."));
    let sub = handle.submit(Op::Prompt {
        text: "Push it.".into(),
        user_text: None,
    });
    let mut asked = Vec::new();
    let mut results = Vec::new();
    let status = until_end(&mut events, &handle, &sub, |event, handle| match event {
        Event::Approval {
            id: Some(id),
            what,
            granted: None,
            in_terminal,
        } => {
            assert!(!in_terminal, "no terminal offered here");
            asked.push(what.clone());
            handle.submit(Op::Approval {
                id: id.clone(),
                approved: true,
                in_terminal: false,
            });
        }
        Event::ToolFinished { summary, .. } => results.push(summary.clone()),
        _ => {}
    })
    .await;
    assert_eq!(
        status,
        Status::Done {
            answer: "Pushed.".into()
        }
    );
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("git push"), "{asked:?}");
    assert_eq!(results.len(), 1);
    assert!(!results[0].contains("was refused"), "{results:?}");

    interrupt_with_a_save(&server, &host, &handle, &mut events).await;

    // 3. Another model from the next turn on, then a prompt: it goes to that model.
    let before = server.requests().len();
    handle.submit(Op::OverrideTurnContext {
        model: Some("second".into()),
        mode: None,
    });
    server.push_turn(Turn::text("From the second."));
    let sub = handle.submit(Op::Prompt {
        text: "Again.".into(),
        user_text: None,
    });
    let status = until_end(&mut events, &handle, &sub, |_, _| {}).await;
    assert_eq!(
        status,
        Status::Done {
            answer: "From the second.".into()
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), before + 1);
    assert_eq!(requests[before].body["model"], "second-id");
    assert_eq!(requests[0].body["model"], "first-id");

    // An unknown model is refused as an op, and the session goes on.
    let sub = handle.submit(Op::OverrideTurnContext {
        model: Some("nonesuch".into()),
        mode: None,
    });
    match next(&mut events).await {
        Emitted::Refused { sub: s, error } => {
            assert_eq!(s, sub);
            assert!(error.contains("nonesuch"), "{error}");
        }
        other => panic!("{other:?}"),
    }

    compact(&server, &host, &handle, &mut events).await;

    let session = handle.close().await.unwrap();
    assert_eq!(session.model(), "second");
}

/// Step 2: a slow answer, interrupted once it streams, with the front end's part of the
/// record saved meanwhile: the turn ends cancelled, the record kept.
async fn interrupt_with_a_save(
    server: &ModelServer,
    host: &Host,
    handle: &SessionHandle,
    events: &mut UnboundedReceiver<Emitted>,
) {
    let slow = "word ".repeat(400);
    server.push_turn(
        Turn::text(slow)
            .chunked(5)
            .frame_delay(Duration::from_millis(50)),
    );
    let sub = handle.submit(Op::Prompt {
        text: "Talk slowly.".into(),
        user_text: None,
    });
    let mut interrupted = false;
    let status = until_end(events, handle, &sub, |event, handle| {
        if matches!(event, Event::TextDelta { .. }) && !interrupted {
            interrupted = true;
            // The front end's part of the record, saved while the turn runs.
            handle.submit(Op::Save {
                title: Some("Pushing".into()),
                front_end: json!({"pending": [7]}),
            });
            handle.submit(Op::Interrupt);
        }
    })
    .await;
    assert!(interrupted);
    assert_eq!(status, Status::Cancelled);
    // Saved by the host, with the front end's part, and kept at the turn's end.
    let saved = host.load(handle.id()).unwrap();
    assert_eq!(saved.title, "Pushing");
    assert_eq!(saved.front_end, json!({"pending": [7]}));
    assert!(saved.messages.len() >= 4, "{:?}", saved.messages);
}

/// Step 4: a compaction asked for: its event, then the op done; the conversation is
/// shorter and saved so.
async fn compact(
    server: &ModelServer,
    host: &Host,
    handle: &SessionHandle,
    events: &mut UnboundedReceiver<Emitted>,
) {
    let before = host.load(handle.id()).unwrap().messages.len();
    server.push_turn(Turn::text("Earlier: a push, allowed; a slow answer, cut."));
    let sub = handle.submit(Op::Compact);
    let (masked, summarized) = match next(events).await {
        Emitted::Event {
            sub: s,
            event: Event::Compacted { masked, summarized },
        } => {
            assert_eq!(s, sub);
            (masked, summarized)
        }
        other => panic!("{other:?}"),
    };
    assert!(summarized > 0, "masked {masked}, summarized {summarized}");
    assert!(matches!(next(events).await, Emitted::Done { sub: s } if s == sub));
    let after = host.load(handle.id()).unwrap();
    assert!(
        after.messages.len() < before,
        "{before} -> {}",
        after.messages.len()
    );
    assert_eq!(after.front_end, json!({"pending": [7]}));
}
