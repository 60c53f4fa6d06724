//! The tools' context on a workspace on disk, as a session without a front end's own
//! context gets it: the index crawled, the workspace's language servers started, the
//! sandbox for commands; and the one migration of stored vectors its semantic search
//! reads (`adopt_unnamed_vectors`).

use std::path::Path;
use std::sync::{Arc, RwLock};

use agentls_tools::ToolContext;

/// Crawls `root` into `index` before the first step, as the server does on `initialized`
/// (`server/src/indexing.rs`): without it `symbols` and `repo_map` answer nothing. The
/// crawl runs on a blocking thread into a fresh index, swapped in at the end, so the
/// lock is held for the swap only. A failed crawl leaves the index empty and says so.
async fn crawl(root: &Path, index: &Arc<RwLock<agentls_index::Index>>) {
    let crawl_root = root.to_path_buf();
    let result = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let mut fresh = agentls_index::Index::new(agentls_index::IndexOptions::default());
        let stats = fresh.crawl(&crawl_root, &agentls_index::Overlay::new());
        (fresh, stats, started.elapsed())
    })
    .await;
    match result {
        Ok((fresh, stats, took)) => {
            tracing::info!(files = stats.files, lines = stats.lines, ?took, "indexed");
            *index.write().unwrap_or_else(|p| p.into_inner()) = fresh;
        }
        Err(e) => tracing::error!("indexing failed: {e}"),
    }
}

/// The tools' context on the workspace `root` as every front end needs it: the index
/// crawled, the workspace's language servers started (for verify on edit), edits on
/// disk, and, when `writes`, the sandbox for commands. Nobody to ask: approvals are
/// refused until the caller sets its approver.
pub async fn workspace_context(
    root: &Path,
    verify: &crate::VerifyConfig,
    writes: bool,
) -> ToolContext {
    let mut ctx = ToolContext::on_disk(root);
    // Detected while the index crawls; started at once, so the first edit's check
    // does not pay for the start.
    let detect = {
        let (root, verify) = (root.to_path_buf(), verify.clone());
        tokio::task::spawn_blocking(move || crate::LspChecker::detect(&root, &verify))
    };
    crawl(root, &ctx.index).await;
    if let Ok(Some(checker)) = detect.await {
        checker.warm_up();
        ctx.checker = Some(Arc::new(checker));
    }
    if writes {
        match agentls_sandbox::Sandbox::new(agentls_sandbox::SandboxConfig::new(root)) {
            Ok(sb) => ctx.sandbox = Some(Arc::new(sb)),
            Err(e) => tracing::warn!("no sandbox, commands disabled: {e}"),
        }
    }
    ctx
}

/// Gives vectors the workspace at `root` stored under the name stores had before they
/// were named by model too their model's name, so that they are read back
/// ([`agentls_semantic::store::adopt_unnamed`]); the server and headless sessions call
/// it before reading their stores.
pub fn adopt_unnamed_vectors(root: &Path) {
    match agentls_semantic::store::adopt_unnamed(root) {
        Ok(Some(path)) => {
            tracing::info!(path = %path.display(), "stored vectors renamed by their model")
        }
        Ok(None) => {}
        Err(e) => tracing::warn!("stored vectors' old name: {e}"),
    }
}
