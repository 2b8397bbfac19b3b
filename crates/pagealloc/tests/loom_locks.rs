//! Loom model of the real ticket-lock algorithm (`Ticket`, behind `TicketLock`), run on
//! loom's atomics: every interleaving keeps one holder at a time, and a
//! critical section's writes happen-before the next holder's reads, whichever entry (lock or
//! trylock) the next holder uses. Data lives in a loom `UnsafeCell`, so a missing
//! happens-before edge is reported as a race. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p pagealloc --test loom_locks --release`.

#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicBool;
use loom::sync::atomic::AtomicU32;
use loom::sync::Arc;
use pagealloc::platform::{Tas, Ticket};

/// One thread enters with `lock`, the other with `try_lock` (retried): each increments the
/// protected counter once. Loom fails the model on a data race or a lost update.
fn lock_and_trylock_order_the_critical_sections() {
    // Spin-waits branch on every re-read; bounding preemptions keeps the search finite while
    // still covering every interleaving with up to three preemptions.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.max_branches = 100_000;
    model.check(|| {
        let shared = Arc::new((Ticket::<AtomicU32>::new(), UnsafeCell::new(0u32)));
        let other = shared.clone();
        let locker = loom::thread::spawn(move || {
            other.0.lock();
            other.1.with_mut(|value| unsafe { *value += 1 });
            // SAFETY: taken just above.
            unsafe { other.0.unlock() };
        });
        while !shared.0.try_lock() {
            loom::thread::yield_now();
        }
        shared.1.with_mut(|value| unsafe { *value += 1 });
        // SAFETY: taken by the loop above.
        unsafe { shared.0.unlock() };
        locker.join().unwrap();
        shared.0.lock();
        assert_eq!(shared.1.with(|value| unsafe { *value }), 2);
        // SAFETY: taken just above.
        unsafe { shared.0.unlock() };
    });
}

#[test]
fn ticket_lock_orders_lock_and_trylock_holders() {
    lock_and_trylock_order_the_critical_sections();
}

/// The test-and-set lock's trylock path (the one pagesets take), on loom's atomics: each
/// thread tries once and, if it got the lock, increments the protected counter. Never both
/// inside at once (a concurrent access is a loom error), and a later holder sees the earlier
/// one's write. `Tas::lock`'s contended spin is not modelled: loom 0.7 explores no
/// alternative for a Relaxed load, so a spinning reader re-reads a stale `true` until the
/// branch bound (tried; it does not finish).
#[test]
fn tas_lock_trylock_holders_exclude_each_other_and_hand_over() {
    loom::model(|| {
        let shared = Arc::new((Tas::<AtomicBool>::new(), UnsafeCell::new(0u32)));
        let other = shared.clone();
        let enter = |shared: &(Tas<AtomicBool>, UnsafeCell<u32>)| -> Option<u32> {
            if !shared.0.try_lock() {
                return None;
            }
            let seen = shared.1.with_mut(|value| unsafe {
                *value += 1;
                *value
            });
            // SAFETY: taken just above.
            unsafe { shared.0.unlock() };
            Some(seen)
        };
        let racer = loom::thread::spawn(move || enter(&other));
        let mine = enter(&shared);
        let theirs = racer.join().unwrap();
        let entered: Vec<u32> = [mine, theirs].into_iter().flatten().collect();
        assert!(!entered.is_empty(), "an uncontended trylock fails only to a holder");
        // Each holder saw every earlier holder's increment.
        let mut sorted = entered.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=entered.len() as u32).collect::<Vec<_>>());
    });
}
