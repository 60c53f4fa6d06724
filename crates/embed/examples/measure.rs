//! Times the embedders on this machine: loading, distilling the static model, and
//! embedding 1,000 code chunks (40-line windows of the workspace's own Rust sources)
//! with the full model and the static one.
//!
//! ```text
//! cargo run -p agentls-embed --example measure [-- CHUNKS [static]]
//! ```
//!
//! With `static`, the full model's part is skipped and a saved static model reused.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use agentls_embed::{Bert, StaticModel};

fn chunks(dir: &Path, out: &mut Vec<String>, want: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if out.len() >= want {
            return;
        }
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() && !name.starts_with('.') && name != "target" {
            chunks(&p, out, want);
        } else if name.ends_with(".rs") {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            for w in lines.chunks(40) {
                if out.len() < want {
                    out.push(w.join("\n"));
                }
            }
        }
    }
}

fn main() {
    let want: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let only_static = std::env::args().nth(2).as_deref() == Some("static");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut texts = Vec::new();
    chunks(&root.join("crates"), &mut texts, want);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!(
        "{} chunks, {} bytes",
        refs.len(),
        texts.iter().map(String::len).sum::<usize>()
    );

    let models = agentls_embed::default_models_dir().expect("models dir");
    let files = agentls_embed::fetch(&models, &mut |_| {}).expect("fetch");
    let t = Instant::now();
    let bert = Bert::load(&files).expect("load");
    println!("load: {:?}", t.elapsed());

    let path = models.join("all-minilm-l6-v2.static");
    if only_static {
        let model = match StaticModel::load(&path, &files) {
            Ok(m) => m,
            Err(_) => {
                let t = Instant::now();
                let m = StaticModel::distill(&bert, &mut |_, _| {}).expect("distill");
                println!("distill: {:?}", t.elapsed());
                m.save(&path).expect("save");
                m
            }
        };
        time_static(&model, &refs);
        return;
    }
    let t = Instant::now();
    let full = bert.embed(&refs).expect("embed");
    let el = t.elapsed();
    println!(
        "full model: {} chunks in {:?} ({:.1} chunks/s)",
        full.len(),
        el,
        full.len() as f64 / el.as_secs_f64()
    );

    let t = Instant::now();
    let model = StaticModel::distill(&bert, &mut |_, _| {}).expect("distill");
    println!("distill: {:?}", t.elapsed());
    model.save(&path).expect("save");
    let t = Instant::now();
    let model = StaticModel::load(&path, &files).expect("load static");
    println!("static load: {:?}", t.elapsed());

    let fast = time_static(&model, &refs);
    // How far the static ranking is from the full one: for each chunk as the query,
    // the overlap of the top-10 neighbours under both.
    let top = |vs: &[Vec<f32>], q: usize| {
        let mut s: Vec<(f32, usize)> = vs
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != q)
            .map(|(i, v)| (agentls_embed::cosine(&vs[q], v), i))
            .collect();
        s.sort_by(|a, b| b.0.total_cmp(&a.0));
        s.into_iter().take(10).map(|x| x.1).collect::<Vec<_>>()
    };
    let n = fast.len().min(200);
    let overlap: usize = (0..n)
        .map(|q| {
            let a = top(&full, q);
            top(&fast, q).iter().filter(|i| a.contains(i)).count()
        })
        .sum();
    println!(
        "top-10 neighbour overlap static vs full over {n} queries: {:.1}%",
        100.0 * overlap as f64 / (10 * n) as f64
    );
}

/// Embeds `refs` with the static model, timing tokenizing and averaging apart.
fn time_static(model: &StaticModel, refs: &[&str]) -> Vec<Vec<f32>> {
    let t = Instant::now();
    let ids: Vec<Vec<u32>> = refs
        .iter()
        .map(|s| model.token_ids(s).expect("tokenize"))
        .collect();
    let tokenize = t.elapsed();
    let t = Instant::now();
    let fast: Vec<Vec<f32>> = ids
        .iter()
        .map(|ids| model.embed_ids(ids, model.default_weights()))
        .collect();
    let average = t.elapsed();
    let total = tokenize + average;
    println!(
        "static model: {} chunks in {total:?} ({:.0} chunks/s; tokenizing {tokenize:?}, averaging {average:?})",
        fast.len(),
        fast.len() as f64 / total.as_secs_f64()
    );
    fast
}
