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

use pagealloc::sizing::LinuxVersion;
use serde_json::json;

mod shared_mm;
mod task;

use super::address_space::AddressSpace;
use super::{CpuTask, Workload};
use task::Task;

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
    /// What a fault of `order` adds to the counts: an event to the task's cache, its pages
    /// to the percpu_counter (add_mm_counter() of the folio's pages).
    fn per_fault(self, order: u8) -> u64 {
        match self {
            RssCounting::TaskCache => 1,
            RssCounting::PercpuCounter => 1 << order,
        }
    }

    /// Counts between folds into the shared mm on a machine of `cpus` online CPUs.
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
    /// Each fault's block: 0, a 4 KiB page; 9, a 2 MiB huge page, as a fault in a
    /// MADV_HUGEPAGE region gets one (zeroing its 512 pages).
    pub fault_order: u8,
    /// What the kernel's zeroing of a page costs beyond the page touch the simulator
    /// charges; `fault_overhead_ns` holds one page's, so a fault charges it for each
    /// further page of its block.
    pub zero_extra_ns: u64,
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
            fault_order: 0,
            zero_extra_ns: 0,
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
            zero_extra_ns: machine.kernel.clear_page_ns.saturating_sub(machine.calibration.page_miss_ns),
            online_cpus: machine.topology.cpus(),
            shootdown_caller_ns: machine.kernel.shootdown_caller_ns.clone(),
            shootdown_target_ns: machine.kernel.shootdown_target_ns.clone(),
            ..self
        }
    }
}

/// The shared address space's mmap_sem (thread mode).
pub(super) const MMAP_SEM: u16 = 0;
/// The shared mm's RSS counters' line (thread mode).
pub(super) const MM_RSS: u16 = 1;
/// The first VMA lock's id (thread mode, per-VMA locks): VMA locks are this plus the VMA's
/// first slot.
pub(super) const VMA_LOCKS: u16 = 2;
/// Faults between folds of a task's RSS counts into its mm (TASK_RSS_EVENTS_THRESH).
pub(super) const RSS_EVENTS_THRESH: u64 = 64;
/// Pages an mmu_gather batch frees at once (MAX_GATHER_BATCH: a page of pointers).
pub(super) const GATHER_BATCH_PAGES: usize = 510;
/// Pages an mmu_gather holds before it must flush the TLB and free them: as many batches as
/// MAX_GATHER_BATCH_COUNT allows (10000 / MAX_GATHER_BATCH, whole batches), the flush
/// tlb_next_batch() forces once it can chain no more.
pub(super) const GATHER_FLUSH_PAGES: usize = (10_000 / GATHER_BATCH_PAGES) * GATHER_BATCH_PAGES;

/// A shootdown cost by targets; none where nothing was measured or cited.
pub(super) fn at_targets(costs: &[(u64, u64)], targets: u64) -> u64 {
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
            "fault_order": self.fault_order,
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
                    rss_per_fault: self.rss.per_fault(self.fault_order),
                    rss_pending: 0,
                    space,
                    slot: None,
                    mm_others,
                    unflushed_pages: 0,
                }) as Box<dyn CpuTask>
            })
            .collect()
    }
}
