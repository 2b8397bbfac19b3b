//! will-it-scale page_fault1: each task loops: map a 128 MiB anonymous region, write one byte
//! per page (an order-0 movable, zeroed allocation per fault), unmap it (free every page
//! from the same CPU).
//!
//! Process mode: private address spaces. Thread mode: one shared address space, whose
//! locking follows the kernel release the preset models (`FaultLocking`):
//! - up to 6.3, every fault takes the shared `mmap_sem` for reading (down_read and up_read:
//!   an atomic on the semaphore word each, so faults bounce its line but do not exclude
//!   each other), and every munmap takes it for writing while it zaps and frees;
//! - from 6.4 (per-VMA locks), a fault takes only its VMA's lock (an atomic on its word to
//!   take it, one to drop it), and mmap and munmap take the mmap_lock for writing, munmap
//!   write-locking the VMA it splits. The threads' regions are not always apart: adjacent
//!   anonymous mappings merge into one VMA (see `address_space`), whose lock word the
//!   faults of every region in it bounce between their CPUs.
//!
//! The fault path also folds its RSS counts into the shared mm now and then: every 64
//! faults up to 6.1 (SPLIT_RSS_COUNTING's TASK_RSS_EVENTS_THRESH), and from 6.2, where the
//! counts became percpu_counters, whenever a CPU's part reaches the batch (max(32, 2 x
//! CPUs)), under the counter's spinlock. Split page-table locks are per 2 MiB of a task's
//! own region, hence uncontended; their cost is inside `fault_overhead_ns`.
//!
//! With `lru`, each faulted page joins the anonymous LRU through the CPU's add batch (the
//! 2018 kernels put new anonymous pages on the active list), and munmap takes the pages off
//! the LRU in mmu_gather batches before freeing them (release_pages()).

use std::collections::VecDeque;

use pagealloc::lru::LruList;
use pagealloc::sizing::LinuxVersion;
use serde_json::json;

use super::address_space::AddressSpace;
use super::{CpuTask, Env, Step, Workload};
use pagealloc::{AllocRequest, Block};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FaultMode {
    Process,
    Thread,
}

/// How a fault in a shared address space locks it (thread mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultLocking {
    /// The mm's mmap_sem, read per fault, written per munmap (up to 6.3).
    MmapSem,
    /// The faulting VMA's own lock (6.4, "mm: introduce per-VMA locks").
    PerVma,
}

/// How the fault path folds its RSS counts into the shared mm (thread mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RssCounting {
    /// A task-local cache folded every 64 faults (up to 6.1).
    TaskCache,
    /// percpu_counters folded past their batch (6.2, "mm: convert mm's rss stats into
    /// percpu_counter").
    PercpuCounter,
}

impl RssCounting {
    /// Faults between folds into the shared mm on a machine of `cpus` online CPUs.
    fn fold_every_faults(self, cpus: usize) -> u64 {
        match self {
            RssCounting::TaskCache => RSS_EVENTS_THRESH,
            // percpu_counter_batch: max(32, 2 x online CPUs).
            RssCounting::PercpuCounter => (2 * cpus as u64).max(32),
        }
    }
}

#[derive(Clone, Debug)]
pub struct PageFault {
    pub mode: FaultMode,
    /// Pages per mapping (128 MiB).
    pub region_pages: u64,
    /// Trap, page-table update and the instructions of the LRU add per fault, besides
    /// allocation, zeroing and (with `lru`) the LRU's locks and lines.
    pub fault_overhead_ns: u64,
    /// mmap + munmap system-call overhead per round.
    pub map_overhead_ns: u64,
    /// Faulted pages go on the LRU and munmap takes them off.
    pub lru: bool,
    pub locking: FaultLocking,
    pub rss: RssCounting,
    /// The machine's online CPUs, which size the percpu_counter batch; 0: the run's CPUs.
    pub online_cpus: u32,
    /// A TLB shootdown's cost to its caller by the CPUs it interrupts: (targets, ns),
    /// interpolated between and along the last two beyond; empty charges none.
    pub shootdown_caller_ns: Vec<(u64, u64)>,
    /// What each interrupted CPU loses to a shootdown, by the CPUs interrupted at once.
    pub shootdown_target_ns: Vec<(u64, u64)>,
}

