//! A thpcompact-like workload, after mmtests' thpcompact (configs/config-workload-thpcompact
//! and its thpcompact.c; facts only). Each CPU runs one thread over its share of a map size
//! of 80% of memory (THPCOMPACT_MAPSIZE = MemTotal * 8 / 10):
//! 1. it faults an anonymous region of its share with MADV_HUGEPAGE (order-9 attempts with
//!    direct compaction, falling back to 512 base pages), then punches a hole in the first
//!    half of every 2 MiB (a huge page is split and its first 1 MiB freed);
//! 2. it reads a file of a quarter of its share into the page cache;
//! 3. it faults a second anonymous region of half its share, 2 MiB at a time, recording
//!    whether each fault got a huge page and its latency (the fault and the write of 2 MiB).
//!    With `madvise` these faults are GFP_TRANSHUGE (direct compaction and reclaim, once);
//!    without, GFP_TRANSHUGE_LIGHT (neither), the default `defrag=madvise` for an ordinary
//!    mapping.
//!
//! The anonymous pages left in the first region are the migration sources compaction needs
//! (they are registered with the run's page cache as movable anonymous memory; file pages
//! are movable and reclaimable). The second region's faults need compaction to find whole
//! pageblocks. mmtests sweeps 1..=min(4 x CPUs, 32) threads; the experiment runs one thread
//! per CPU.
//!
//! Recorded (summed over CPUs): huge and base faults of the second region, the sum of their
//! latencies, and the huge faults' latencies as a log-scale histogram
//! (`huge_alloc_ns_bucket_*`, four buckets per doubling) for p50 and p95.

use std::sync::OnceLock;

use serde_json::json;

use super::{CpuTask, Env, Step, Workload};
use pagealloc::{AllocRequest, Block, PAGEBLOCK_ORDER};

const HUGE_PAGES: u64 = 1 << PAGEBLOCK_ORDER;

#[derive(Clone, Debug)]
pub struct ThpCompact {
    /// Pages of the machine, which the map size is a share of.
    pub memory_pages: u64,
    /// MADV_HUGEPAGE on the second region.
    pub madvise: bool,
    /// THPCOMPACT_MAPSIZE as percent of memory (mmtests: 80).
    pub mapsize_pct: u64,
    /// Trap and page-table work per base-page fault (as page_fault1's).
    pub fault_overhead_ns: u64,
}

impl ThpCompact {
    pub fn new(memory_pages: u64, madvise: bool) -> ThpCompact {
        ThpCompact { memory_pages, madvise, mapsize_pct: 80, fault_overhead_ns: 250 }
    }
}

/// Where a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    FaultFirst,
    ReadFile,
    FaultSecond,
    Done,
}

struct Task {
    config: ThpCompact,
    phase: Phase,
    /// 2 MiB units of this thread's share left to fault in each region, and file pages to
    /// read.
    first_units: u64,
    file_pages: u64,
    second_units: u64,
}

/// Bucket `i` holds latencies below 2^(i/4) ns: 128 buckets reach 2^32 ns.
pub const LATENCY_BUCKETS: usize = 128;

/// The recorded keys of the latency histogram.
pub fn latency_bucket_keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| {
        (0..LATENCY_BUCKETS).map(|i| &*Box::leak(format!("huge_alloc_ns_bucket_{i:03}").into_boxed_str())).collect()
    })
}

/// The bucket of a latency: the smallest i with ns < 2^(i/4).
pub fn latency_bucket(ns: u64) -> usize {
    (0..LATENCY_BUCKETS).find(|&i| (ns as f64) < 2f64.powf(i as f64 / 4.0)).unwrap_or(LATENCY_BUCKETS - 1)
}

/// The upper bound of bucket `i`, in ns.
pub fn latency_bucket_bound_ns(i: usize) -> f64 {
    2f64.powf(i as f64 / 4.0)
}

/// One 2 MiB THP fault: an order-9 attempt with `request`, else 512 base-page faults;
/// returns the huge block or the base pages, and the latency of the fault and the write of
/// 2 MiB. Shared with thpfioscale's THP threads.
pub(super) fn fault_2mib(
    env: &mut dyn Env,
    request: AllocRequest,
    fault_overhead_ns: u64,
) -> (Option<Block>, Vec<Block>, u64) {
    let start_ns = env.now_ns();
    if let Some(block) = env.alloc(PAGEBLOCK_ORDER, request) {
        env.touch(block.pfn(), HUGE_PAGES);
        env.compute(fault_overhead_ns);
        return (Some(block), Vec::new(), env.now_ns() - start_ns);
    }
    let mut pages = Vec::with_capacity(HUGE_PAGES as usize);
    for _ in 0..HUGE_PAGES {
        let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) else { break };
        env.touch(page.pfn(), 1);
        env.compute(fault_overhead_ns);
        pages.push(page);
    }
    (None, pages, env.now_ns() - start_ns)
}

