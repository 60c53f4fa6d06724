//! Work the editor must not wait behind: linking a graph (minutes past 100k vectors) and
//! the server's background embedding (half an hour for a thousand files with the whole
//! model) run on threads at a lower priority, so the scheduler prefers the server's
//! requests, the editor and its other language servers.

use std::sync::OnceLock;

/// A pool of `threads` (one per core when `None`) whose threads run at nice 10 on Linux.
pub(crate) fn background_pool(
    name: &'static str,
    threads: Option<usize>,
) -> Option<rayon::ThreadPool> {
    let mut builder = rayon::ThreadPoolBuilder::new()
        .thread_name(move |i| format!("{name}-{i}"))
        .start_handler(|_| lower_priority());
    if let Some(n) = threads {
        builder = builder.num_threads(n);
    }
    builder.build().ok()
}

/// Runs `f` on a thread at a lower priority and waits for it. Threads `f` starts inherit
/// that priority (Linux copies a thread's nice value to the threads it creates), so the
/// whole model's batch, split across cores, runs below the editor too.
pub fn at_low_priority<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    match POOL.get_or_init(|| background_pool("agentls-embed", Some(1))) {
        Some(pool) => pool.install(f),
        // No thread could be started: here, at the caller's priority.
        None => f(),
    }
}

/// How much lower than the thread that starts it background work runs.
const NICER: i32 = 10;

/// The nice value background work gets started from `nice`: [`NICER`] more, at most 19
/// (the lowest), never less than it was: a server itself run at nice 15 keeps its
/// background at 19, not 10.
fn lowered(nice: i32) -> i32 {
    nice.saturating_add(NICER).clamp(nice, 19)
}

/// On Linux each thread has its own nice value, and `setpriority` with `who` 0 sets
/// the calling thread's. Elsewhere it would lower the whole process, so only Linux asks.
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: plain integers in, an integer out; failing (no permission) changes nothing.
    unsafe {
        let now = libc::getpriority(libc::PRIO_PROCESS, 0);
        libc::setpriority(libc::PRIO_PROCESS, 0, lowered(now));
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_work_is_ten_nicer_and_never_less_nice() {
        assert_eq!(lowered(0), 10);
        assert_eq!(lowered(5), 15);
        assert_eq!(lowered(15), 19);
        assert_eq!(lowered(19), 19);
        assert_eq!(lowered(-5), 5);
    }

    #[cfg(target_os = "linux")]
    fn nice() -> i32 {
        // SAFETY: as in `lower_priority`.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn background_work_runs_below_the_servers_priority_and_its_threads_too() {
        let before = nice();
        // Pool threads are started by this thread here (the embed pool by whichever
        // test asks first, each from a thread at the test process's nice value).
        let want = lowered(before);
        let pool = background_pool("test", None).expect("a pool");
        assert_eq!(pool.install(nice), want);
        let (own, spawned) = at_low_priority(|| {
            let own = nice();
            let spawned = std::thread::scope(|s| s.spawn(nice).join().unwrap_or(0));
            (own, spawned)
        });
        assert_eq!((own, spawned), (want, want));
        // The calling thread keeps its own.
        assert_eq!(nice(), before);
    }
}
