//! Semantic search in the server: after the first crawl the chunks follow the index, and
//! a background task embeds them (with `$/progress` for the first build), stores the
//! vectors under the user's cache directory keyed by workspace, and keeps embedding the
//! chunks that edits change; past [`agentls_semantic::GRAPH_MIN`] vectors it also links
//! them into a nearest-neighbour graph. Requests never wait for it: they answer from
//! what is ready and say how much is.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tower_lsp::Client;

use crate::indexing::Progress;
use crate::state::State;

/// One round of embedding: short, so the task notices changes and shutdown quickly.
const ROUND: Duration = Duration::from_millis(500);
/// Chunks per model call.
const BATCH: usize = 64;
/// How often an idle follower looks for changes.
const IDLE: Duration = Duration::from_secs(1);
/// How often new vectors are written back to the store.
const SAVE_EVERY: Duration = Duration::from_secs(60);

/// Starts following the workspace; returns when the server's state is gone.
pub async fn follow(state: Arc<State>, client: Client, root: PathBuf) {
    let configured = state.config().config.semantic.embedder.clone();
    let embedder =
        tokio::task::spawn_blocking(move || crate::embedding::for_server(configured.as_deref()))
            .await
            .ok()
            .flatten();
    let Some(embedder) = embedder else {
        // Words only: the chunks follow the index at each search, nothing to do here.
        return;
    };
    state.semantic.set_embedder(embedder.clone());
    let store = agentls_semantic::store::default_path(&root);
    let weak = Arc::downgrade(&state);
    let (loaded, pending) = {
        let semantic = state.semantic.clone();
        let index = state.index_handle();
        let store = store.clone();
        let id = embedder.id().to_owned();
        tokio::task::spawn_blocking(move || {
            semantic.sync(&index);
            let loaded = store
                .as_deref()
                .and_then(|p| agentls_semantic::store::load(p, &id).ok())
                .map(|v| {
                    let n = v.len();
                    semantic.with_mut(|s| s.load_vectors(&id, v));
                    n
                })
                .unwrap_or(0);
            let stats = semantic.stats();
            (loaded, stats.chunks - stats.embedded)
        })
        .await
        .unwrap_or((0, 0))
    };
    tracing::info!(loaded, pending, "semantic index: stored vectors loaded");
    drop(state);
    let mut progress = None;
    if pending > 0
        && let Some(state) = weak.upgrade()
    {
        progress = Some(
            Progress::begin(
                &state,
                &client,
                "agentls: semantic index",
                &format!("{pending} chunks to embed"),
            )
            .await,
        );
    }
    let mut last_save = std::time::Instant::now();
    let mut unsaved = 0usize;
    let mut linking: Option<tokio::task::JoinHandle<()>> = None;
    loop {
        let Some(state) = weak.upgrade() else {
            return;
        };
        let semantic = state.semantic.clone();
        let index = state.index_handle();
        drop(state);
        let for_graph = semantic.clone();
        let (done, stats) = tokio::task::spawn_blocking(move || {
            semantic.sync(&index);
            // Below the editor's priority: with the whole model this runs for as long as
            // half an hour on two cores for a thousand files.
            let done = agentls_semantic::at_low_priority(|| semantic.embed_some(ROUND, BATCH));
            (done, semantic.stats())
        })
        .await
        .unwrap_or_default();
        // Nothing left to embed: link a graph if the vectors outgrew the scan. A task of
        // its own (minutes past 100k vectors), so that edits are embedded meanwhile.
        if done == 0 && linking.as_ref().is_none_or(|t| t.is_finished()) {
            linking = Some(tokio::task::spawn_blocking(move || {
                let started = std::time::Instant::now();
                if let Some(n) = for_graph.refresh_graph() {
                    tracing::info!(
                        vectors = n,
                        ms = started.elapsed().as_millis() as u64,
                        "semantic index: nearest-neighbour graph built"
                    );
                }
            }));
        }
        unsaved += done;
        let finished = stats.embedded >= stats.chunks;
        if let Some(p) = &progress {
            if finished {
                if let Some(p) = progress.take() {
                    p.end(
                        &client,
                        format!("{} chunks of {} files embedded", stats.chunks, stats.files),
                    )
                    .await;
                }
            } else {
                let pct = (stats.embedded * 100 / stats.chunks.max(1)) as u32;
                p.report(
                    &client,
                    format!("{} of {} chunks", stats.embedded, stats.chunks),
                    pct,
                )
                .await;
            }
        }
        if unsaved > 0 && (finished || last_save.elapsed() > SAVE_EVERY) {
            if let (Some(path), Some(state)) = (store.clone(), weak.upgrade()) {
                let semantic = state.semantic.clone();
                let id = embedder.id().to_owned();
                drop(state);
                let saved = tokio::task::spawn_blocking(move || {
                    semantic.with(|s| agentls_semantic::store::save(&path, &id, s.vectors()))
                })
                .await;
                match saved {
                    Ok(Ok(n)) => tracing::debug!(vectors = n, "semantic vectors stored"),
                    Ok(Err(e)) => tracing::warn!("storing semantic vectors: {e}"),
                    Err(e) => tracing::warn!("storing semantic vectors: {e}"),
                }
            }
            unsaved = 0;
            last_save = std::time::Instant::now();
        }
        if done == 0 {
            tokio::time::sleep(IDLE).await;
        }
    }
}
