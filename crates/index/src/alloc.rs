//! tree-sitter's C allocations go through mimalloc: parsing allocates and frees millions
//! of small subtrees, and glibc's malloc spent ~9% of a cold crawl's CPU on them
//! (measured on the cargo registry; mimalloc cut the crawl's CPU by ~9%).

use std::ffi::c_void;
use std::sync::Once;

/// Points tree-sitter at mimalloc, once per process. Called before this crate makes any
/// tree-sitter object that allocates (parsers, queries, query cursors; trees and tree
/// cursors come from parsers), so nothing allocated by one allocator is freed by the
/// other. No other crate of the workspace uses tree-sitter directly; one that did would
/// have to create its objects after this (any `Language::parser` call) to stay sound.
pub(crate) fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: runs before the first tree-sitter allocation of this crate (see above),
        // exactly once, and the four functions are a matching malloc family.
        unsafe {
            tree_sitter::set_allocator(
                Some(libmimalloc_sys::mi_malloc),
                Some(calloc),
                Some(libmimalloc_sys::mi_realloc),
                Some(libmimalloc_sys::mi_free),
            );
        }
    });
}

/// Gives pages that freed syntax trees left empty back to the system now. mimalloc
/// purges free pages only on a later allocation or free (after a delay), which an idle
/// server never makes: 100 documents of 20 KB opened and closed left +60 MiB resident
/// until the next edit. Call after closing buffers; it collects this thread's heap and
/// purges every arena's free pages.
pub fn give_memory_back() {
    // SAFETY: `mi_collect` takes no pointers and may run on any thread at any time; it
    // only frees mimalloc's own empty pages.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// `calloc` on mimalloc's zeroing allocation (its own `mi_calloc` needs a feature that
/// brings in more crates); null on overflow, as `calloc` does.
unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    match count.checked_mul(size) {
        // SAFETY: plain allocation, no preconditions.
        Some(total) => unsafe { libmimalloc_sys::mi_zalloc(total) },
        None => std::ptr::null_mut(),
    }
}
