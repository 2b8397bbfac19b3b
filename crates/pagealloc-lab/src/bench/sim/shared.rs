//! What a simulated bench's CPUs share: the barrier, the blocks handed between phases (the
//! real bench's main thread gathers and shuffles them), and each thread's per-op times and
//! frag's per-round figures, read by the runner after the run.

use std::sync::{Arc, Mutex, MutexGuard};

use pagealloc::Block;

use super::barrier::SimBarrier;
use crate::bench::workloads::{pages_to_pack, shuffle, split};
use crate::rng::SplitMix64;

/// One thread's per-op times, ns.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ThreadTimes {
    pub(super) alloc_ns: Option<f64>,
    pub(super) free_ns: Option<f64>,
    pub(super) pair_ns: Option<f64>,
}

#[derive(Debug, Default)]
pub(super) struct Pool {
    /// Blocks each thread put down before a barrier, by thread.
    deposits: Vec<Vec<Block>>,
    /// frag: each thread's held frames at the end of a round, by thread.
    held_pfns: Vec<Vec<u64>>,
    /// frag: the span the fill covered, from its first 2 MiB boundary.
    pub(super) span: (u64, u64),
    pub(super) times: Vec<ThreadTimes>,
    pub(super) free_huge_pct: Vec<f64>,
    pub(super) pack_moves: Vec<u64>,
}

#[derive(Clone, Debug)]
pub(super) struct Shared {
    pub(super) barrier: SimBarrier,
    pool: Arc<Mutex<Pool>>,
}

impl Shared {
    pub(super) fn new(threads: usize) -> Shared {
        let pool = Pool {
            deposits: (0..threads).map(|_| Vec::new()).collect(),
            held_pfns: vec![Vec::new(); threads],
            times: vec![ThreadTimes::default(); threads],
            ..Pool::default()
        };
        Shared { barrier: SimBarrier::new(threads), pool: Arc::new(Mutex::new(pool)) }
    }

    pub(super) fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().expect("bench pool unpoisoned")
    }

    pub(super) fn record(&self, index: usize, alloc_ns: Option<f64>, free_ns: Option<f64>, pair_ns: Option<f64>) {
        self.pool().times[index] = ThreadTimes { alloc_ns, free_ns, pair_ns };
    }

    pub(super) fn deposit(&self, index: usize, blocks: Vec<Block>) {
        let mut pool = self.pool();
        assert!(pool.deposits[index].is_empty(), "thread {index} deposits twice");
        pool.deposits[index] = blocks;
    }

    pub(super) fn withdraw(&self, index: usize) -> Vec<Block> {
        core::mem::take(&mut self.pool().deposits[index])
    }

    /// Every deposit, in thread order, shuffled; `keep_from` blocks from the front are taken
    /// out and returned, the rest split evenly into the threads' deposits.
    pub(super) fn shuffle_deposits_keeping(
        &self,
        rng: &mut SplitMix64,
        keep_from: impl FnOnce(usize) -> usize,
    ) -> Vec<Block> {
        let mut pool = self.pool();
        let threads = pool.deposits.len();
        let mut all: Vec<Block> = pool.deposits.iter_mut().flat_map(core::mem::take).collect();
        shuffle(&mut all, rng);
        let kept = all.split_off(keep_from(all.len()).min(all.len()));
        pool.deposits = split(kept, threads);
        all
    }

    /// Every deposit, in thread order, shuffled and split evenly into the threads' deposits.
    pub(super) fn shuffle_deposits(&self, rng: &mut SplitMix64) {
        let front = self.shuffle_deposits_keeping(rng, |_| 0);
        debug_assert!(front.is_empty());
    }

    /// frag: the span of the frames deposited, from its first 2 MiB boundary.
    pub(super) fn note_span(&self) {
        let mut pool = self.pool();
        let pfns = || pool.deposits.iter().flatten().map(Block::pfn);
        let first = pfns().min().unwrap_or(0) & !((1 << pagealloc::PAGEBLOCK_ORDER) - 1);
        let end = pfns().max().map_or(0, |last| last + 1);
        pool.span = (first, end);
    }

    pub(super) fn deposit_pfns(&self, index: usize, pfns: Vec<u64>) {
        self.pool().held_pfns[index] = pfns;
    }

    /// frag, after a round: the share free as whole 2 MiB blocks, and the pages compaction
    /// would move.
    pub(super) fn note_round(&self, free_huge_pct: f64) {
        let mut pool = self.pool();
        let moves = pages_to_pack(&pool.held_pfns, pool.span);
        pool.free_huge_pct.push(free_huge_pct);
        pool.pack_moves.push(moves);
    }
}