impl PageFault {
    /// The fault path of `release`, with the simulator's legacy costs (a machine profile
    /// replaces them: see `machine::KernelCosts`).
    pub fn new(mode: FaultMode, release: LinuxVersion) -> PageFault {
        let per_vma = release >= LinuxVersion::new(6, 4);
        let percpu_rss = release >= LinuxVersion::new(6, 2);
        PageFault {
            mode,
            region_pages: 32_768,
            fault_overhead_ns: 250,
            map_overhead_ns: 5_000,
            lru: false,
            locking: if per_vma { FaultLocking::PerVma } else { FaultLocking::MmapSem },
            rss: if percpu_rss { RssCounting::PercpuCounter } else { RssCounting::TaskCache },
            online_cpus: 0,
            shootdown_caller_ns: Vec::new(),
            shootdown_target_ns: Vec::new(),
        }
    }
}

impl PageFault {
    /// The workload on `machine`: its kernel's fault and map costs, and its CPUs online
    /// (which size the RSS counters' batch), whatever share of them the tasks use.
    pub fn on_machine(self, machine: &crate::machine::SimMachine) -> PageFault {
        PageFault {
            fault_overhead_ns: machine.kernel.fault_ns,
            map_overhead_ns: machine.kernel.map_unmap_ns,
            online_cpus: machine.topology.cpus(),
            shootdown_caller_ns: machine.kernel.shootdown_caller_ns.clone(),
            shootdown_target_ns: machine.kernel.shootdown_target_ns.clone(),
            ..self
        }
    }
}

/// The shared address space's mmap_sem (thread mode).
const MMAP_SEM: u16 = 0;
/// The shared mm's RSS counters' line (thread mode).
const MM_RSS: u16 = 1;
/// The first VMA lock's id (thread mode, per-VMA locks): VMA locks are this plus the VMA's
/// first slot.
const VMA_LOCKS: u16 = 2;
/// Faults between folds of a task's RSS counts into its mm (TASK_RSS_EVENTS_THRESH).
const RSS_EVENTS_THRESH: u64 = 64;
/// Pages an mmu_gather batch frees at once (MAX_GATHER_BATCH: a page of pointers).
const GATHER_BATCH_PAGES: usize = 510;
/// Pages an mmu_gather holds before it must flush the TLB and free them: as many batches as
/// MAX_GATHER_BATCH_COUNT allows (10000 / MAX_GATHER_BATCH, whole batches), the flush
/// tlb_next_batch() forces once it can chain no more.
const GATHER_FLUSH_PAGES: usize = (10_000 / GATHER_BATCH_PAGES) * GATHER_BATCH_PAGES;

