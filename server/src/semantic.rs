//! Semantic search in the server: after the first crawl the chunks follow the index, and
//! a background task embeds them (with `$/progress` for the first build), stores the
//! vectors under the user's cache directory keyed by workspace, and keeps embedding the
//! chunks that edits change; past [`agentls_semantic::GRAPH_MIN`] vectors it also links
//! them into a nearest-neighbour graph. Requests never wait for it: they answer from
//! what is ready and say how much is.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentls_semantic::Succession;
use tower_lsp::Client;

use crate::progress::Progress;
use crate::state::State;

/// One round of embedding: short, so the task notices changes and shutdown quickly.
const ROUND: Duration = Duration::from_millis(500);
/// Chunks per model call.
const BATCH: usize = 64;
/// Chunks per call of the better model (about 50 ms a chunk on two cores: a round
/// stays near a second).
const SUCCESSOR_BATCH: usize = 16;
/// How often an idle follower looks for changes.
const IDLE: Duration = Duration::from_secs(1);
/// Chunks a sync must drop before the heap is trimmed after it.
const CHUNKS_FREED: usize = 1_000;
/// How often new vectors are written back to the store.
const SAVE_EVERY: Duration = Duration::from_secs(60);

/// Starts following the workspace; returns when the server's state is gone.
pub async fn follow(state: Arc<State>, client: Client, root: PathBuf) {
    let configured = state.config().config.semantic.embedder.clone();
    let tiers = tokio::task::spawn_blocking(move || {
        crate::embedding::tiers_for_server(configured.as_deref())
    })
    .await
    .ok()
    .flatten();
    let Some(tiers) = tiers else {
        // Words only: the chunks follow the index at each search, nothing to do here.
        return;
    };
    state.semantic.set_embedder(tiers.now.clone());
    let weak = Arc::downgrade(&state);
    let (loaded, pending, later) = {
        let semantic = state.semantic.clone();
        let index = state.index_handle();
        let root = root.clone();
        tokio::task::spawn_blocking(move || {
            agentls_agent::adopt_unnamed_vectors(&root);
            semantic.sync(&index);
            let loaded = agentls_semantic::store::default_path(&root, tiers.now.id())
                .map_or(0, |p| semantic.keep_in(p));
            let later = tiers.later.map(|later| {
                let store = agentls_semantic::store::default_path(&root, later.id());
                semantic.set_successor(later, store, agentls_semantic::MovedBy::Background)
            });
            let stats = semantic.stats();
            (loaded, stats.chunks - stats.embedded, later)
        })
        .await
        .unwrap_or((0, 0, None))
    };
    tracing::info!(loaded, pending, "semantic index: stored vectors loaded");
    if let Some(read) = later {
        tracing::info!(
            read,
            "semantic index: a better model embeds in the background and takes over when done"
        );
    }
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
    // The better model's own progress, once the first tier is done.
    let mut succession: Option<Option<Progress>> = later.map(|_| None);
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
        let (done, stats, round, gone) = tokio::task::spawn_blocking(move || {
            let chunks = semantic.stats().chunks;
            semantic.sync(&index);
            // Closed buffers' chunks and vectors went: their pages go back too.
            if semantic.stats().chunks + CHUNKS_FREED < chunks {
                crate::memory::give_memory_back();
            }
            // Below the editor's priority: with the whole model this runs for as long as
            // half an hour on two cores for a thousand files.
            let done = agentls_semantic::at_low_priority(|| semantic.embed_some(ROUND, BATCH));
            // The better model only once the first has embedded everything.
            let round = if done == 0 {
                agentls_semantic::at_low_priority(|| {
                    semantic.embed_successor_some(ROUND, SUCCESSOR_BATCH)
                })
            } else {
                Succession::default()
            };
            // Gone without taking over in this round: the tool's search moved it on
            // to the end.
            let gone = semantic.succession().is_none();
            (done, semantic.stats(), round, gone)
        })
        .await
        .unwrap_or_default();
        // Nothing left to embed: link a graph if the vectors outgrew the scan. A task of
        // its own (minutes past 100k vectors), so that edits are embedded meanwhile.
        if done == 0 && linking.as_ref().is_none_or(|t| t.is_finished()) {
            linking = Some(link_graph(for_graph));
        }
        unsaved += done;
        let finished = stats.embedded >= stats.chunks;
        report_embedding(&client, &mut progress, &stats, finished).await;
        if let Some(shown) = &mut succession {
            let round = Succession {
                took_over: round.took_over || gone,
                chunks: if gone { stats.chunks } else { round.chunks },
                covered: if gone { stats.chunks } else { round.covered },
                ..round
            };
            report_succession(&weak, &client, shown, round).await;
            if round.took_over {
                succession = None;
                // Its vectors are the index's now: written to its store at once.
                unsaved += 1;
                tracing::info!(
                    chunks = round.chunks,
                    "semantic index: the better model took over"
                );
            }
        }
        if (unsaved > 0 && (finished || last_save.elapsed() > SAVE_EVERY))
            || (round.embedded > 0 && last_save.elapsed() > SAVE_EVERY)
        {
            store_vectors(&weak).await;
            unsaved = 0;
            last_save = std::time::Instant::now();
        }
        if done == 0 && round.embedded == 0 {
            tokio::time::sleep(IDLE).await;
        }
    }
}

