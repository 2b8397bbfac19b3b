//! A test-and-test-and-set spinlock: acquiring costs one `xchg` (a CAS-based lock costs
//! more), and a failed trylock costs no write at all. Unfair, so it suits locks that are
//! almost never contended: the per-CPU pageset locks, which only a remote drain or a
//! migrated thread ever contends. Zone locks stay FIFO (`TicketLock`).

use core::sync::atomic::{AtomicBool, Ordering};

use super::lock_atomics::{forward_raw_mutex, AtomicFlag};

/// The test-and-test-and-set algorithm over any atomic flag (core's here, loom's in models).
#[derive(Debug)]
pub struct Tas<A> {
    locked: A,
}

impl<A: AtomicFlag> Tas<A> {
    // ~10-50 us of spinning: lock holds are short, so yield only when the holder was
    // likely preempted (more threads than cores).
    const SPINS_BEFORE_YIELD: u32 = 1 << 14;

    pub fn new() -> Tas<A> {
        Tas { locked: A::new_flag(false) }
    }

    pub fn lock(&self) {
        let mut spins = 0u32;
        // The swap takes the lock; while it is held, wait with plain reads so the line stays
        // shared (test-and-test-and-set).
        while self.locked.swap(true, Ordering::Acquire) {
            while self.locked.load(Ordering::Relaxed) {
                A::spin_once();
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(Self::SPINS_BEFORE_YIELD) {
                    #[cfg(feature = "std")]
                    std::thread::yield_now();
                }
            }
        }
    }

    #[inline]
    pub fn try_lock(&self) -> bool {
        !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::Acquire)
    }

    /// # Safety
    /// The caller holds the lock.
    #[inline]
    pub unsafe fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }

    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

impl<A: AtomicFlag> Default for Tas<A> {
    fn default() -> Self {
        Tas::new()
    }
}

#[derive(Debug)]
pub struct TasLock(Tas<AtomicBool>);

// SAFETY: `locked` goes false -> true only through a successful swap or a read-then-swap
// that observed false and swapped in true, so one holder at a time; `unlock` is called only
// by the holder. Acquire on entry pairs with Release on exit.
forward_raw_mutex!(TasLock, TasLock(Tas { locked: AtomicBool::new(false) }));

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
