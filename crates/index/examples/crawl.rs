//! Crawls a directory and prints index statistics:
//! `cargo run --release --example crawl [--all] DIR`.

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::Instant;

use agentls_index::{Index, IndexOptions, Overlay};

fn main() {
    // `--all`: generated files too.
    let all = std::env::args().any(|a| a == "--all");
    let root = std::env::args_os()
        .skip(1)
        .find(|a| a != "--all")
        .map(PathBuf::from)
        .unwrap_or_else(|| ".".into());
    let start = Instant::now();
    let mut index = Index::new(IndexOptions {
        skip_generated: !all,
        ..IndexOptions::default()
    });
    let stats = index.crawl(&root, &Overlay::new());
    let elapsed = start.elapsed();
    println!("{stats:?} in {elapsed:?}");
    println!("{:?}", index.stats());
}
