//! Workloads as per-CPU operation generators, written once against [`Env`] and run either on
//! the many-CPU simulator or on real threads (`--real`).

mod address_space;
mod kbuild;
mod page_bench;
mod page_fault;
mod pairs;
mod thp_compact;
mod thp_fio_scale;
mod trunc;
mod unix_skb;

pub use kbuild::Kbuild;
pub use page_bench::PageBench;
pub use page_fault::{FaultMode, PageFault};
pub use pairs::{PairKind, Pairs};
pub use thp_compact::{latency_bucket_bound_ns, latency_bucket_keys, ThpCompact};
pub use thp_fio_scale::ThpFioScale;
pub use trunc::Trunc;

use pagealloc::lru::LruList;
use pagealloc::{AllocRequest, Block};

/// What a workload step may do: allocator calls, touching page data, computing, and
/// workload-level locks (e.g. an mm lock).
pub trait Env {
    fn alloc(&mut self, order: u8, request: AllocRequest) -> Option<Block>;
    fn free(&mut self, block: Block);
    /// Splits an allocated block into its order-0 pages (split_page()).
    fn split(&mut self, block: Block) -> Vec<Block>;
    /// Reads or writes the data of `pages` pages from `pfn` (zeroing a faulted page,
    /// copying a message).
    fn touch(&mut self, pfn: u64, pages: u64);
    /// Reads the data of `pages` pages from `pfn` that another task wrote (a receiver's
    /// copy of a message): where the environment tells reads from writes, a page another
    /// core holds costs its read. A touch otherwise.
    fn read(&mut self, pfn: u64, pages: u64) {
        self.touch(pfn, pages);
    }
    /// Computation between allocator calls.
    fn compute(&mut self, ns: u64);
    /// A TLB shootdown from the running CPU to the CPUs `targets` (tasks of the workload
    /// sharing its address space): `caller_ns` to the caller, `target_ns` to each target
    /// where the environment can charge another CPU; the caller's share otherwise.
    fn tlb_shootdown(&mut self, targets: &[usize], caller_ns: u64, target_ns: u64) {
        let _ = (targets, target_ns);
        self.compute(caller_ns);
    }
    /// Waits, off the CPU, until the running CPU's time is `ns` (a task blocked on I/O);
    /// nothing if that time has passed.
    fn sleep_until(&mut self, ns: u64);
    fn lock(&mut self, id: u16);
    fn unlock(&mut self, id: u16);
    /// An atomic read-modify-write on lock `id`'s word that does not take the lock (a
    /// reader's count on an rwsem, a refcount): after any holder lets go, as a lock taken
    /// and dropped at once, where the environment has nothing finer.
    fn atomic(&mut self, id: u16) {
        self.lock(id);
        self.unlock(id);
    }
    /// Units of the workload's metric completed (faults, operations, messages).
    fn done(&mut self, units: u64);
    /// The running CPU's time in ns (simulated, or wall clock since the run started).
    fn now_ns(&self) -> u64;
    /// A workload-specific result (summed over CPUs), e.g. a phase's duration.
    fn record(&mut self, key: &'static str, value: f64);
    /// Share of managed memory free in buddy blocks of 2 MiB or more, in percent, where the
    /// environment sees the allocator's free lists (the simulator does).
    fn free_huge_pct(&self) -> Option<f64> {
        None
    }
    /// The run's LRU lists: built, from the preset's policy, for a workload that says so in
    /// [`Workload::uses_lru`].
    fn lru(&self) -> Option<&dyn LruSink>;
    /// Puts an allocated page on `list` of its node's LRU.
    fn lru_add(&mut self, page: &Block, list: LruList) {
        self.lru().expect(USES_LRU).add(page, list);
    }
    /// Takes pages off the LRU before they are freed (release_pages()).
    fn lru_release(&mut self, pages: &[Block]) {
        self.lru().expect(USES_LRU).release(pages);
    }
    /// The run's page cache, for a workload that says so in [`Workload::uses_page_cache`]:
    /// reclaim drops its oldest pages and compaction moves them.
    fn page_cache(&self) -> Option<&crate::page_cache::PageCache> {
        None
    }
    /// Puts a page (or slab page) into the run's page cache.
    fn cache_insert(&mut self, page: Block) {
        self.page_cache().expect(USES_PAGE_CACHE).insert(page);
    }
    /// Hands a slab page of reclaimable objects to the run's page cache.
    fn cache_insert_slab(&mut self, page: Block) {
        self.page_cache().expect(USES_PAGE_CACHE).insert_slab(page);
    }
    /// Hands anonymous memory to the run's page cache to hold (movable, not reclaimable).
    fn cache_insert_anon(&mut self, block: Block) {
        self.page_cache().expect(USES_PAGE_CACHE).insert_anon(block);
    }
    /// Pages one LRU lock hold of a removal covers (1 without LRU lists). A workload that
    /// releases many pages makes each hold a step of its own, so the simulator takes the
    /// locks in time order.
    fn lru_pages_per_removal_hold(&self) -> usize {
        self.lru().map_or(1, |lru| lru.pages_per_removal_hold())
    }
}

const USES_LRU: &str = "a workload that keeps pages on the LRU says so (uses_lru)";
const USES_PAGE_CACHE: &str = "a workload that keeps a page cache says so (uses_page_cache)";

/// LRU lists as a workload sees them: the harness's lists, bound to the run's platform.
pub trait LruSink {
    /// Puts `page` in the current CPU's add batch for `list`.
    fn add(&self, page: &Block, list: LruList);
    /// Takes `pages` off the LRU (release_pages()).
    fn release(&self, pages: &[Block]);
    /// Pages one lock hold of a removal covers: 32 under the node lock (SWAP_CLUSTER_MAX),
    /// 1 under batch locks.
    fn pages_per_removal_hold(&self) -> usize;
}

/// What a task asks for after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Continue,
    Done,
}

/// One CPU's share of a workload.
pub trait CpuTask: Send {
    /// A few allocator calls' worth of work.
    fn step(&mut self, env: &mut dyn Env) -> Step;
    /// Returns everything the task still holds.
    fn finish(&mut self, env: &mut dyn Env);
}

/// A workload: its name, its parameters as printed in results, and its per-CPU tasks.
pub trait Workload {
    fn name(&self) -> &'static str;
    /// The unit of `done` (e.g. "faults").
    fn unit(&self) -> &'static str;
    fn params(&self) -> serde_json::Value;
    /// The workload puts pages on LRU lists: the harness builds them.
    fn uses_lru(&self) -> bool {
        false
    }
    /// The workload keeps file pages in a page cache the allocator may reclaim and compact:
    /// the harness builds one and registers it.
    fn uses_page_cache(&self) -> bool {
        false
    }
    fn tasks(&self, cpus: usize, seed: u64) -> Vec<Box<dyn CpuTask>>;
}

/// A CPU with nothing to do in this workload.
pub struct Idle;

impl CpuTask for Idle {
    fn step(&mut self, _env: &mut dyn Env) -> Step {
        Step::Done
    }
    fn finish(&mut self, _env: &mut dyn Env) {}
}