struct Task {
    config: PageFault,
    /// Faulted pages in address order (page_fault1 writes its mapping from the start).
    mapped: VecDeque<Block>,
    /// A page whose fault has yet to finish (LRU add, RSS fold, up_read).
    faulting: Option<Block>,
    /// Process mode: an munmap in progress, one LRU lock hold's worth of pages per step.
    unmapping: bool,
    faults: u64,
    /// Faults between RSS folds into the shared mm.
    rss_fold_every: u64,
    /// Thread mode with per-VMA locks: the shared address space, and this task's region's
    /// slot in it while mapped.
    space: Option<std::sync::Arc<std::sync::Mutex<AddressSpace>>>,
    slot: Option<usize>,
    /// Thread mode: the other CPUs running the shared mm, which a TLB flush interrupts.
    mm_others: Vec<usize>,
    /// Pages of the unmap in progress gathered since its last TLB flush.
    unflushed_pages: usize,
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
        } else if (self.mapped.len() as u64) < self.config.region_pages {
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
    fn thread_mode(&self) -> bool {
        self.config.mode == FaultMode::Thread
    }

    /// Faults and munmaps share the mm's mmap_sem.
    fn shares_mmap_sem(&self) -> bool {
        self.thread_mode() && self.config.locking == FaultLocking::MmapSem
    }

    /// down_read or up_read of the shared mmap_sem: one atomic on its word, after any
    /// writer (an munmap) has let go.
    fn mmap_sem_read_op(&self, env: &mut dyn Env) {
        env.atomic(MMAP_SEM);
    }

    /// vma_start_read() or vma_end_read() of the region's VMA in a shared address space
    /// (mapping the region first, under the mmap_lock, if this round has none yet).
    fn vma_read_op(&mut self, env: &mut dyn Env) {
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
    fn detach_region(&mut self, env: &mut dyn Env) {
        let (Some(space), Some(slot)) = (self.space.clone(), self.slot.take()) else { return };
        let mut space = space.lock().expect("unpoisoned");
        let vma_lock = VMA_LOCKS + u16::try_from(space.vma_of(slot)).expect("a slot per thread");
        env.lock(MMAP_SEM);
        env.lock(vma_lock);
        space.unmap(slot);
        env.unlock(vma_lock);
        env.unlock(MMAP_SEM);
    }

    fn start_fault(&mut self, env: &mut dyn Env) {
        if self.shares_mmap_sem() {
            self.mmap_sem_read_op(env);
        }
        self.vma_read_op(env);
        env.compute(self.config.fault_overhead_ns);
        let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) else {
            if self.shares_mmap_sem() {
                self.mmap_sem_read_op(env);
            }
            self.vma_read_op(env);
            // Out of memory: unmap early, as the OOM path would shrink the workload.
            self.begin_unmap(env);
            return;
        };
        env.touch(page.pfn(), 1);
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
        if self.thread_mode() && self.faults.is_multiple_of(self.rss_fold_every) {
            // The fold's add under the counter's spinlock: the lock word's RMW.
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

    /// The gathered range's TLB flush before its pages are freed (tlb_flush_mmu()): in a
    /// shared mm, a shootdown of every other CPU running it (flush_tlb_mm_range()); in a
    /// private one a local flush, inside the unmap's measured cost.
    fn flush_tlb(&mut self, env: &mut dyn Env) {
        self.unflushed_pages = 0;
        if self.mm_others.is_empty() {
            return;
        }
        let targets = self.mm_others.len() as u64;
        let caller_ns = at_targets(&self.config.shootdown_caller_ns, targets);
        let target_ns = at_targets(&self.config.shootdown_target_ns, targets);
        env.tlb_shootdown(&self.mm_others, caller_ns, target_ns);
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

/// A shootdown cost by targets; none where nothing was measured or cited.
fn at_targets(costs: &[(u64, u64)], targets: u64) -> u64 {
    if costs.is_empty() {
        0
    } else {
        crate::machine::kernel_costs::at_size(costs, targets)
    }
}

impl Workload for PageFault {
    fn name(&self) -> &'static str {
        match self.mode {
            FaultMode::Process => "page_fault1-process",
            FaultMode::Thread => "page_fault1-thread",
        }
    }
    fn unit(&self) -> &'static str {
        "faults"
    }
    fn params(&self) -> serde_json::Value {
        json!({
            "mode": self.mode,
            "region_pages": self.region_pages,
            "fault_overhead_ns": self.fault_overhead_ns,
            "map_overhead_ns": self.map_overhead_ns,
            "locking": self.locking,
            "rss": self.rss,
            "gather_flush_pages": GATHER_FLUSH_PAGES,
        })
    }
    fn uses_lru(&self) -> bool {
        self.lru
    }
    fn tasks(&self, cpus: usize, _seed: u64) -> Vec<Box<dyn CpuTask>> {
        let space = std::sync::Arc::new(std::sync::Mutex::new(AddressSpace::default()));
        (0..cpus)
            .map(|cpu| {
                let space = (self.mode == FaultMode::Thread && self.locking == FaultLocking::PerVma)
                    .then(|| std::sync::Arc::clone(&space));
                let mm_others = match self.mode {
                    FaultMode::Thread => (0..cpus).filter(|&other| other != cpu).collect(),
                    FaultMode::Process => Vec::new(),
                };
                Box::new(Task {
                    config: self.clone(),
                    mapped: VecDeque::with_capacity(self.region_pages as usize),
                    faulting: None,
                    unmapping: false,
                    faults: 0,
                    rss_fold_every: self.rss.fold_every_faults(if self.online_cpus > 0 {
                        self.online_cpus as usize
                    } else {
                        cpus
                    }),
                    space,
                    slot: None,
                    mm_others,
                    unflushed_pages: 0,
                }) as Box<dyn CpuTask>
            })
            .collect()
    }
}
