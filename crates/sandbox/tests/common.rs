//! Shared helpers for the sandbox's integration tests.
#![allow(dead_code, missing_docs, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

use agentls_sandbox::{
    CancellationToken, Capabilities, Limits, RunOutcome, RunRequest, Sandbox, SandboxConfig, probe,
};

/// A secret the test process holds in its environment; no sandboxed command may see it.
pub const SECRET: &str = "sk-agentls-test-4b1d7c0ffee";

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: set once, before any sandbox is built, in a test binary.
        unsafe { std::env::set_var("AGENTLS_TEST_API_KEY", SECRET) };
    });
}

/// A workspace under /tmp (exercises the re-attach path) or under the target dir.
pub fn workspace(under_tmp: bool) -> tempfile::TempDir {
    init();
    if under_tmp {
        tempfile::Builder::new()
            .prefix("agentls-ws")
            .tempdir_in("/tmp")
            .unwrap()
    } else {
        tempfile::Builder::new()
            .prefix("agentls-ws")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
    }
}

pub fn sandbox(ws: &Path) -> Sandbox {
    let mut config = SandboxConfig::new(ws);
    config.env_passthrough.push("AGENTLS_TEST_API_KEY".into());
    Sandbox::new(config).unwrap()
}

pub fn limits(wall_ms: u64) -> Limits {
    Limits {
        wall_time: Duration::from_millis(wall_ms),
        ..Limits::default()
    }
}

pub async fn run(sb: &Sandbox, req: RunRequest) -> RunOutcome {
    sb.run(req, &CancellationToken::new()).await.unwrap()
}

pub async fn sh(sb: &Sandbox, script: &str) -> RunOutcome {
    run(sb, RunRequest::shell(script).limits(limits(20_000))).await
}

/// Processes on the host whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = entry.path().join("cmdline");
        if let Ok(bytes) = std::fs::read(&cmdline)
            && String::from_utf8_lossy(&bytes).contains(marker)
        {
            out.push(entry.path());
        }
    }
    out
}

pub fn text(out: &RunOutcome) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        out.stdout.to_text(),
        out.stderr.to_text()
    )
}

/// This machine's capabilities with some taken away, to exercise degraded modes.
pub fn reduced(edit: impl FnOnce(&mut Capabilities)) -> &'static Capabilities {
    let mut caps = probe().clone();
    edit(&mut caps);
    Box::leak(Box::new(caps))
}
