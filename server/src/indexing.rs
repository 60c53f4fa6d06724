//! Keeps the symbol index current: the first crawl (with `$/progress`), re-indexing of
//! live buffers after edits (coalesced, off the LSP task), and file events from the
//! client or a watcher.

use std::path::PathBuf;
use std::sync::{Arc, RwLockReadGuard};

use agentls_index::{FileEvent, Index, Overlay};
use agentls_text::{DocUri, Snapshot};
use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

use crate::progress::Progress;
use crate::state::State;

pub(crate) mod jobs;

use jobs::Job;

/// Crawls `root` on a blocking thread, reporting progress to the client when it can show
/// it, then swaps the new index in and re-applies the buffers opened meanwhile.
pub async fn crawl(state: Arc<State>, client: Client, root: PathBuf) {
    let follow_root = root.clone();
    let progress = Progress::begin(
        &state,
        &client,
        "agentls: indexing",
        &root.display().to_string(),
    )
    .await;
    let crawl_state = state.clone();
    let options = agentls_index::IndexOptions {
        skip_generated: state.config().config.index.skip_generated,
        ..agentls_index::IndexOptions::default()
    };
    let result = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let mut index = Index::new(options);
        let stats = index.crawl(&root, &Overlay::from_store(&crawl_state.store));
        (index, stats, started.elapsed())
    })
    .await;
    let message = match result {
        Ok((mut index, stats, took)) => {
            // Buffers that changed during the crawl: their latest text wins.
            for snapshot in state.store.snapshots() {
                if let Some(path) = snapshot.uri.to_file_path() {
                    index.update_file(&path, &snapshot.text());
                }
            }
            let bytes_per_line = index.stats().bytes_per_line;
            *state.index_mut() = index;
            tracing::info!(
                files = stats.files,
                lines = stats.lines,
                ?took,
                bytes_per_line,
                "indexed"
            );
            format!(
                "{} files, {} lines in {:.1?}",
                stats.files, stats.lines, took
            )
        }
        Err(e) => {
            tracing::error!("indexing failed: {e}");
            format!("indexing failed: {e}")
        }
    };
    progress.end(&client, message).await;
    // Semantic search follows the crawled index from here on.
    crate::semantic::follow(state, client, follow_root).await;
}

/// Queues `job`, starting the worker when none runs.
fn push(state: &Arc<State>, job: Job) {
    {
        let mut queue = state.index_jobs.queue();
        queue.jobs.push_back(job);
        if queue.running {
            return;
        }
        queue.running = true;
    }
    let state = state.clone();
    tokio::task::spawn_blocking(move || {
        let mut closed = 0usize;
        loop {
            let job = {
                let mut queue = state.index_jobs.queue();
                match queue.jobs.pop_front() {
                    Some(job) => job,
                    None => {
                        // Under the lock: a job pushed after this starts a new worker.
                        queue.running = false;
                        drop(queue);
                        if closed > 0 {
                            crate::memory::give_memory_back();
                        }
                        return;
                    }
                }
            };
            closed += usize::from(matches!(job, Job::Close(_)));
            // A panic in the index must not leave `running` set with nobody running.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&state, job))).is_err()
            {
                tracing::error!("an index job panicked");
            }
        }
    });
}

/// Buffers larger than this are parsed below the server's priority.
const LARGE_BUFFER: usize = 1 << 20;

fn run(state: &State, job: Job) {
    match job {
        Job::Update(uri) => {
            state.clear_index_pending(&uri);
            // A close that happens meanwhile queues its job behind this one, which then
            // finds the buffer gone or removes it again.
            let (Some(snapshot), Some(path)) = (state.store.snapshot(&uri), uri.to_file_path())
            else {
                return;
            };
            // Parsed with no lock held (a 10 MB file takes seconds); the index is locked
            // for writing only to swap the result in, and never takes an older version
            // of the buffer over a newer one.
            let (text, revision) = (Arc::<str>::from(snapshot.text()), snapshot.revision);
            drop(snapshot);
            let large = text.len() > LARGE_BUFFER;
            let index = state.index_handle();
            let update = move || agentls_index::update_buffer(&index, &path, text, revision);
            if large {
                // Re-parsing it after each keystroke keeps a core busy for as long as
                // the user types: below the server's priority, so that requests get
                // the cores first (on two loaded cores, p95 of `workspace/symbol` went
                // from 2.8x to 1.0x of its idle value: docs/benchmarks-heavy.md).
                agentls_semantic::at_low_priority(update);
            } else {
                update();
            }
        }
        // The disk's version is read and parsed with no lock held, and swapped in under
        // the write lock, as a buffer's re-parse is.
        Job::Close(path) => agentls_index::close_path(&state.index_handle(), &path),
        Job::Events(events) => agentls_index::apply_events(&state.index_handle(), &events),
    }
}

