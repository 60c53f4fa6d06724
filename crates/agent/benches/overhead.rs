//! Harness overhead per agent step with a zero-latency, in-process model: a session of
//! `STEPS` steps (each one read-only tool call to a no-op tool, then a final answer)
//! against the bare cost of producing and collecting the same model streams. The
//! difference divided by the steps is what the loop itself costs per step.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentls_agent::{Session, SessionConfig, StaticContext, ToolSet};
use agentls_model::{
    CancellationToken, ChatRequest, EventStream, ModelProfile, Provider, StopReason, StreamEvent,
    Usage, collect,
};
use agentls_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::{Value, json};

const STEPS: usize = 20;

#[derive(Debug)]
struct Instant0(ModelProfile);

impl Provider for Instant0 {
    fn name(&self) -> &str {
        "zero-latency"
    }
    fn profile(&self) -> &ModelProfile {
        &self.0
    }
    fn stream(&self, req: &ChatRequest, _cancel: CancellationToken) -> EventStream {
        let step = req.messages.len().saturating_sub(1) / 2;
        let usage = StreamEvent::Usage(Usage {
            input: 1000,
            cached_input: 900,
            cache_write: 0,
            output: 10,
        });
        let events = if step < STEPS {
            let id = format!("call_{step}");
            vec![
                StreamEvent::TextDelta("Looking.".into()),
                StreamEvent::ToolCallStart {
                    id: id.clone(),
                    name: "noop".into(),
                },
                StreamEvent::ToolCallDelta {
                    id: id.clone(),
                    arguments: "{\"path\":".into(),
                },
                StreamEvent::ToolCallDelta {
                    id: id.clone(),
                    arguments: "\"src/lib.rs\"}".into(),
                },
                StreamEvent::ToolCallEnd {
                    id,
                    name: "noop".into(),
                    arguments: "{\"path\":\"src/lib.rs\"}".into(),
                },
                usage,
                StreamEvent::Stop(StopReason::ToolUse),
            ]
        } else {
            vec![
                StreamEvent::TextDelta("Done.".into()),
                usage,
                StreamEvent::Stop(StopReason::EndTurn),
            ]
        };
        futures::stream::iter(events.into_iter().map(Ok)).boxed()
    }
}

struct Noop;

#[async_trait]
impl Tool for Noop {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "noop",
            description: "Does nothing.",
            parameters: json!({"type": "object"}),
        }
    }
    fn is_mutating(&self) -> bool {
        false
    }
    async fn call(&self, _ctx: &ToolContext, _args: Value) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("fn add(a: i32, b: i32) -> i32 { a + b }"))
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let static_ctx = rt.block_on(StaticContext::gather(dir.path(), &[]));
    let provider = Arc::new(Instant0(ModelProfile::default()));
    let tools = ToolSet::new(vec![Arc::new(Noop)]);

    let session_run = || {
        let mut s = Session::new(
            provider.clone(),
            tools.clone(),
            agentls_tools::ToolContext::on_disk(dir.path()),
            SessionConfig::default(),
            static_ctx.clone(),
        );
        rt.block_on(s.run("Do the thing."));
        assert_eq!(s.metrics().steps as usize, STEPS + 1);
    };
    // The reference: the same streams produced and collected, nothing else.
    let bare = || {
        let mut req = ChatRequest::new(None, "Do the thing.");
        for _ in 0..=STEPS {
            let r = rt
                .block_on(collect(provider.stream(&req, CancellationToken::new())))
                .unwrap();
            req.messages.push(r.to_message());
            req.messages.push(agentls_model::Message::user("x"));
        }
    };

    let mut g = c.benchmark_group("agent_step");
    g.bench_function("session_21_steps", |b| b.iter(session_run));
    g.bench_function("bare_streams_21", |b| b.iter(bare));
    g.finish();

    // Ratio and per-step figure measured here, in the same run.
    let time = |f: &dyn Fn(), n: u32| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed() / n
    };
    let n = 200;
    let s = time(&session_run, n);
    let r = time(&bare, n);
    let per_step = s.saturating_sub(r) / (STEPS as u32 + 1);
    println!(
        "harness overhead per step: {:.1} µs (session {:?} vs bare streams {:?} for {} steps; ratio {:.2}); target < 1000 µs",
        per_step.as_secs_f64() * 1e6,
        s,
        r,
        STEPS + 1,
        s.as_secs_f64() / r.as_secs_f64().max(1e-12),
    );
    assert!(
        per_step < Duration::from_millis(1),
        "harness overhead over budget"
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
