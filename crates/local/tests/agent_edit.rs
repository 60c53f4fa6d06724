//! Real-model end-to-end: Qwen2.5-Coder-0.5B (temperature 0) runs the agent headless on
//! a copy of `fixtures/workspaces/rust`; its constrained `str_replace` call reaches the
//! real tool and the edit lands on disk. Needs the weights (`agentls model fetch
//! qwen2.5-coder-0.5b`, or `AGENTLS_TEST_GGUF_CODER`); without them it prints SKIPPED (fails under CI).
//! One to four minutes on two shared cores.

#![allow(clippy::print_stderr)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentls_agent::{HeadlessOptions, SessionConfig, Status, ToolSet};
use agentls_local::{LocalProvider, catalog_entry, default_data_dir, installed_path};
use agentls_model::{CancellationToken, ModelsConfig};

fn model_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("AGENTLS_TEST_GGUF_CODER") {
        return Some(PathBuf::from(p));
    }
    let (p, present) = installed_path(catalog_entry("qwen2.5-coder-0.5b")?, &default_data_dir()?);
    present.then_some(p)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        } else {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_constrained_call_reaches_the_real_tool_and_the_edit_lands() {
    let Some(path) = model_path() else {
        common::missing(
            "a_constrained_call_reaches_the_real_tool_and_the_edit_lands",
            "Qwen2.5-Coder-0.5B weights (agentls model fetch qwen2.5-coder-0.5b)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A fixed workspace path: the root is in the prompt, and with a random one the
    // 0.5B model's answer after its edit changed from run to run (it answered, or
    // repeated the landed edit until its steps ran out).
    let ws = std::env::temp_dir().join("agentls-agent-edit-test");
    let _ = std::fs::remove_dir_all(&ws);
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/workspaces/rust"),
        &ws,
    )
    .unwrap();
    let provider = LocalProvider::load("qwen-0.5b", &path).unwrap();
    let options = HeadlessOptions {
        workspace: ws.clone(),
        task: "In src/lib.rs, replace the line `pub const MAX_SHAPES: usize = 64;` with `pub const MAX_SHAPES: usize = 128;`. Use the str_replace tool, then say done.".into(),
        model: None,
        models: ModelsConfig::default(),
        provider: Some(Arc::new(provider)),
        tools: ToolSet::default(),
        session: SessionConfig::default(),
        trajectory_dir: Some(dir.path().join("traj")),
        cancel: CancellationToken::new(),
        approver: None,
        verify: Default::default(),
    };
    let outcome = agentls_agent::run_headless(options, |_| {}).await.unwrap();
    let lib = std::fs::read_to_string(ws.join("src/lib.rs")).unwrap();
    assert!(lib.contains("pub const MAX_SHAPES: usize = 128;"), "{lib}");
    assert!(!lib.contains("MAX_SHAPES: usize = 64"));
    assert!(
        matches!(outcome.status, Status::Done { .. }),
        "{:?}",
        outcome.status
    );
    assert_eq!(
        outcome.metrics.calls_by_tool.get("str_replace"),
        Some(&1),
        "{:?}",
        outcome.metrics
    );
}
