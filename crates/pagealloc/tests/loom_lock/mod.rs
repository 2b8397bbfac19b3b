//! The lock both LRU and pageset loom models run the real code on.

use std::sync::OnceLock;

use loom::sync::atomic::{AtomicBool, Ordering};

/// A spinlock on a loom atomic, created on first use (lock_api wants a const INIT and loom
/// atomics are not const; each model execution builds fresh locks).
pub struct LoomLock(OnceLock<AtomicBool>);

impl LoomLock {
    fn word(&self) -> &AtomicBool {
        self.0.get_or_init(|| AtomicBool::new(false))
    }
}

// SAFETY: the flag goes false -> true only through a successful compare_exchange, so one
// holder at a time; `unlock` is called by the holder only.
unsafe impl lock_api::RawMutex for LoomLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: LoomLock = LoomLock(OnceLock::new());
    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        while !self.try_lock() {
            loom::thread::yield_now();
        }
    }

    fn try_lock(&self) -> bool {
        self.word().compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    unsafe fn unlock(&self) {
        self.word().store(false, Ordering::Release);
    }
}
