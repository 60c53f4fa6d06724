//! Giving memory back to the system after large closes (documents, their trees and
//! chunks): used by the index's jobs and semantic search's loop alike.

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

/// One glibc heap arena per core, not eight (glibc's default): the server's pools start
/// many threads, each of which gets an arena of its own, and freed memory in the arenas
/// of threads gone is what `malloc_trim` hands back least (measured by `agentls bench
/// heavy`: 300 documents of 100 KB opened and closed with the embedding model left
/// +53 MiB over a fresh server, +8 MiB with two arenas on two cores). Called first in
/// `main`, before any thread starts.
pub(crate) fn fewer_heap_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only sets a tuning value of the allocator; no thread runs yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
