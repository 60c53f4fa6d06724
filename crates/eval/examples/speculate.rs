//! `cargo run --release -p agentls-eval --features local --example speculate -- MODEL.gguf [TOKENS]`:
//! the edit-like and free-text requests of `bench model`, with and without
//! prompt-lookup drafts, printing both answers and where they first differ.

#![allow(clippy::print_stdout)]

use agentls_eval::bench_model::{edit_request, free_request, timed_call};
use agentls_local::speculate::Lookup;
use agentls_local::{EngineOptions, LocalProvider};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: speculate MODEL.gguf [TOKENS]")?;
    let tokens: u32 = args.next().map(|t| t.parse()).transpose()?.unwrap_or(2_400);
    let path = std::path::Path::new(&path);
    tracing_subscriber::fmt()
        .with_env_filter("agentls_local=debug")
        .with_writer(std::io::stderr)
        .init();
    for (label, req) in [
        ("edit-like", edit_request(tokens)),
        ("free text", free_request(tokens)),
    ] {
        let mut texts = Vec::new();
        for lookup in [None, Some(Lookup::default())] {
            let p = LocalProvider::load_with("probe", path, &EngineOptions::default())?
                .with_speculation(lookup);
            let (text, n, ttft, rate) = timed_call(&p, &req).await?;
            println!(
                "== {label}, speculation {}: {n} tokens, first token {} ms, {rate:.1} tok/s",
                lookup.is_some(),
                ttft.as_millis()
            );
            texts.push(text);
        }
        let same = texts[0]
            .chars()
            .zip(texts[1].chars())
            .take_while(|(a, b)| a == b)
            .count();
        println!(
            "-- plain answer:\n{}\n-- first difference at char {same} of {}/{}",
            texts[0],
            texts[0].chars().count(),
            texts[1].chars().count()
        );
        if texts[0] != texts[1] {
            println!(
                "-- drafted answer from there:\n{}",
                texts[1]
                    .chars()
                    .skip(same.saturating_sub(40))
                    .take(200)
                    .collect::<String>()
            );
            println!(
                "-- plain answer from there:\n{}",
                texts[0]
                    .chars()
                    .skip(same.saturating_sub(40))
                    .take(200)
                    .collect::<String>()
            );
        }
    }
    Ok(())
}
