//! `agentls bench complete --limit` on a few cases of the committed set, with the real
//! Qwen2.5-Coder-0.5B (built only with the `local` feature; `.ci/run` runs it): both
//! sides answer every case, the report counts them, and the cases' files are found
//! on this machine. Without the weights it prints SKIPPED (fails under CI).

#![allow(clippy::unwrap_used)]

mod common;

use agentls_eval::bench_complete::{Options, run};

#[test]
fn a_few_cases_run_through_both_sides() {
    if common::coder_model("a_few_cases_run_through_both_sides").is_none() {
        return;
    }
    let report = run(&Options {
        limit: Some(6),
        max_tokens: 24,
        ..Options::default()
    })
    .unwrap();
    assert!(report.missing.is_empty(), "{:?}", report.missing);
    assert_eq!(report.cases.len(), 6);
    let (ours, reference) = &report.groups["all"];
    assert_eq!((ours.cases, reference.cases), (6, 6));
    for c in &report.cases {
        assert!(c.ours.last_ms > 0.0 && c.reference.last_ms > 0.0, "{c:?}");
        assert!(c.ours.first_ms <= c.ours.last_ms, "{c:?}");
    }
    // The table prints both sides and the ratios.
    let table = report.to_string();
    assert!(table.contains("agentls, llama.cpp"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("all ")), "{table}");
}
