//! `cargo run --release -p agentls-search --example bench_index -- [CORPUS]`: cold index vs
//! ctags, grep vs ripgrep, re-index after an edit; printed side by side.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

fn main() {
    let corpus = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .or_else(agentls_search::bench::default_corpus);
    let Some(corpus) = corpus else {
        eprintln!("no corpus: pass a directory");
        std::process::exit(2);
    };
    println!("{}", agentls_search::bench::run(&corpus));
}
