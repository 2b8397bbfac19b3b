//! A test-and-test-and-set spinlock: acquiring costs one `xchg` (a CAS-based lock costs
//! more), and a failed trylock costs no write at all. Unfair, so it suits locks that are
//! almost never contended: the per-CPU pageset locks, which only a remote drain or a
//! migrated thread ever contends. Zone locks stay FIFO (`TicketLock`).

use core::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug)]
pub struct TasLock {
    locked: AtomicBool,
}

impl TasLock {
    // ~10-50 us of spinning: lock holds are short, so yield only when the holder was
    // likely preempted (more threads than cores).
    const SPINS_BEFORE_YIELD: u32 = 1 << 14;
}

// SAFETY: `locked` goes false -> true only through a successful swap or a read-then-swap
// that observed false and swapped in true, so one holder at a time; `unlock` is called only
// by the holder. Acquire on entry pairs with Release on exit.
unsafe impl lock_api::RawMutex for TasLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: TasLock = TasLock { locked: AtomicBool::new(false) };

    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        let mut spins = 0u32;
        while !self.try_lock() {
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(Self::SPINS_BEFORE_YIELD) {
                    #[cfg(feature = "std")]
                    std::thread::yield_now();
                }
            }
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::Acquire)
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }

    fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lock_api::RawMutex;

    #[test]
    fn trylock_excludes_and_unlock_releases() {
        let lock = TasLock::INIT;
        assert!(lock.try_lock());
        assert!(!lock.try_lock());
        assert!(lock.is_locked());
        // SAFETY: held by this test.
        unsafe { lock.unlock() };
        lock.lock();
        assert!(!lock.try_lock());
        // SAFETY: held by this test.
        unsafe { lock.unlock() };
    }
}
