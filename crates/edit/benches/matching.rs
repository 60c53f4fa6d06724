//! Matching and diffing on a generated 50,000-line file: exact and each fuzzy level, with
//! a plain substring search of the same text as the reference measured in the same run.

use std::hint::black_box;
use std::time::Instant;

use agentls_edit::{MatchLevel, diff, locate};
use criterion::Criterion;

const LINES: usize = 50_000;

/// A Rust-looking file of unique lines, 10-line functions.
fn generated() -> String {
    let mut s = String::with_capacity(LINES * 48);
    let mut i = 0;
    while i < LINES {
        s.push_str(&format!("fn item_{i}() -> u32 {{\n"));
        for j in 1..9 {
            s.push_str(&format!("    let v{j} = lookup(\"key-{i}-{j}\", {j});\n"));
        }
        s.push_str("}\n");
        i += 10;
    }
    s
}

/// The search text for `level`, taken from function number `at`.
fn search_for(file: &str, level: MatchLevel, at: usize) -> String {
    let lines: Vec<&str> = file.lines().skip(at * 10).take(10).collect();
    let block = &lines[1..6];
    let join = |v: Vec<String>| v.join("\n");
    match level {
        MatchLevel::Exact => block.join("\n"),
        MatchLevel::TrailingWhitespace => join(block.iter().map(|l| format!("{l}  ")).collect()),
        MatchLevel::IndentOffset => join(block.iter().map(|l| format!("    {l}")).collect()),
        MatchLevel::SurroundingWhitespace => join(
            block
                .iter()
                .map(|l| format!("\t{}", l.trim_start()))
                .collect(),
        ),
        MatchLevel::UnicodeFolded => join(
            block
                .iter()
                .map(|l| {
                    l.replace("(\"", "(\u{201C}")
                        .replace("\",", "\u{201D},")
                        .replace('-', "\u{2013}")
                })
                .collect(),
        ),
        MatchLevel::Elision => join(vec![
            lines[0].to_string(),
            lines[1].to_string(),
            "    ...".into(),
            lines[9].to_string(),
        ]),
    }
}

fn bench(c: &mut Criterion) {
    let file = generated();
    let at = 4_321; // near the end: the scan covers most of the file
    let mut group = c.benchmark_group("locate_50k");
    group.sample_size(20);
    let exact = search_for(&file, MatchLevel::Exact, at);
    group.bench_function("reference_str_find", |b| {
        b.iter(|| black_box(file.find(exact.as_str())))
    });
    for level in MatchLevel::ALL {
        let search = search_for(&file, level, at);
        let found = locate(&file, &search, None);
        assert_eq!(
            found.as_ref().map(|f| f.1).ok(),
            Some(level),
            "{level:?}: {found:?}"
        );
        group.bench_function(format!("{level:?}"), |b| {
            b.iter(|| locate(black_box(&file), &search, None))
        });
    }
    group.finish();
    let changed = file.replacen("key-43210-3", "key-43210-three", 1);
    c.bench_function("diff_50k_one_change", |b| {
        b.iter(|| diff(black_box(&file), &changed))
    });
}

/// Milliseconds per call of `f`, best of a few runs.
fn ms_per_op(mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..5 {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1000.0 / 5.0);
    }
    best
}

/// One summary table: ms per op and the ratio to `str::find` on the same text.
fn summary() {
    let file = generated();
    let at = 4_321;
    let exact = search_for(&file, MatchLevel::Exact, at);
    let reference = ms_per_op(|| {
        black_box(file.find(exact.as_str()));
    });
    eprintln!(
        "\nedit matching on a {LINES}-line file ({} bytes)",
        file.len()
    );
    eprintln!("{:<24} {:>10} {:>12}", "case", "ms/op", "x str::find");
    eprintln!(
        "{:<24} {:>10.3} {:>12}",
        "reference str::find", reference, "1.0"
    );
    for level in MatchLevel::ALL {
        let search = search_for(&file, level, at);
        let ms = ms_per_op(|| {
            let _ = black_box(locate(&file, &search, None));
        });
        eprintln!(
            "{:<24} {:>10.3} {:>12.1}",
            format!("{level:?}"),
            ms,
            ms / reference
        );
    }
    let missing = search_for(&file, MatchLevel::Exact, at).replace("lookup", "fetch");
    let ms = ms_per_op(|| {
        let _ = black_box(locate(&file, &missing, None));
    });
    eprintln!(
        "{:<24} {:>10.3} {:>12.1}",
        "no match + nearest",
        ms,
        ms / reference
    );
    let changed = file.replacen("key-43210-3", "key-43210-three", 1);
    let ms = ms_per_op(|| {
        black_box(diff(&file, &changed));
    });
    eprintln!(
        "{:<24} {:>10.3} {:>12.1}",
        "diff one change",
        ms,
        ms / reference
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
    summary();
}