/// Links a nearest-neighbour graph over the vectors if they outgrew the scan: a task
/// of its own (minutes past 100k vectors), so that edits are embedded meanwhile.
fn link_graph(semantic: Arc<agentls_semantic::Service>) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        match semantic.link_graph() {
            agentls_semantic::Linked::Built(n) => tracing::info!(
                vectors = n,
                ms = started.elapsed().as_millis() as u64,
                "semantic index: nearest-neighbour graph built"
            ),
            agentls_semantic::Linked::GivenUp(n) => {
                tracing::info!(
                    vectors = n,
                    ms = started.elapsed().as_millis() as u64,
                    "semantic index: nearest-neighbour graph given up (its vectors went)"
                );
                // The links it made and the vectors it alone still held are free now.
                crate::memory::give_memory_back();
            }
            agentls_semantic::Linked::Unwanted => {}
        }
    })
}

/// The embedding's `$/progress`: a report per round, the end once every chunk is in.
async fn report_embedding(
    client: &Client,
    progress: &mut Option<Progress>,
    stats: &agentls_semantic::Stats,
    finished: bool,
) {
    let Some(p) = progress.as_ref() else {
        return;
    };
    if !finished {
        let pct = (stats.embedded * 100 / stats.chunks.max(1)) as u32;
        let message = format!("{} of {} chunks", stats.embedded, stats.chunks);
        p.report(client, message, pct).await;
    } else if let Some(p) = progress.take() {
        let message = format!("{} chunks of {} files embedded", stats.chunks, stats.files);
        p.end(client, message).await;
    }
}

/// Writes both tiers' vectors to their stores, off the async threads; a failure is a
/// warning (they are embedded again next time).
async fn store_vectors(weak: &std::sync::Weak<State>) {
    let Some(state) = weak.upgrade() else {
        return;
    };
    let semantic = state.semantic.clone();
    drop(state);
    let saved =
        tokio::task::spawn_blocking(move || (semantic.persist(), semantic.persist_successor()))
            .await;
    match saved {
        Ok((now, later)) => {
            for saved in [now, later].into_iter().flatten() {
                match saved {
                    Ok(n) => tracing::debug!(vectors = n, "semantic vectors stored"),
                    Err(e) => tracing::warn!("storing semantic vectors: {e}"),
                }
            }
        }
        Err(e) => tracing::warn!("storing semantic vectors: {e}"),
    }
}

/// The better model's `$/progress`: begun at its first round that embeds (or leaves work
/// for later), reported each round after, ended when it takes over. Nothing when it
/// takes over with the vectors stored by an earlier run.
async fn report_succession(
    weak: &std::sync::Weak<State>,
    client: &Client,
    shown: &mut Option<Progress>,
    round: Succession,
) {
    if round.chunks == 0 {
        return;
    }
    let what = format!("{} of {} chunks", round.covered, round.chunks);
    let mut begun = false;
    if shown.is_none()
        && (round.embedded > 0 || !round.took_over)
        && let Some(state) = weak.upgrade()
    {
        *shown = Some(
            Progress::begin(
                &state,
                client,
                "agentls: semantic index, better model",
                &format!("{what}; searches rank by the quicker model until it has them all"),
            )
            .await,
        );
        begun = true;
    }
    if round.took_over {
        if let Some(p) = shown.take() {
            p.end(
                client,
                format!("{} chunks embedded; it ranks now", round.chunks),
            )
            .await;
        }
    } else if let Some(p) = shown.as_ref().filter(|_| !begun) {
        let pct = (round.covered * 100 / round.chunks.max(1)) as u32;
        p.report(client, what, pct).await;
    }
}
