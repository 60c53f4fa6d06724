//! The index's job queue, held in the server's state (so below it: nothing here reads
//! the state); `indexing.rs` pushes the jobs and runs them.

use std::path::PathBuf;

use agentls_index::FileEvent;
use agentls_text::DocUri;

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
/// ([`crate::memory::give_memory_back`]). Measured by `agentls bench heavy` (docs/benchmarks-heavy.md).
#[derive(Debug, Default)]
pub struct Jobs {
    queue: std::sync::Mutex<JobQueue>,
}

#[derive(Debug, Default)]
pub(crate) struct JobQueue {
    pub(crate) jobs: std::collections::VecDeque<Job>,
    pub(crate) running: bool,
}

#[derive(Debug)]
pub(crate) enum Job {
    Update(DocUri),
    Close(PathBuf),
    Events(Vec<FileEvent>),
}

impl Jobs {
    pub(crate) fn queue(&self) -> std::sync::MutexGuard<'_, JobQueue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}
