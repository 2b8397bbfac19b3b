//! One page_fault1 task: its faults (trap, allocation, zeroing; with the LRU, the add in a
//! second step) and its munmap (mmu_gather batches off the LRU, then freed).

use std::collections::VecDeque;

use pagealloc::lru::LruList;
use pagealloc::{AllocRequest, Block};

use super::{PageFault, GATHER_BATCH_PAGES, GATHER_FLUSH_PAGES, MMAP_SEM, MM_RSS};
use crate::workload::address_space::AddressSpace;
use crate::workload::{CpuTask, Env, Step};

pub(super) struct Task {
    pub(super) config: PageFault,
    /// Faulted pages in address order (page_fault1 writes its mapping from the start).
    pub(super) mapped: VecDeque<Block>,
    /// A page whose fault has yet to finish (LRU add, RSS fold, up_read).
    pub(super) faulting: Option<Block>,
    /// Process mode: an munmap in progress, one LRU lock hold's worth of pages per step.
    pub(super) unmapping: bool,
    pub(super) faults: u64,
    /// RSS counts between folds into the shared mm, what a fault adds to them, and what
    /// this task has added since its last fold.
    pub(super) rss_fold_every: u64,
    pub(super) rss_per_fault: u64,
    pub(super) rss_pending: u64,
    /// Thread mode with per-VMA locks: the shared address space, and this task's region's
    /// slot in it while mapped.
    pub(super) space: Option<std::sync::Arc<std::sync::Mutex<AddressSpace>>>,
    pub(super) slot: Option<usize>,
    /// Thread mode: the other CPUs running the shared mm, which a TLB flush interrupts.
    pub(super) mm_others: Vec<usize>,
    /// Pages of the unmap in progress gathered since its last TLB flush.
    pub(super) unflushed_pages: usize,
}

/// With `lru`, a fault spans two steps: its first half (down_read, trap, allocation,
/// zeroing) ends one step and its second half (LRU add, up_read) starts the next, and a
/// process's unmap takes one LRU lock hold's worth of pages per step. The simulator runs a
/// step from the earliest clock of all CPUs, so shared locks are taken in time order only
/// at the start of a step: the LRU's operations come first in theirs. Without `lru` a fault
/// and an unmap are one step each, as the 2022 reproduction has always run them.
impl CpuTask for Task {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        if let Some(page) = self.faulting.take() {
            self.finish_fault(env, page);
        }
        if self.unmapping {
            self.unmap_step(env);
        } else if (self.mapped.len() as u64) << self.config.fault_order < self.config.region_pages {
            self.start_fault(env);
        } else {
            self.begin_unmap(env);
        }
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        if let Some(page) = self.faulting.take() {
            self.finish_fault(env, page);
        }
        if self.config.lru {
            env.lru_release(self.mapped.make_contiguous());
        }
        for page in self.mapped.drain(..) {
            env.free(page);
        }
    }
}

impl Task {
    fn start_fault(&mut self, env: &mut dyn Env) {
        if self.shares_mmap_sem() {
            self.mmap_sem_read_op(env);
        }
        self.vma_read_op(env);
        let order = self.config.fault_order;
        let further_pages = (1u64 << order) - 1;
        env.compute(self.config.fault_overhead_ns + further_pages * self.config.zero_extra_ns);
        let Some(page) = env.alloc(order, AllocRequest::USER_MOVABLE) else {
            if self.shares_mmap_sem() {
                self.mmap_sem_read_op(env);
            }
            self.vma_read_op(env);
            // Out of memory: unmap early, as the OOM path would shrink the workload.
            self.begin_unmap(env);
            return;
        };
        env.touch(page.pfn(), 1 << order);
        if self.config.lru {
            self.faulting = Some(page);
        } else {
            self.finish_fault(env, page);
        }
    }

    fn finish_fault(&mut self, env: &mut dyn Env, page: Block) {
        if self.config.lru {
            env.lru_add(&page, LruList::ActiveAnon);
        }
        self.faults += 1;
        self.rss_pending += self.rss_per_fault;
        if self.thread_mode() && self.rss_pending >= self.rss_fold_every {
            // The fold's add under the counter's spinlock: the lock word's RMW.
            self.rss_pending = 0;
            env.atomic(MM_RSS);
        }
        if self.shares_mmap_sem() {
            self.mmap_sem_read_op(env);
        }
        self.vma_read_op(env);
        self.mapped.push_back(page);
        env.done(1);
    }

    /// munmap: in one step (under a shared mmap_sem, or without the LRU), or else one LRU
    /// lock hold's worth of pages per step from this one on.
    fn begin_unmap(&mut self, env: &mut dyn Env) {
        self.detach_region(env);
        if self.shares_mmap_sem() || !self.config.lru {
            self.unmap(env);
        } else {
            env.compute(self.config.map_overhead_ns);
            self.unmapping = true;
            self.unmap_step(env);
        }
    }

    /// The next LRU lock hold's worth of the unmap (no shared mmap_sem held).
    fn unmap_step(&mut self, env: &mut dyn Env) {
        let hold_pages = if self.config.lru { env.lru_pages_per_removal_hold() } else { GATHER_BATCH_PAGES };
        self.release_front(env, hold_pages);
        self.unmapping = !self.mapped.is_empty();
    }

    /// Takes up to `pages` of the mapping's first pages off the LRU, then frees them, in
    /// address order as zap_pte_range() gathers them (release_pages() per batch).
    fn release_front(&mut self, env: &mut dyn Env, pages: usize) {
        let batch = self.mapped.len().min(pages);
        self.unflushed_pages += batch;
        if self.unflushed_pages >= GATHER_FLUSH_PAGES || batch == self.mapped.len() {
            self.flush_tlb(env);
        }
        if self.config.lru {
            env.lru_release(&self.mapped.make_contiguous()[..batch]);
        }
        for page in self.mapped.drain(..batch) {
            env.free(page);
        }
    }

    /// The whole unmap in one step; under a shared mmap_sem, held for writing throughout (a
    /// lock stays in one step in the simulator; the other threads wait at their next
    /// down_read).
    fn unmap(&mut self, env: &mut dyn Env) {
        let thread_mode = self.shares_mmap_sem();
        if thread_mode {
            env.lock(MMAP_SEM);
        }
        env.compute(self.config.map_overhead_ns);
        while !self.mapped.is_empty() {
            self.release_front(env, GATHER_BATCH_PAGES);
        }
        if thread_mode {
            env.unlock(MMAP_SEM);
        }
    }
}
