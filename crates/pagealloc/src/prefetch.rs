//! A cache-line prefetch hint: the line holding a value starts on its way to this core's
//! cache while the current work goes on. A prefetch is not a load in the memory model, so
//! the locked instructions of a free (the claim, the pageset lock) do not wait for it, where
//! they wait for every earlier load to finish.

/// Starts fetching the cache line that holds `value` (a read prefetch). A hint only:
/// nothing is read architecturally, and elsewhere than x86-64 it does nothing.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads no memory architecturally and cannot fault, whatever its
    // address; this one comes from a live reference.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
