//! `cargo run --release -p agentls-local --example bench -- MODEL.gguf [THREADS]`:
//! prompt and generation tokens/s, time to first token, and a multi-turn session
//! with and without the prefix cache. Prints one line per figure; the llama.cpp
//! reference is measured by `bench_reference.py` beside this file, on the same file
//! and thread count.

#![allow(clippy::print_stdout)]

use std::time::Instant;

use agentls_local::{Engine, Sampler};
use agentls_model::{ChatRequest, Message};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: bench MODEL.gguf [THREADS]")?;
    let threads = args
        .next()
        .map(|t| t.parse::<usize>())
        .transpose()?
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // candle sizes its pool from RAYON_NUM_THREADS.
    // SAFETY: single-threaded at this point; nothing reads the environment concurrently.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", threads.to_string()) };
    let t0 = Instant::now();
    let mut engine = Engine::load(std::path::Path::new(&path))?;
    println!(
        "model {} ({}), threads {threads}, cores {}, load {:.2}s",
        engine.info.name.as_deref().unwrap_or("?"),
        engine.info.architecture,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        t0.elapsed().as_secs_f64()
    );

    // Prompt throughput: a fixed 512-token prompt.
    let filler = "fn add(a: i32, b: i32) -> i32 { a + b }\n".repeat(64);
    let mut prompt = engine.tokenizer.encode(&filler);
    prompt.truncate(512);
    engine.reset();
    let t = Instant::now();
    let (mut logits, _) = engine.prefill(&prompt)?;
    let pp = t.elapsed().as_secs_f64();
    println!(
        "prompt: {} tokens, {:.1} tok/s",
        prompt.len(),
        prompt.len() as f64 / pp
    );

    // Generation throughput: 128 greedy tokens after that prompt.
    let mut sampler = Sampler::new(0.0, 1.0, 0);
    let n = 128;
    let t = Instant::now();
    for _ in 0..n {
        let tok = sampler.sample(&logits).ok_or("no token")?;
        logits = engine.step(tok)?;
    }
    let tg = t.elapsed().as_secs_f64();
    println!("generation: {n} tokens, {:.1} tok/s", n as f64 / tg);

    // Time to first token and the prefix cache over a 4-turn session.
    let system = "You are a coding assistant. Answer briefly.\n".repeat(20);
    let mut req = ChatRequest::new(Some(system), "What does `fn add` do?");
    for (label, reuse) in [("without prefix cache", false), ("with prefix cache", true)] {
        let mut total = 0.0;
        let mut ttfts = Vec::new();
        let mut fed = 0;
        let mut r = req.clone();
        engine.reset();
        for turn in 0..4 {
            if !reuse {
                engine.reset();
            }
            let ids = engine.encode_pieces(&engine.info.template.render(&r))?;
            let t = Instant::now();
            let (mut logits, cached) = engine.prefill(&ids)?;
            let tok = sampler.sample(&logits).ok_or("no token")?;
            ttfts.push(t.elapsed().as_secs_f64() * 1000.0);
            fed += ids.len() - cached;
            let mut out = vec![tok];
            for _ in 0..15 {
                logits = engine.step(*out.last().ok_or("empty")?)?;
                let tok = sampler.sample(&logits).ok_or("no token")?;
                if engine.info.end_ids.contains(&tok) {
                    break;
                }
                out.push(tok);
            }
            total += t.elapsed().as_secs_f64();
            r.messages
                .push(Message::assistant(engine.tokenizer.decode(&out)));
            r.messages.push(Message::user(format!("And turn {turn}?")));
        }
        let ttft: Vec<String> = ttfts.iter().map(|t| format!("{t:.0}")).collect();
        println!(
            "session {label}: 4 turns {total:.2}s, prompt tokens computed {fed}, time to first token per turn [{}] ms",
            ttft.join(", ")
        );
    }
    req.messages.clear();
    Ok(())
}
