//! Decoding cost of a streamed answer, against the irreducible work measured in the
//! same run: parsing each event's JSON payload and nothing else.
//!
//! `cargo bench -p agentls-model --bench stream` prints, per wire format, the time
//! to decode a 5 000-delta answer with three tool calls, and its ratio to the
//! JSON-only reference. Target: a small constant ratio (the decoder adds bookkeeping,
//! not passes).

#![allow(missing_docs)] // criterion_group! generates an undocumented fn.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentls_model::{WireFormat, decode_sse_body};
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};

/// A chat-completions body: 5 000 text deltas, three tool calls in 200 pieces each.
fn chat_body() -> String {
    let mut s = String::new();
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    for i in 0..5000 {
        s.push_str(&chunk(json!({"content": format!("w{i} ")}), Value::Null));
    }
    for c in 0..3 {
        s.push_str(&chunk(
            json!({"tool_calls": [{"index": c, "id": format!("call_{c}"), "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
            Value::Null,
        ));
        for i in 0..200 {
            s.push_str(&chunk(
                json!({"tool_calls": [{"index": c, "function": {"arguments": format!("x{i}")}}]}),
                Value::Null,
            ));
        }
    }
    s.push_str(&chunk(json!({}), json!("tool_calls")));
    s.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
    ));
    s.push_str("data: [DONE]\n\n");
    s
}

/// The same answer as Anthropic events.
fn anthropic_body() -> String {
    let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    let mut s = ev(
        "message_start",
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
    );
    s.push_str(&ev("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
    for i in 0..5000 {
        s.push_str(&ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("w{i} ")}})));
    }
    s.push_str(&ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    for c in 1..4 {
        s.push_str(&ev("content_block_start", json!({"type": "content_block_start", "index": c, "content_block": {"type": "tool_use", "id": format!("t{c}"), "name": "read_file", "input": {}}})));
        for i in 0..200 {
            s.push_str(&ev("content_block_delta", json!({"type": "content_block_delta", "index": c, "delta": {"type": "input_json_delta", "partial_json": format!("x{i}")}})));
        }
        s.push_str(&ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": c}),
        ));
    }
    s.push_str(&ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})));
    s.push_str(&ev("message_stop", json!({"type": "message_stop"})));
    s
}

/// The reference: find each `data:` line and parse its JSON, nothing more.
fn json_only(body: &str) -> usize {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .count()
}

fn decode(wire: WireFormat, body: &str) -> usize {
    decode_sse_body(wire, body.as_bytes())
        .map(|e| e.len())
        .unwrap_or(0)
}

fn median(mut f: impl FnMut(), runs: usize) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn benches(c: &mut Criterion) {
    for (name, wire, body) in [
        ("chat", WireFormat::OpenaiChat, chat_body()),
        ("anthropic", WireFormat::Anthropic, anthropic_body()),
    ] {
        let mut g = c.benchmark_group(format!("decode_{name}"));
        g.bench_function("json_only_reference", |b| {
            b.iter(|| json_only(black_box(&body)))
        });
        g.bench_function("agentls_decode", |b| {
            b.iter(|| decode(wire, black_box(&body)))
        });
        g.finish();
    }
}

criterion_group!(group, benches);

#[allow(clippy::print_stdout)] // A bench reports on stdout.
fn main() {
    group();
    Criterion::default().configure_from_args().final_summary();
    // Ratios from the same run, on the same inputs.
    for (name, wire, body) in [
        ("chat", WireFormat::OpenaiChat, chat_body()),
        ("anthropic", WireFormat::Anthropic, anthropic_body()),
    ] {
        let events = decode(wire, &body);
        let reference = median(
            || {
                black_box(json_only(&body));
            },
            15,
        );
        let ours = median(
            || {
                black_box(decode(wire, &body));
            },
            15,
        );
        println!(
            "decode {name}: {} KiB, {events} events: {:?} vs json-only {:?}: ratio {:.2}",
            body.len() / 1024,
            ours,
            reference,
            ours.as_secs_f64() / reference.as_secs_f64()
        );
    }
}
