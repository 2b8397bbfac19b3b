//! A FIFO ticket spinlock, the lock Linux used for `zone->lock` on x86 before qspinlocks, and
//! FIFO like them. no_std; with feature `std` a waiter yields after a short spin so that more
//! threads than cores (CI machines have 2) do not burn whole time slices.

use core::sync::atomic::{AtomicU32, Ordering};

use super::lock_atomics::{forward_raw_mutex, AtomicWord};

/// The ticket algorithm over any atomic word (core's here, loom's in the models).
#[derive(Debug)]
pub struct Ticket<A> {
    next_ticket: A,
    now_serving: A,
}

impl<A: AtomicWord> Ticket<A> {
    // ~10-50 us of spinning: lock holds are short, so yield only when the holder was
    // likely preempted (more threads than cores).
    const SPINS_BEFORE_YIELD: u32 = 1 << 14;

    pub fn new() -> Ticket<A> {
        Ticket { next_ticket: A::new_word(0), now_serving: A::new_word(0) }
    }

    fn wait_for_turn(&self, ticket: u32) {
        let mut spins = 0u32;
        while self.now_serving.load(Ordering::Acquire) != ticket {
            A::spin_once();
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(Self::SPINS_BEFORE_YIELD) {
                #[cfg(feature = "std")]
                std::thread::yield_now();
            }
        }
    }

    pub fn lock(&self) {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        self.wait_for_turn(ticket);
    }

    /// Takes the next ticket only if it is being served now. The load of `now_serving` is
    /// Acquire: it reads the previous holder's Release in `unlock`, which is the only edge
    /// ordering that holder's critical section before ours (the CAS on `next_ticket`
    /// synchronizes with ticket takers, not with the release).
    pub fn try_lock(&self) -> bool {
        let serving = self.now_serving.load(Ordering::Acquire);
        self.next_ticket
            .compare_exchange(serving, serving.wrapping_add(1), Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// # Safety
    /// The caller holds the lock.
    pub unsafe fn unlock(&self) {
        let serving = self.now_serving.load(Ordering::Relaxed);
        self.now_serving.store(serving.wrapping_add(1), Ordering::Release);
    }

    pub fn is_locked(&self) -> bool {
        self.next_ticket.load(Ordering::Relaxed) != self.now_serving.load(Ordering::Relaxed)
    }
}

impl<A: AtomicWord> Default for Ticket<A> {
    fn default() -> Self {
        Ticket::new()
    }
}

#[derive(Debug)]
pub struct TicketLock(Ticket<AtomicU32>);

// SAFETY: `lock` returns only once `now_serving` equals this caller's unique ticket, and
// `now_serving` advances only in `unlock`, called by the single holder; so at most one holder
// exists at a time. Both entries read `now_serving` with Acquire, pairing with the Release in
// `unlock`, which orders the critical sections (the loom model in tests/loom_locks.rs checks
// it on this code).
forward_raw_mutex!(TicketLock, TicketLock(Ticket { next_ticket: AtomicU32::new(0), now_serving: AtomicU32::new(0) }));
