//! What the registry's dispatcher adds to a tool call: parsing the model's raw argument
//! text, finding the tool, the panic guard and the cancellation race. Reference, in the
//! same run: calling the same tool directly with pre-parsed arguments. The tool is
//! `todo` with a three-step plan (no I/O), so the difference is the dispatcher's.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

use std::hint::black_box;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use agentls_index::Index;
use agentls_model::CancellationToken;
use agentls_sandbox::{Decision, Policy};
use agentls_text::{DocumentStore, ReadLimits};
use agentls_tools::{Approver, MemorySink, Registry, Todo, TodoList, Tool, ToolContext};
use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};

struct No;

#[async_trait]
impl Approver for No {
    async fn approve(&self, _what: &str) -> bool {
        false
    }
}

const ARGS: &str = r#"{"todos":[{"content":"find the bug","status":"completed"},{"content":"fix it","status":"in_progress"},{"content":"run the tests","status":"pending"}]}"#;

fn ctx() -> ToolContext {
    ToolContext {
        root: "/ws".into(),
        store: Arc::new(DocumentStore::new()),
        read_limits: ReadLimits::default(),
        index: Arc::new(RwLock::new(Index::default())),
        semantic: Default::default(),
        sandbox: None,
        policy: Arc::new(Policy::new(Decision::Allow)),
        edits: Arc::new(MemorySink::new()),
        approver: Arc::new(No),
        diagnostics: None,
        checker: None,
        subagents: None,
        cancel: CancellationToken::new(),
        progress: None,
        reads: Arc::new(agentls_tools::ReadVersions::new()),
        client_files: None,
        terminal: None,
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ctx();
    let registry = Registry::standard();
    let direct = Todo::new(TodoList::default());
    let parsed: serde_json::Value = serde_json::from_str(ARGS).unwrap();

    let via_registry = || {
        rt.block_on(registry.call(&ctx, black_box("todo"), black_box(ARGS)))
            .unwrap()
    };
    let via_tool = || {
        rt.block_on(direct.call(&ctx, black_box(parsed.clone())))
            .unwrap()
    };

    let mut g = c.benchmark_group("dispatch");
    g.bench_function("registry_call", |b| b.iter(via_registry));
    g.bench_function("direct_call", |b| b.iter(via_tool));
    g.finish();

    // The ratio, measured interleaved in this run (the machine is shared and noisy).
    let rounds = 20;
    let per_round = 2_000;
    let (mut reg_ns, mut dir_ns) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..per_round {
            black_box(via_registry());
        }
        reg_ns.push(t.elapsed().as_nanos() as f64 / per_round as f64);
        let t = Instant::now();
        for _ in 0..per_round {
            black_box(via_tool());
        }
        dir_ns.push(t.elapsed().as_nanos() as f64 / per_round as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (r, d) = (median(&mut reg_ns), median(&mut dir_ns));
    println!(
        "dispatch: registry.call {r:.0} ns, direct Tool::call (reference, args pre-parsed) {d:.0} ns, ratio {:.2}x, dispatcher overhead {:.0} ns per call",
        r / d,
        r - d
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
