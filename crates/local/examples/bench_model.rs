//! `cargo run --release -p agentls-local --example bench_model -- MODEL.gguf [THREADS]`:
//! the table of [`agentls_local::bench_model`] (what `agentls bench model` prints).

#![allow(clippy::print_stdout)]

use agentls_local::{BenchOptions, bench_model};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: bench_model MODEL.gguf [THREADS]")?;
    let mut opts = BenchOptions::default();
    if let Some(t) = args.next() {
        opts.threads = t.parse()?;
    }
    let report = bench_model(std::path::Path::new(&path), &opts).await?;
    print!("{report}");
    Ok(())
}
