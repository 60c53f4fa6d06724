//! Where a cold crawl's time goes, on one thread: walk, read, parse and drop, per
//! language, per file size and for generated files.
//! `cargo run --release -p agentls-index --example crawl_profile DIR`.

#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentls_index::{Index, Language, Overlay, looks_generated};

#[derive(Default)]
struct Row {
    files: usize,
    bytes: u64,
    parse: Duration,
    index: Duration,
}

fn main() {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| ".".into());
    let start = Instant::now();
    let files: Vec<(PathBuf, Language)> = ignore::WalkBuilder::new(&root)
        .require_git(false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| Language::from_path(e.path()).map(|l| (e.into_path(), l)))
        .collect();
    println!("walk: {} files in {:?}", files.len(), start.elapsed());
    let start = Instant::now();
    let texts: Vec<(PathBuf, Language, String)> = files
        .into_iter()
        .filter_map(|(p, l)| {
            let t = std::fs::read_to_string(&p).ok()?;
            (t.len() <= 2 << 20).then_some((p, l, t))
        })
        .collect();
    println!("read: {} files in {:?}", texts.len(), start.elapsed());
    let mut by_lang: BTreeMap<String, Row> = BTreeMap::new();
    let mut by_size: BTreeMap<u32, Row> = BTreeMap::new();
    let mut generated = Row::default();
    let mut index = Index::default();
    let mut total = Row::default();
    for (path, lang, text) in &texts {
        let t0 = Instant::now();
        let tree = lang.parse(text, None);
        let parse = t0.elapsed();
        drop(tree);
        let t0 = Instant::now();
        index.update_file(path, text);
        let full = t0.elapsed();
        index.remove_file(path);
        let bucket = (text.len().max(1) as f64).log2().ceil() as u32;
        for row in [
            by_lang.entry(format!("{lang:?}")).or_default(),
            by_size.entry(bucket).or_default(),
            &mut total,
        ] {
            row.files += 1;
            row.bytes += text.len() as u64;
            row.parse += parse;
            row.index += full;
        }
        if looks_generated(text) || text.len() > 1 << 20 {
            generated.files += 1;
            generated.bytes += text.len() as u64;
            generated.parse += parse;
            generated.index += full;
        }
    }
    let _ = Overlay::new();
    let show = |name: &str, r: &Row| {
        println!(
            "{name:<22} {:>6} files {:>8} KiB  parse {:>7.2}s  parse+tags+insert {:>7.2}s  {:>5.1}% of total",
            r.files,
            r.bytes / 1024,
            r.parse.as_secs_f64(),
            r.index.as_secs_f64(),
            100.0 * r.index.as_secs_f64() / total.index.as_secs_f64()
        )
    };
    for (k, r) in &by_lang {
        show(k, r);
    }
    for (k, r) in &by_size {
        show(&format!("<= 2^{k} bytes"), r);
    }
    show("generated", &generated);
    show("total", &total);
}
