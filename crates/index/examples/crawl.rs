//! Crawls a directory and prints index statistics: `cargo run --release --example crawl DIR`.

#![allow(clippy::print_stdout)]

use std::path::PathBuf;
use std::time::Instant;

use agentls_index::{Index, Overlay};

fn main() {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| ".".into());
    let start = Instant::now();
    let mut index = Index::default();
    let stats = index.crawl(&root, &Overlay::new());
    let elapsed = start.elapsed();
    println!("{stats:?} in {elapsed:?}");
    println!("{:?}", index.stats());
}
