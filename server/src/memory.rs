//! Giving the memory of closed documents back to the system.
//!
//! Closing a document frees its text, its parse tree and its index entry, but glibc's
//! malloc keeps freed memory in the arena of the thread that used it, and trims those
//! arenas rarely. `malloc_trim(0)` hands the free pages of every arena back. It walks
//! the heap, so it runs only once enough text was closed since the last time, on the
//! index worker after the index let go of the buffers (see [`crate::indexing::Jobs`]
//! for the two causes of the +500 MiB once measured after 2,000 documents of 100 KB:
//! closed buffers left live in the index, and a hundred blocking threads).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Trim after this many bytes of closed documents.
const TRIM_AFTER_BYTES: usize = 16 * 1024 * 1024;

static CLOSED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Notes that a document of `bytes` was closed; returns whether enough was closed since
/// the last trim that the caller should [`trim`] once the document's memory is freed.
pub fn closed(bytes: usize) -> bool {
    let total = CLOSED_BYTES.fetch_add(bytes, Ordering::Relaxed) + bytes;
    if total < TRIM_AFTER_BYTES {
        return false;
    }
    // One caller wins the reset; the others keep counting towards the next trim.
    CLOSED_BYTES
        .compare_exchange(total, 0, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
}

/// Returns the free memory of every malloc arena to the system (glibc only; other
/// allocators give memory back by themselves).
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let started = std::time::Instant::now();
        // SAFETY: malloc_trim only releases free pages of the allocator's own arenas;
        // it takes no pointers and is thread-safe in glibc.
        let released = unsafe { libc::malloc_trim(0) };
        tracing::debug!(released, took = ?started.elapsed(), "malloc_trim");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asks_for_a_trim_once_enough_was_closed() {
        CLOSED_BYTES.store(0, Ordering::Relaxed);
        assert!(!closed(TRIM_AFTER_BYTES / 2));
        assert!(closed(TRIM_AFTER_BYTES / 2));
        assert!(!closed(1));
        trim(); // Must not crash, whatever the heap holds.
    }
}
