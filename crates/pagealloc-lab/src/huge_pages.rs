//! The lab's global allocator: the system allocator, plus a transparent-huge-page hint on
//! large blocks. A simulated 64 GiB machine keeps per-frame tables of hundreds of MiB
//! (frame metadata, the simulator's per-pfn and per-line arrays), touched sparsely; with
//! 4 KiB host pages every first touch is a page fault, which made up a third of the host
//! time of the quick reproductions. Where THP is set to `madvise`, the hint lets the kernel
//! back those blocks with 2 MiB pages: one fault instead of 512.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks at least this large get the hint (smaller ones would not span a huge page).
const HINT_MIN_BYTES: usize = 4 << 20;
const HUGE_PAGE_BYTES: usize = 2 << 20;

pub struct HugePageHint;

impl HugePageHint {
    /// Asks for huge pages on the 2 MiB-aligned part of `[ptr, ptr + bytes)`. Only a hint:
    /// a kernel without THP, or with it off, ignores it.
    fn advise(ptr: *mut u8, bytes: usize) {
        if ptr.is_null() || bytes < HINT_MIN_BYTES {
            return;
        }
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE_BYTES);
        let end = (ptr as usize + bytes) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
        // MADV_HUGEPAGE is Linux's; elsewhere the hint is skipped.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if end > start {
            // SAFETY: [start, end) lies inside the block just allocated, which this
            // allocator owns until it is freed; MADV_HUGEPAGE changes how the kernel backs
            // the range, never its contents, so no Rust-visible memory changes.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees hold; the hint does not change the memory handed out.
unsafe impl GlobalAlloc for HugePageHint {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout, which GlobalAlloc requires be nonzero.
        let ptr = unsafe { System.alloc(layout) };
        Self::advise(ptr, layout.size());
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        Self::advise(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator (hence `System`) returned.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's block and sizes, as `System` expects them.
        let new_ptr = unsafe { System.realloc(ptr, layout, new_size) };
        Self::advise(new_ptr, new_size);
        new_ptr
    }
}