/// Re-indexes an open document from its live text, soon, off the LSP task. Several
/// changes in a row cost one re-index: a document already queued is not queued again,
/// and the job reads the newest text when it runs.
pub fn schedule_update(state: &Arc<State>, uri: DocUri) {
    if !state.mark_index_pending(&uri) {
        return;
    }
    push(state, Job::Update(uri));
}

/// The live buffers a request reads through the index.
#[derive(Debug, Clone, Copy)]
pub enum Reads<'a> {
    /// One document's (its outline, say).
    One(&'a DocUri),
    /// Every open document's (workspace-wide symbols, definitions by name).
    All,
}

/// Rounds of catching up before a request answers from the index as it is: each
/// round parses what is behind, and only a change that arrives meanwhile (after the
/// request, so not one it must see) or a parser that gives up makes another.
const CATCH_UP_ROUNDS: usize = 3;

/// The index holding every `didOpen`/`didChange` the client sent before now, for the
/// buffers `reads` names: a request reads its client's own writes (the LSP ordering
/// rule) whatever the queued jobs still have to do. A buffer whose re-index is still
/// queued or running is parsed here, on the caller's thread (a request's, on the
/// blocking pool), and committed as the job would commit it; the index never takes an
/// older text over a newer one, and the job, when it runs, finds the text already in.
/// The check and the answer happen under one read guard, so a swap (the crawl's
/// result) cannot come between them.
pub fn caught_up<'s>(state: &'s State, reads: Reads<'_>) -> RwLockReadGuard<'s, Index> {
    for _ in 0..CATCH_UP_ROUNDS {
        let snapshots = match reads {
            Reads::One(uri) => state.store.snapshot(uri).into_iter().collect(),
            Reads::All => state.store.snapshots(),
        };
        let behind: Vec<(PathBuf, Snapshot)> = {
            let index = state.index();
            let behind: Vec<_> = snapshots
                .into_iter()
                .filter_map(|snapshot| {
                    let path = snapshot.uri.to_file_path()?;
                    let parsed = agentls_index::Language::from_path(&path).is_some();
                    (parsed && index.live_version(&path) != Some(snapshot.revision))
                        .then_some((path, snapshot))
                })
                .collect();
            if behind.is_empty() {
                return index;
            }
            behind
        };
        let index = state.index_handle();
        for (path, snapshot) in behind {
            let text = Arc::<str>::from(snapshot.text());
            agentls_index::update_buffer(&index, &path, text, snapshot.revision);
        }
    }
    tracing::debug!("the index is still behind a live buffer; answering from it as it is");
    state.index()
}

/// A buffer was closed: the index goes back to the disk's version of the file.
pub fn close(state: &Arc<State>, uri: &DocUri) {
    if let Some(path) = uri.to_file_path() {
        push(state, Job::Close(path));
    }
}

/// Applies file events (from `workspace/didChangeWatchedFiles` or the watcher).
pub fn apply_events(state: &Arc<State>, events: Vec<FileEvent>) {
    push(state, Job::Events(events));
}

/// Converts `didChangeWatchedFiles` events.
pub fn file_events(params: lsp::DidChangeWatchedFilesParams) -> Vec<FileEvent> {
    params
        .changes
        .into_iter()
        .filter_map(|change| {
            let path = change.uri.to_file_path().ok()?;
            Some(if change.typ == lsp::FileChangeType::DELETED {
                FileEvent::Removed(path)
            } else {
                FileEvent::Changed(path)
            })
        })
        .collect()
}
