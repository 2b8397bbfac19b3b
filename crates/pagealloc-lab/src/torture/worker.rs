//! One torture worker: a thread that runs random operations in batches, each batch under
//! the read side of the quiescence gate, so the checker (the write side) sees no operation
//! half done. Workers whose index is a multiple of `HOG_EVERY` also cycle through memory
//! pressure: fill memory until OutOfMemory at order 0, hold it while everyone runs near the
//! watermarks, release it, rest.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use pagealloc::platform::StdPlatform;
use pagealloc::{Block, PageAllocator, MAX_ORDER};

use super::cache::PageCache;
use super::shadow::{FrameShadow, Owner};
use super::tally::Tally;
use super::violations::Violations;
use crate::rng::SplitMix64;

/// Operations per batch: long enough that the gate costs little, short enough that the
/// checker waits at most a batch (less than a millisecond in release builds).
const OPS_PER_BATCH: usize = 32;
/// Every HOG_EVERY-th worker (from worker 0) is a hog.
const HOG_EVERY: usize = 3;
/// A hog holds the memory it filled for 50 ms plus up to this much, then rests as long.
const HOLD_EXTRA_MS: u64 = 100;
const HOLD_MIN_MS: u64 = 50;

/// What every worker shares.
pub struct Shared<'a> {
    pub allocator: &'a PageAllocator<StdPlatform>,
    pub shadow: &'a FrameShadow,
    pub violations: &'a Violations,
    /// Read-held around each batch; the checker write-holds it for a quiescent point.
    pub gate: &'a RwLock<()>,
    pub stop: &'a AtomicBool,
    pub totals: &'a Mutex<Tally>,
    /// Pages a worker may hold outside a hog cycle: the managed pages over the workers, so
    /// together they can hold all of memory even without the hogs.
    pub churn_cap_pages: u64,
    /// The reclaimable page cache, and the most pages it keeps before reads drop its
    /// oldest.
    pub cache: &'a PageCache,
    pub cache_cap_pages: u64,
    /// Ranges taken offline, oldest first, for a later `online`.
    pub offline: &'a Mutex<Vec<std::ops::Range<pagealloc::Pfn>>>,
}

/// Where a worker is in its cycle. Non-hogs churn for ever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Churn {
        until: Instant,
    },
    /// Allocating into the hoard at `order`, one order lower after each OutOfMemory.
    Fill {
        order: u8,
    },
    /// Holding the hoard while churning.
    Hold {
        until: Instant,
    },
    /// Freeing the hoard.
    Release,
}

pub struct Worker<'a> {
    pub(super) shared: &'a Shared<'a>,
    pub(super) owner: Owner,
    pub(super) rng: SplitMix64,
    /// Blocks of the churn, and their pages.
    pub(super) held: Vec<Block>,
    pub(super) held_pages: u64,
    /// Blocks of a hog cycle.
    pub(super) hoard: Vec<Block>,
    pub(super) phase: Phase,
    pub(super) tally: Tally,
    hog: bool,
}

impl<'a> Worker<'a> {
    /// Worker `index`, drawing from its own stream of `seed`.
    pub fn new(shared: &'a Shared<'a>, index: usize, seed: u64) -> Worker<'a> {
        let stream_seed = SplitMix64::new(seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f)).next_u64();
        let hog = index.is_multiple_of(HOG_EVERY);
        let start = Instant::now();
        Worker {
            shared,
            owner: Owner::try_from(index + 1).expect("at most 1024 workers"),
            rng: SplitMix64::new(stream_seed),
            held: Vec::new(),
            held_pages: 0,
            hoard: Vec::new(),
            // Hogs start filling at once, so even a short run meets the watermarks.
            phase: if hog { Phase::Fill { order: MAX_ORDER } } else { Phase::Churn { until: start } },
            tally: Tally::default(),
            hog,
        }
    }

    /// Runs batches until told to stop, then frees everything it holds.
    pub fn run(mut self) {
        while !self.shared.stop.load(Ordering::Relaxed) {
            let gate = self.shared.gate.read().unwrap_or_else(|poisoned| poisoned.into_inner());
            self.advance_phase(Instant::now());
            for _ in 0..OPS_PER_BATCH {
                self.step();
            }
            drop(gate);
            self.flush_tally();
        }
        let gate = self.shared.gate.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let blocks: Vec<Block> = self.held.drain(..).chain(self.hoard.drain(..)).collect();
        self.held_pages = 0;
        self.free_blocks(blocks);
        drop(gate);
        self.flush_tally();
    }

    fn flush_tally(&mut self) {
        *self.shared.totals.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) += &self.tally;
        self.tally = Tally::default();
    }

    /// Time-driven phase changes, checked once per batch (a clock read per operation would
    /// cost more than many of them).
    fn advance_phase(&mut self, now: Instant) {
        self.phase = match self.phase {
            Phase::Churn { until } if self.hog && now >= until => Phase::Fill { order: MAX_ORDER },
            Phase::Hold { until } if now >= until => Phase::Release,
            phase => phase,
        };
    }

    /// A random pause of a hog cycle, from now.
    pub(super) fn pause_from(&mut self, now: Instant) -> Instant {
        now + Duration::from_millis(HOLD_MIN_MS + self.rng.below(HOLD_EXTRA_MS))
    }

    /// One operation. A deliberate panic of the migration client unwinds to here and is
    /// counted (the operation gave up, holding nothing new); any other panic goes on up.
    fn step(&mut self) {
        let phase = self.phase;
        let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match phase {
            Phase::Churn { .. } | Phase::Hold { .. } => self.churn_step(),
            Phase::Fill { order } => self.fill_step(order),
            Phase::Release => self.release_step(),
        }));
        if let Err(payload) = stepped {
            if payload.downcast_ref::<super::panicky::ClientPanic>().is_none() {
                std::panic::resume_unwind(payload);
            }
            self.tally.client_panics_caught += 1;
        }
    }
}
