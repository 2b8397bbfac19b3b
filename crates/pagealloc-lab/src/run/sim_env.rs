//! A workload's environment on the simulator: one per CPU, making its calls on the shared
//! allocator and charging its work to that CPU's clock.

use std::collections::{BTreeMap, HashMap};

use pagealloc::{AllocRequest, Block, PageAllocator};
use pagealloc_sim::platform::SimHandle;
use pagealloc_sim::SimPlatform;

use super::lru_pages::LruPages;
use super::AllocFailures;
use crate::machine::CallCosts;
use crate::workload::{Env, LruSink};

pub(super) struct SimEnv<'a> {
    pub(super) allocator: &'a PageAllocator<SimPlatform>,
    pub(super) sim: SimHandle,
    pub(super) cpu: usize,
    pub(super) work_units: u64,
    /// Time the CPU's task slept (not CPU time).
    pub(super) slept_ns: u64,
    pub(super) calls: u64,
    pub(super) recorded: BTreeMap<&'static str, f64>,
    /// Allocations per page frame, when tracked.
    pub(super) reuse: Option<HashMap<u64, u64>>,
    pub(super) failures: AllocFailures,
    /// With `--faults`: every allocator call is a point where the task may migrate.
    pub(super) faults: bool,
    /// The run's LRU lists, if the workload keeps pages on them.
    pub(super) lru: Option<&'a LruPages<'a, SimPlatform>>,
    /// The run's page cache, if the workload keeps one.
    pub(super) page_cache: Option<&'a crate::page_cache::PageCache>,
    /// Each allocator call's own work, charged before the call.
    pub(super) call_costs: CallCosts,
}

impl<'a> SimEnv<'a> {
    /// One environment per CPU of the run.
    pub(super) fn for_cpus(
        allocator: &'a PageAllocator<SimPlatform>,
        sim: SimHandle,
        cpus: usize,
        top_reuse: bool,
        faults: bool,
        (lru, page_cache): (Option<&'a LruPages<'a, SimPlatform>>, Option<&'a crate::page_cache::PageCache>),
    ) -> Vec<SimEnv<'a>> {
        (0..cpus)
            .map(|cpu| SimEnv {
                allocator,
                sim,
                cpu,
                work_units: 0,
                slept_ns: 0,
                calls: 0,
                recorded: BTreeMap::new(),
                reuse: top_reuse.then(HashMap::new),
                failures: AllocFailures::default(),
                faults,
                lru,
                page_cache,
                call_costs: CallCosts::NONE,
            })
            .collect()
    }

    /// Before an allocator call: the platform may move the task (faults only).
    #[inline]
    fn call_boundary(&mut self) {
        self.calls += 1;
        if self.faults {
            self.sim.between_calls();
        }
    }
}

impl Env for SimEnv<'_> {
    fn alloc(&mut self, order: u8, request: AllocRequest) -> Option<Block> {
        self.call_boundary();
        self.sim.advance(self.call_costs.alloc_ns(order));
        let block = self.failures.note(self.allocator.alloc_pages(order, request))?;
        if let Some(reuse) = self.reuse.as_mut() {
            *reuse.entry(block.pfn()).or_default() += 1;
        }
        Some(block)
    }
    fn split(&mut self, block: Block) -> Vec<Block> {
        self.call_boundary();
        self.allocator.split(block).expect("workloads split what they allocated").collect()
    }
    fn free(&mut self, block: Block) {
        self.call_boundary();
        self.sim.advance(self.call_costs.free_ns(block.order()));
        self.allocator.free_pages(block).expect("workloads free what they allocated");
    }
    fn touch(&mut self, pfn: u64, pages: u64) {
        use pagealloc::platform::Platform;
        self.allocator.platform().touch_pages(pfn, pages);
    }
    fn read(&mut self, pfn: u64, pages: u64) {
        self.allocator.platform().read_pages(pfn, pages);
    }
    fn tlb_shootdown(&mut self, targets: &[usize], caller_ns: u64, target_ns: u64) {
        self.sim.tlb_shootdown(targets, caller_ns, target_ns);
    }
    fn compute(&mut self, ns: u64) {
        self.sim.advance(ns);
    }
    fn sleep_until(&mut self, ns: u64) {
        let now_ns = self.sim.clock_ns(self.cpu);
        if ns > now_ns {
            self.slept_ns += ns - now_ns;
            self.sim.idle_until(self.cpu, ns);
        }
    }
    fn lock(&mut self, id: u16) {
        self.allocator.platform().workload_lock(id);
    }
    fn unlock(&mut self, id: u16) {
        self.allocator.platform().workload_unlock(id);
    }
    fn atomic(&mut self, id: u16) {
        self.allocator.platform().workload_rmw(id);
    }
    fn done(&mut self, units: u64) {
        self.work_units += units;
    }
    fn now_ns(&self) -> u64 {
        self.sim.clock_ns(self.cpu)
    }
    fn record(&mut self, key: &'static str, value: f64) {
        *self.recorded.entry(key).or_default() += value;
    }
    fn free_huge_pct(&self) -> Option<f64> {
        Some(super::frag_report::free_huge_pct(self.allocator))
    }
    fn page_cache(&self) -> Option<&crate::page_cache::PageCache> {
        self.page_cache
    }
    fn lru(&self) -> Option<&dyn LruSink> {
        self.lru.map(|lru| lru as &dyn LruSink)
    }
}
