//! `auto` routes every model call: a simple request goes to the fast model, failed
//! steps in a row escalate to the strong one, and success goes back to fast.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agentls_agent::{Event, Session, SessionConfig, StaticContext, Status, Trajectory};
use agentls_model::{
    ClientOptions, HttpProvider, ModelProfile, ProviderSpec, RetryPolicy, Router, RouterConfig,
    RouterMode, WireFormat,
};
use agentls_testkit::model_server::{ModelServer, Turn};
use common::{Spans, call, tools, workspace};
use serde_json::{Value, json};

fn named(server: &ModelServer, name: &str) -> Arc<HttpProvider> {
    let spec = ProviderSpec {
        name: name.into(),
        wire: WireFormat::OpenaiChat,
        base_url: server.url(),
        model_id: name.into(),
        key: None,
        profile: ModelProfile::default(),
    };
    let options = ClientOptions {
        retry: RetryPolicy::fast(0),
        ..ClientOptions::default()
    };
    Arc::new(HttpProvider::new(spec, options).unwrap())
}

#[tokio::test]
async fn each_call_is_routed_and_failures_escalate_to_the_strong_model() {
    let fast = ModelServer::start().await.unwrap();
    let strong = ModelServer::start().await.unwrap();
    let ws = workspace();
    let wrong = json!({"path": "src/lib.rs", "old": "a-b", "new": "a + b"});
    fast.push_turn(call("f1", "str_replace", wrong.clone()));
    fast.push_turn(call("f2", "str_replace", wrong));
    strong.push_turn(call(
        "s1",
        "str_replace",
        json!({"path": "src/lib.rs", "old": "a - b", "new": "a + b"}),
    ));
    fast.push_turn(Turn::text("Fixed."));

    let router = Router::new(
        RouterConfig {
            fast: "fast".into(),
            strong: "strong".into(),
            mode: RouterMode::Auto,
            threshold: 4,
        },
        100_000,
    );
    let fast_p = named(&fast, "fast");
    let strong_p = named(&strong, "strong");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let logs = tempfile::tempdir().unwrap();
    let mut s = Session::new(
        fast_p.clone(),
        tools(&Spans::default(), 0),
        agentls_tools::ToolContext::on_disk(ws.path()),
        SessionConfig::default(),
        StaticContext::gather(ws.path(), &[]).await,
    )
    .with_router(router, vec![fast_p, strong_p])
    .with_events(tx)
    .with_trajectory(Trajectory::create(logs.path(), "r1", vec![]).unwrap());

    assert_eq!(
        s.run("Fix add.").await,
        Status::Done {
            answer: "Fixed.".into()
        }
    );
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
    assert_eq!((fast.requests().len(), strong.requests().len()), (3, 1));
    // Each model keeps its own stable prefix: system prompt and tools.
    let prefix = |b: &Value| (b["messages"][0].clone(), b["tools"].clone());
    let fast_reqs = fast.requests();
    assert!(
        fast_reqs
            .iter()
            .all(|r| prefix(&r.body) == prefix(&fast_reqs[0].body))
    );

    let mut routes = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        if let Event::Routed { model, reason } = ev {
            routes.push((model, reason));
        }
    }
    let models: Vec<&str> = routes.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(models, ["fast", "fast", "strong", "fast"]);
    assert!(routes[0].1.contains("score 0"), "{:?}", routes[0]);
    assert!(routes[2].1.contains("2 failed attempts"), "{:?}", routes[2]);

    // The strong model heard that it takes over; both refused edits are in its history.
    let body = strong.requests()[0].body.to_string();
    assert!(
        body.contains("taking over this session from the model fast"),
        "{body}"
    );
    assert_eq!(body.matches("not found in the file").count(), 2, "{body}");
    assert!(strong.pairing_violations().is_empty());
    assert!(fast.pairing_violations().is_empty());

    // The trajectory records every route with its reasons.
    let text = std::fs::read_to_string(s.trajectory().unwrap().path()).unwrap();
    let routes: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "route")
        .collect();
    assert_eq!(routes.len(), 4);
    assert_eq!(routes[2]["model"], "strong");
    assert_eq!(routes[2]["failures"], 2);
    assert!(
        routes[2]["reasons"][0]
            .as_str()
            .unwrap()
            .contains("escalate")
    );
}

/// Refuses like a user who said no.
struct Refused;

#[async_trait::async_trait]
impl agentls_tools::Tool for Refused {
    fn spec(&self) -> agentls_tools::ToolSpec {
        agentls_tools::ToolSpec {
            name: "deploy",
            description: "Deploy.",
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
        Err(agentls_tools::ToolError::aborted(
            "the user did not allow it",
        ))
    }
}

fn router(mode: RouterMode) -> Router {
    Router::new(
        RouterConfig {
            fast: "fast".into(),
            strong: "strong".into(),
            mode,
            threshold: 4,
        },
        100_000,
    )
}

#[tokio::test]
async fn refusals_do_not_escalate_and_a_first_route_needs_no_takeover_note() {
    // Two refused steps in a row: still the fast model.
    let fast = ModelServer::start().await.unwrap();
    let strong = ModelServer::start().await.unwrap();
    let ws = workspace();
    fast.push_turn(call("f1", "deploy", json!({})));
    fast.push_turn(call("f2", "deploy", json!({})));
    fast.push_turn(Turn::text("Not allowed to deploy."));
    let (fast_p, strong_p) = (named(&fast, "fast"), named(&strong, "strong"));
    let mut s = Session::new(
        fast_p.clone(),
        agentls_agent::ToolSet::new(vec![Arc::new(Refused)]),
        agentls_tools::ToolContext::on_disk(ws.path()),
        SessionConfig::default(),
        StaticContext::gather(ws.path(), &[]).await,
    )
    .with_router(
        router(RouterMode::Auto),
        vec![fast_p.clone(), strong_p.clone()],
    );
    assert_eq!(
        s.run("Deploy.").await,
        Status::Done {
            answer: "Not allowed to deploy.".into()
        }
    );
    assert_eq!((fast.requests().len(), strong.requests().len()), (3, 0));

    // Planning goes to strong from the first call, without a note about taking over.
    let strong2 = ModelServer::start().await.unwrap();
    strong2.push_turn(Turn::text("1. fix add"));
    let strong_p = named(&strong2, "strong");
    let mut s = Session::new(
        fast_p.clone(),
        agentls_agent::ToolSet::new(vec![Arc::new(Refused)]),
        agentls_tools::ToolContext::on_disk(ws.path()),
        SessionConfig {
            mode: agentls_agent::Mode::Plan,
            ..SessionConfig::default()
        },
        StaticContext::gather(ws.path(), &[]).await,
    )
    .with_router(
        router(RouterMode::PlanStrongImplementFast),
        vec![fast_p, strong_p],
    );
    assert_eq!(
        s.run("Plan the fix.").await,
        Status::Done {
            answer: "1. fix add".into()
        }
    );
    let body = strong2.requests()[0].body.to_string();
    assert!(!body.contains("taking over"), "{body}");
}
