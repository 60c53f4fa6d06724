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

/// The weights of the catalog model `name`: `var`'s path when set, else the fetched
/// catalog copy; `None` after saying (under CI: failing) that `test` has none.
pub fn catalog_model(test: &str, name: &str, var: &str) -> Option<std::path::PathBuf> {
    use agentls_local::{catalog_entry, default_data_dir, installed_path};
    let path = match std::env::var_os(var) {
        Some(p) => Some(std::path::PathBuf::from(p)),
        None => catalog_entry(name)
            .zip(default_data_dir())
            .map(|(entry, dir)| installed_path(entry, &dir))
            .and_then(|(p, present)| present.then_some(p)),
    };
    if path.is_none() {
        missing(
            test,
            &format!("{name} weights (agentls model fetch {name}, or {var})"),
        );
    }
    path
}

/// The Qwen2.5-Coder-0.5B weights (`AGENTLS_TEST_GGUF_CODER`, else the catalog's).
pub fn coder_model(test: &str) -> Option<std::path::PathBuf> {
    catalog_model(test, "qwen2.5-coder-0.5b", "AGENTLS_TEST_GGUF_CODER")
}
