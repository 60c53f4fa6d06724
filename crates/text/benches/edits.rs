//! `didChange` cost: 10,000 single-character edits at random places, through the real
//! path (UTF-16 position → rope offset → insert), on files of 100 KB, 1 MB and 10 MB,
//! beside a naive `String` that finds the offset by scanning lines and inserts in place.
//!
//! Criterion measures each case; a summary measured in the same run then prints the
//! per-edit times side by side with their ratio, and how the rope's time grows with size.

// A benchmark reports on stdout; criterion_group! makes undocumented items.
#![allow(clippy::print_stdout, missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentls_text::{ContentChange, DocUri, Document, Position, PositionEncoding, Range};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};

const EDITS: usize = 10_000;
const SIZES: [(&str, usize); 3] = [("100KB", 100 << 10), ("1MB", 1 << 20), ("10MB", 10 << 20)];

/// A source-like text of about `bytes` bytes, with some non-ASCII on every line.
fn make_text(bytes: usize) -> String {
    let line = "    let value = compute(\"é日\", 42); // a fairly ordinary line\n";
    line.repeat(bytes / line.len() + 1)
}

/// Deterministic positions (line, UTF-16 column) spread over the text.
fn positions(text: &str, n: usize) -> Vec<(u32, u32)> {
    let lines = text.lines().count() as u64;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state % lines) as u32, ((state >> 32) % 40) as u32)
        })
        .collect()
}

fn rope_edits(doc: &mut Document, at: &[(u32, u32)]) {
    for (i, &(line, col)) in at.iter().enumerate() {
        let pos = Position::new(line, col);
        let change = ContentChange::replace(Range::new(pos, pos), "x");
        let _ = doc.apply_changes(
            i as i32 + 2,
            std::slice::from_ref(&change),
            PositionEncoding::Utf16,
        );
    }
}

/// What a server without a rope does: scan to the line, count UTF-16 units, insert.
fn string_edits(text: &mut String, at: &[(u32, u32)]) {
    for &(line, col) in at {
        let start = text
            .split_inclusive('\n')
            .take(line as usize)
            .map(str::len)
            .sum::<usize>();
        let mut units = 0;
        let mut offset = start;
        for (i, c) in text[start..].char_indices() {
            if units >= col as usize || c == '\n' {
                offset = start + i;
                break;
            }
            units += c.len_utf16();
        }
        text.insert(offset, 'x');
    }
}

/// The naive baseline at 10 MB does fewer edits (each moves ~10 MB); times are per edit.
fn string_edit_count(bytes: usize) -> usize {
    if bytes > (1 << 20) { 300 } else { EDITS }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("didChange");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    for (name, bytes) in SIZES {
        let text = make_text(bytes);
        let at = positions(&text, EDITS);
        let doc = Document::new(DocUri::new("file:///bench"), "rust", 1, &text);
        group.throughput(Throughput::Elements(EDITS as u64));
        group.bench_with_input(BenchmarkId::new("rope", name), &at, |b, at| {
            b.iter_batched(
                || doc.clone(),
                |mut d| rope_edits(&mut d, at),
                criterion::BatchSize::LargeInput,
            )
        });
        let n = string_edit_count(bytes);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("string", name), &at[..n], |b, at| {
            b.iter_batched(
                || text.clone(),
                |mut t| string_edits(&mut t, at),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// Median per-edit time of `runs` passes.
fn per_edit(runs: usize, edits: usize, mut pass: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            pass();
            t.elapsed() / edits as u32
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn summary() {
    println!("\nsummary: per-edit time, median of 3 passes, measured in this run");
    println!(
        "{:>6}  {:>12}  {:>12}  {:>8}",
        "size", "rope", "String", "ratio"
    );
    let mut rope_times = Vec::new();
    for (name, bytes) in SIZES {
        let text = make_text(bytes);
        let at = positions(&text, EDITS);
        let doc = Document::new(DocUri::new("file:///bench"), "rust", 1, &text);
        let rope = per_edit(3, EDITS, || rope_edits(&mut black_box(doc.clone()), &at));
        let n = string_edit_count(bytes);
        let string = per_edit(3, n, || {
            string_edits(&mut black_box(text.clone()), &at[..n])
        });
        let ratio = string.as_secs_f64() / rope.as_secs_f64();
        println!("{name:>6}  {:>12?}  {:>12?}  {ratio:>7.0}x", rope, string);
        rope_times.push(rope);
    }
    let growth = rope_times[2].as_secs_f64() / rope_times[0].as_secs_f64();
    println!("rope per-edit time, 10MB / 100KB: {growth:.2}x (flat means independent of size)");
}

criterion_group!(benches, bench);

fn main() {
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
    summary();
}
