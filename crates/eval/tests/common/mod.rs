//! What eval's real-model tests share: the weights of Qwen2.5-Coder-0.5B, or a
//! `SKIPPED` line without them (a failure under CI, where `.ci/run` fetches them).

#![allow(clippy::print_stderr)]

/// The fetched Qwen2.5-Coder-0.5B weights; `None` after saying (under CI: failing) that
/// `test` cannot run without them.
pub fn coder_model(test: &str) -> Option<std::path::PathBuf> {
    let entry = agentls_local::catalog_entry("qwen2.5-coder-0.5b")?;
    let path = agentls_local::default_data_dir()
        .map(|dir| agentls_local::installed_path(entry, &dir))
        .and_then(|(path, present)| present.then_some(path));
    if path.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: qwen2.5-coder-0.5b not fetched, and under CI this test must run"
        );
        eprintln!("SKIPPED {test}: qwen2.5-coder-0.5b not fetched");
    }
    path
}
