//! What page_fault1's threads share: the mm's mmap_sem (up to 6.3), or its VMAs' locks
//! and the mmap_lock around mmap and munmap (from 6.4), the RSS counter folds, and the TLB
//! shootdowns an munmap sends to the other CPUs running the mm.

use super::task::Task;
use super::{at_targets, FaultLocking, FaultMode, MMAP_SEM, VMA_LOCKS};
use crate::workload::Env;

impl Task {
    pub(super) fn thread_mode(&self) -> bool {
        self.config.mode == FaultMode::Thread
    }

    /// Faults and munmaps share the mm's mmap_sem.
    pub(super) fn shares_mmap_sem(&self) -> bool {
        self.thread_mode() && self.config.locking == FaultLocking::MmapSem
    }

    /// down_read or up_read of the shared mmap_sem: one atomic on its word, after any
    /// writer (an munmap) has let go.
    pub(super) fn mmap_sem_read_op(&self, env: &mut dyn Env) {
        env.atomic(MMAP_SEM);
    }

    /// vma_start_read() or vma_end_read() of the region's VMA in a shared address space
    /// (mapping the region first, under the mmap_lock, if this round has none yet).
    pub(super) fn vma_read_op(&mut self, env: &mut dyn Env) {
        let Some(space) = self.space.clone() else { return };
        let mut space = space.lock().expect("unpoisoned");
        let slot = match self.slot {
            Some(slot) => slot,
            None => {
                env.lock(MMAP_SEM);
                let slot = space.map();
                env.unlock(MMAP_SEM);
                *self.slot.insert(slot)
            }
        };
        let vma_lock = VMA_LOCKS + u16::try_from(space.vma_of(slot)).expect("a slot per thread");
        drop(space);
        env.atomic(vma_lock);
    }

    /// munmap's detach in a shared address space: the mmap_lock for writing, the VMA
    /// write-locked while it is split, the region's slot freed.
    pub(super) fn detach_region(&mut self, env: &mut dyn Env) {
        let (Some(space), Some(slot)) = (self.space.clone(), self.slot.take()) else { return };
        let mut space = space.lock().expect("unpoisoned");
        let vma_lock = VMA_LOCKS + u16::try_from(space.vma_of(slot)).expect("a slot per thread");
        env.lock(MMAP_SEM);
        env.lock(vma_lock);
        space.unmap(slot);
        env.unlock(vma_lock);
        env.unlock(MMAP_SEM);
    }

    /// The gathered range's TLB flush before its pages are freed (tlb_flush_mmu()): in a
    /// shared mm, a shootdown of every other CPU running it (flush_tlb_mm_range()); in a
    /// private one a local flush, inside the unmap's measured cost.
    pub(super) fn flush_tlb(&mut self, env: &mut dyn Env) {
        self.unflushed_pages = 0;
        if self.mm_others.is_empty() {
            return;
        }
        let targets = self.mm_others.len() as u64;
        let caller_ns = at_targets(&self.config.shootdown_caller_ns, targets);
        let target_ns = at_targets(&self.config.shootdown_target_ns, targets);
        env.tlb_shootdown(&self.mm_others, caller_ns, target_ns);
    }
}
