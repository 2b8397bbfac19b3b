//! A FIFO ticket spinlock, the lock Linux used for `zone->lock` on x86 before qspinlocks, and
//! FIFO like them. no_std; with feature `std` a waiter yields after a short spin so that more
//! threads than cores (CI machines have 2) do not burn whole time slices.

use core::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug)]
pub struct TicketLock {
    next_ticket: AtomicU32,
    now_serving: AtomicU32,
}

impl TicketLock {
    // ~10-50 us of spinning: lock holds are short, so yield only when the holder was
    // likely preempted (more threads than cores).
    const SPINS_BEFORE_YIELD: u32 = 1 << 14;

    fn wait_for_turn(&self, ticket: u32) {
        let mut spins = 0u32;
        while self.now_serving.load(Ordering::Acquire) != ticket {
            core::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(Self::SPINS_BEFORE_YIELD) {
                #[cfg(feature = "std")]
                std::thread::yield_now();
            }
        }
    }
}

// SAFETY: `lock` returns only once `now_serving` equals this caller's unique ticket, and
// `now_serving` advances only in `unlock`, called by the single holder; so at most one holder
// exists at a time. Acquire on entry pairs with Release on exit, ordering the critical sections.
unsafe impl lock_api::RawMutex for TicketLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: TicketLock = TicketLock { next_ticket: AtomicU32::new(0), now_serving: AtomicU32::new(0) };

    type GuardMarker = lock_api::GuardSend;

    fn lock(&self) {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        self.wait_for_turn(ticket);
    }

    fn try_lock(&self) -> bool {
        let serving = self.now_serving.load(Ordering::Relaxed);
        self.next_ticket
            .compare_exchange(serving, serving.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self) {
        let serving = self.now_serving.load(Ordering::Relaxed);
        self.now_serving.store(serving.wrapping_add(1), Ordering::Release);
    }

    fn is_locked(&self) -> bool {
        self.next_ticket.load(Ordering::Relaxed) != self.now_serving.load(Ordering::Relaxed)
    }
}
