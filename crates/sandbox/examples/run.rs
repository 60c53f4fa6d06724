//! Runs one shell command in the sandbox and prints the outcome and change set.
//!
//! `cargo run -p agentls-sandbox --example run -- WORKSPACE 'cargo test'`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use agentls_sandbox::{CancellationToken, RunRequest, Sandbox, SandboxConfig};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let ws = args.next().expect("usage: run WORKSPACE SCRIPT");
    let script = args.next().expect("usage: run WORKSPACE SCRIPT");
    let sb = Sandbox::new(SandboxConfig::new(ws)).unwrap();
    let out = sb
        .run(RunRequest::shell(script), &CancellationToken::new())
        .await
        .unwrap();
    println!("termination: {:?} in {:?}", out.termination, out.duration);
    println!("--- stdout\n{}", out.stdout.to_text());
    println!("--- stderr\n{}", out.stderr.to_text());
    for c in &out.changes.changes {
        println!(
            "change: {} created={} deleted={}",
            c.path.display(),
            c.created,
            c.deleted
        );
    }
    for (p, why) in &out.changes.skipped {
        println!("skipped: {} ({why})", p.display());
    }
    for p in &out.changes.written_through {
        println!("written through: {}", p.display());
    }
    if let Some(d) = &out.denial {
        println!("denial: {}", d.message);
    }
    for w in &out.warnings {
        println!("warning: {w}");
    }
}
