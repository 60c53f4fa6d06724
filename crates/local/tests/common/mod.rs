//! What the real-model tests share: where their weights are missing, a local run skips
//! them and says so, and CI fails them (`.ci/run` fetches the weights first: a test
//! that silently stopped running would prove nothing).

#![allow(dead_code, clippy::print_stderr)]

/// Says that `test` cannot run for want of `what`: a `SKIPPED` line outside CI, a
/// failure under CI (`CI` set).
pub fn missing(test: &str, what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {what} not found, and under CI every real-model test must run (.ci/run fetches the weights)"
    );
    eprintln!("SKIPPED {test}: {what} not found");
}