impl Task {
    /// Faults 2 MiB of the first region with MADV_HUGEPAGE and punches its first 1 MiB out.
    fn fault_first(&mut self, env: &mut dyn Env) {
        let (huge, pages, _) = fault_2mib(env, AllocRequest::TRANSHUGE, self.config.fault_overhead_ns);
        let pages = match huge {
            Some(block) => env.split(block),
            None => pages,
        };
        let cache = env.page_cache().expect("thpcompact keeps a page cache");
        let half = (HUGE_PAGES / 2) as usize;
        let mut pages = pages.into_iter();
        let hole: Vec<Block> = pages.by_ref().take(half).collect();
        for page in pages {
            cache.insert_anon(page);
        }
        for page in hole {
            env.free(page);
        }
    }

    /// Reads a batch of file pages into the page cache.
    fn read_file(&mut self, env: &mut dyn Env) {
        for _ in 0..32.min(self.file_pages) {
            self.file_pages -= 1;
            let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) else { continue };
            env.touch(page.pfn(), 1);
            env.page_cache().expect("thpcompact keeps a page cache").insert(page);
        }
    }

    /// Faults 2 MiB of the second region and records the fault.
    fn fault_second(&mut self, env: &mut dyn Env) {
        let request = if self.config.madvise { AllocRequest::TRANSHUGE } else { AllocRequest::TRANSHUGE_LIGHT };
        let (huge, pages, latency_ns) = fault_2mib(env, request, self.config.fault_overhead_ns);
        let cache = env.page_cache().expect("thpcompact keeps a page cache");
        match huge {
            Some(block) => {
                cache.insert_anon(block);
                env.record("second_huge_faults", 1.0);
                env.record("huge_fault_ns_sum", latency_ns as f64);
                env.record(latency_bucket_keys()[latency_bucket(latency_ns)], 1.0);
            }
            None => {
                for page in pages {
                    cache.insert_anon(page);
                }
                env.record("second_base_faults", 1.0);
                env.record("base_fault_ns_sum", latency_ns as f64);
            }
        }
        env.done(1);
    }
}

impl CpuTask for Task {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        match self.phase {
            Phase::FaultFirst if self.first_units > 0 => {
                self.first_units -= 1;
                self.fault_first(env);
            }
            Phase::FaultFirst => self.phase = Phase::ReadFile,
            Phase::ReadFile if self.file_pages > 0 => self.read_file(env),
            Phase::ReadFile => self.phase = Phase::FaultSecond,
            Phase::FaultSecond if self.second_units > 0 => {
                self.second_units -= 1;
                self.fault_second(env);
            }
            Phase::FaultSecond => self.phase = Phase::Done,
            Phase::Done => return Step::Done,
        }
        Step::Continue
    }

    /// Everything the thread faulted or read is the page cache's, which the harness frees.
    fn finish(&mut self, _env: &mut dyn Env) {}
}

impl ThpCompact {
    /// The kernel's fault cost on a profiled machine.
    pub fn with_costs(self, kernel: &crate::machine::KernelCosts) -> ThpCompact {
        ThpCompact { fault_overhead_ns: kernel.fault_ns, ..self }
    }
}

impl Workload for ThpCompact {
    fn name(&self) -> &'static str {
        "thpcompact"
    }
    fn unit(&self) -> &'static str {
        "2 MiB faults"
    }
    fn params(&self) -> serde_json::Value {
        json!({ "madvise": self.madvise, "mapsize_pct": self.mapsize_pct, "memory_pages": self.memory_pages })
    }
    fn uses_page_cache(&self) -> bool {
        true
    }
    fn tasks(&self, cpus: usize, _seed: u64) -> Vec<Box<dyn CpuTask>> {
        // Per thread, as thpcompact.c sizes it: the share rounded down to 2 MiB.
        let thread_pages = (self.memory_pages * self.mapsize_pct / 100 / cpus as u64) & !(HUGE_PAGES - 1);
        (0..cpus)
            .map(|_| {
                Box::new(Task {
                    config: self.clone(),
                    phase: Phase::FaultFirst,
                    first_units: thread_pages / HUGE_PAGES,
                    file_pages: thread_pages / 4,
                    second_units: thread_pages / HUGE_PAGES / 2,
                }) as Box<dyn CpuTask>
            })
            .collect()
    }
}
