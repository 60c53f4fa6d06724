//! Keeps the symbol index current: the first crawl (with `$/progress`), re-indexing of
//! live buffers after edits (coalesced, off the LSP task), and file events from the
//! client or a watcher.

use std::path::PathBuf;
use std::sync::Arc;

use agentls_index::{FileEvent, Index, Overlay};
use agentls_text::DocUri;
use tower_lsp::Client;
use tower_lsp::lsp_types as lsp;

use crate::state::State;

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

/// Index work that follows the editor, run one job at a time, in order, on the blocking
/// pool.
///
/// One job at a time, because a burst of opens and closes spawned one blocking task
/// each, all but one waiting for the index lock: tokio grew its pool to a hundred
/// threads, each leaving a malloc arena, a mimalloc heap and a stack behind (measured:
/// 2,000 documents of 100 KB opened and closed, RSS +93 MiB with 102 threads). In order,
/// because a close must not be overtaken by the update of the buffer it closes (which
/// left closed buffers live in the index: +498 MiB). A buffer is parsed with no lock
/// held ([`agentls_index::update_buffer`]), a large one below the server's priority;
/// once the queue drains after closes, the heaps give their free pages back
/// ([`give_memory_back`]). Measured by `agentls bench heavy` (docs/benchmarks-heavy.md).
#[derive(Debug, Default)]
pub struct Jobs {
    queue: std::sync::Mutex<JobQueue>,
}

#[derive(Debug, Default)]
struct JobQueue {
    jobs: std::collections::VecDeque<Job>,
    running: bool,
}

#[derive(Debug)]
enum Job {
    Update(DocUri),
    Close(PathBuf),
    Events(Vec<FileEvent>),
}

impl Jobs {
    fn queue(&self) -> std::sync::MutexGuard<'_, JobQueue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
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
                            give_memory_back();
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

/// Returns the heap's free pages to the system once closes have freed buffers, trees and
/// names: glibc keeps freed memory in its arenas (measured: 2,000 documents of 100 KB
/// opened, then closed, left RSS +240 MiB over a fresh server for as long as it ran).
pub(crate) fn give_memory_back() {
    // The trees, on mimalloc (see `agentls_index::give_memory_back`).
    agentls_index::give_memory_back();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let started = std::time::Instant::now();
        // SAFETY: `malloc_trim` has no preconditions: it only hands glibc's free pages
        // back to the kernel, and may run while other threads allocate.
        let released = unsafe { libc::malloc_trim(0) };
        tracing::debug!(
            released,
            ms = started.elapsed().as_millis() as u64,
            "index: heap trimmed after closes"
        );
    }
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
        Job::Close(path) => state.index_mut().close_file(&path),
        Job::Events(events) => {
            let mut index = state.index_mut();
            for event in &events {
                index.apply_event(event);
            }
        }
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

/// A `$/progress` sequence, or nothing when the client cannot show one.
pub struct Progress {
    token: Option<lsp::NumberOrString>,
}

impl Progress {
    /// Creates the token and sends `begin`.
    pub async fn begin(state: &State, client: &Client, title: &str, message: &str) -> Self {
        if !state.client_caps().work_done_progress {
            return Self { token: None };
        }
        let token = lsp::NumberOrString::String(format!("agentls/{}", state.next_token()));
        let created = client
            .send_request::<lsp::request::WorkDoneProgressCreate>(
                lsp::WorkDoneProgressCreateParams {
                    token: token.clone(),
                },
            )
            .await;
        if let Err(e) = created {
            tracing::debug!("client refused a progress token: {e}");
            return Self { token: None };
        }
        let begin = lsp::WorkDoneProgress::Begin(lsp::WorkDoneProgressBegin {
            title: title.to_owned(),
            cancellable: Some(false),
            message: Some(message.to_owned()),
            percentage: None,
        });
        send_progress(client, &token, begin).await;
        Self { token: Some(token) }
    }

    /// Sends `report` with a message and a percentage.
    pub async fn report(&self, client: &Client, message: String, percentage: u32) {
        if let Some(token) = &self.token {
            let report = lsp::WorkDoneProgress::Report(lsp::WorkDoneProgressReport {
                cancellable: Some(false),
                message: Some(message),
                percentage: Some(percentage.min(100)),
            });
            send_progress(client, token, report).await;
        }
    }

    /// Sends `end` with a final message.
    pub async fn end(self, client: &Client, message: String) {
        if let Some(token) = &self.token {
            let end = lsp::WorkDoneProgress::End(lsp::WorkDoneProgressEnd {
                message: Some(message),
            });
            send_progress(client, token, end).await;
        }
    }
}

async fn send_progress(client: &Client, token: &lsp::NumberOrString, value: lsp::WorkDoneProgress) {
    client
        .send_notification::<lsp::notification::Progress>(lsp::ProgressParams {
            token: token.clone(),
            value: lsp::ProgressParamsValue::WorkDone(value),
        })
        .await;
}
