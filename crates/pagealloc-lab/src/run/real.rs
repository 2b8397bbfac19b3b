//! Running a workload on real threads, one pinned thread per CPU, with real page data: a
//! buffer of the pool's size that `touch` writes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pagealloc::background::BackgroundWorker;
use pagealloc::platform::StdPlatform;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, PageAllocator, ZoneType};

use super::lru_pages::LruPages;
use super::{AllocFailures, RunArgs, RunReport};
use crate::workload::{CpuTask, Env, LruSink, Step, Workload};

const WORDS_PER_PAGE: usize = 4096 / 8;
/// How often the background worker looks for due work (the delay of a kswapd wake-up).
const BACKGROUND_POLL: Duration = Duration::from_millis(10);
/// Period of CPU 0's samples of the pages held in pagesets.
const SAMPLE_PERIOD: Duration = Duration::from_millis(1);
/// Steps between deadline checks (a clock read costs ~20 ns, more than a fast-path step).
const STEPS_PER_CLOCK_CHECK: u32 = 64;

/// Spin-loop iterations per microsecond, measured once, so `compute` burns time without
/// reading the clock.
fn spin_iterations_per_us() -> f64 {
    let iterations = 2_000_000u64;
    let start = Instant::now();
    for i in 0..iterations {
        std::hint::black_box(i);
    }
    iterations as f64 / (start.elapsed().as_nanos().max(1) as f64 / 1_000.0)
}

struct RealEnv<'a> {
    allocator: &'a PageAllocator<StdPlatform>,
    /// The pool's page data; blocks are disjoint, so relaxed stores never race on a word
    /// two owners use at once.
    data: &'a [AtomicU64],
    base_pfn: u64,
    locks: &'a [Mutex<()>],
    held: Vec<std::sync::MutexGuard<'a, ()>>,
    spin_per_us: f64,
    started: Instant,
    recorded: BTreeMap<&'static str, f64>,
    work_units: u64,
    calls: u64,
    failures: AllocFailures,
    lru: Option<&'a LruPages<'a, StdPlatform>>,
    page_cache: Option<&'a crate::page_cache::PageCache>,
}

impl Env for RealEnv<'_> {
    fn alloc(&mut self, order: u8, request: AllocRequest) -> Option<Block> {
        self.calls += 1;
        self.failures.note(self.allocator.alloc_pages(order, request))
    }
    fn split(&mut self, block: Block) -> Vec<Block> {
        self.calls += 1;
        self.allocator.split(block).expect("workloads split what they allocated").collect()
    }
    fn free(&mut self, block: Block) {
        self.calls += 1;
        self.allocator.free_pages(block).expect("workloads free what they allocated");
    }
    fn touch(&mut self, pfn: u64, pages: u64) {
        let start = (pfn - self.base_pfn) as usize * WORDS_PER_PAGE;
        for word in &self.data[start..start + pages as usize * WORDS_PER_PAGE] {
            word.store(0, Ordering::Relaxed);
        }
    }
    fn compute(&mut self, ns: u64) {
        let iterations = (ns as f64 * self.spin_per_us / 1_000.0) as u64;
        for i in 0..iterations {
            std::hint::black_box(i);
        }
    }
    fn sleep_until(&mut self, ns: u64) {
        let now_ns = self.now_ns();
        if ns > now_ns {
            std::thread::sleep(std::time::Duration::from_nanos(ns - now_ns));
        }
    }
    fn lock(&mut self, id: u16) {
        let guard = self.locks[id as usize].lock().expect("unpoisoned");
        self.held.push(guard);
    }
    fn unlock(&mut self, _id: u16) {
        self.held.pop();
    }
    fn done(&mut self, units: u64) {
        self.work_units += units;
    }
    fn page_cache(&self) -> Option<&crate::page_cache::PageCache> {
        self.page_cache
    }
    fn lru(&self) -> Option<&dyn LruSink> {
        self.lru.map(|lru| lru as &dyn LruSink)
    }
    fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }
    fn record(&mut self, key: &'static str, value: f64) {
        *self.recorded.entry(key).or_default() += value;
    }
}

/// What every CPU's thread shares.
struct Shared<'a> {
    allocator: &'a PageAllocator<StdPlatform>,
    data: &'a [AtomicU64],
    base_pfn: u64,
    locks: &'a [Mutex<()>],
    barrier: std::sync::Barrier,
    /// One start time for every thread, so their `now_ns` clocks agree (workloads schedule
    /// by them: a pair's two CPUs decide role swaps independently).
    run_start: std::sync::OnceLock<Instant>,
    duration: Duration,
    spin_per_us: f64,
    lru: Option<&'a LruPages<'a, StdPlatform>>,
    page_cache: Option<&'a crate::page_cache::PageCache>,
}

/// One CPU's counts.
struct CpuResult {
    work_units: u64,
    calls: u64,
    /// When this CPU's task stopped, from the shared start.
    ran_ns: u64,
    /// CPU 0 only: pages held in pagesets, summed over samples, and the sample count.
    pcp_samples: (u64, u64),
    recorded: BTreeMap<&'static str, f64>,
    failures: AllocFailures,
}

/// One pinned thread: released with the others, steps its task until the deadline, then
/// lets it return what it holds.
fn run_cpu(cpu: usize, mut task: Box<dyn CpuTask>, shared: &Shared<'_>) -> CpuResult {
    if let Err(error) = crate::pinning::pin_to_cpu(cpu) {
        panic!("workload thread for CPU {cpu}: {error}");
    }
    let mut env = RealEnv {
        allocator: shared.allocator,
        data: shared.data,
        base_pfn: shared.base_pfn,
        locks: shared.locks,
        held: Vec::new(),
        spin_per_us: shared.spin_per_us,
        started: Instant::now(),
        recorded: BTreeMap::new(),
        work_units: 0,
        calls: 0,
        failures: AllocFailures::default(),
        lru: shared.lru,
        page_cache: shared.page_cache,
    };
    shared.barrier.wait();
    env.started = *shared.run_start.get_or_init(Instant::now);
    let deadline = env.started + shared.duration;
    let mut pcp_samples = (0u64, 0u64);
    let mut next_sample = env.started;
    'run: loop {
        for _ in 0..STEPS_PER_CLOCK_CHECK {
            // A request the allocator rejects ends this CPU's run; run_real reports it.
            if task.step(&mut env) == Step::Done || env.failures.rejected.is_some() {
                break 'run;
            }
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        // CPU 0 samples the pagesets at its clock checks, at most once per SAMPLE_PERIOD, so
        // no extra thread competes for the cores.
        if cpu == 0 && now >= next_sample {
            pcp_samples = (pcp_samples.0 + shared.allocator.counters().pcp_pages(), pcp_samples.1 + 1);
            next_sample = now + SAMPLE_PERIOD;
        }
    }
    let counted = CpuResult {
        work_units: env.work_units,
        calls: env.calls,
        ran_ns: env.started.elapsed().as_nanos() as u64,
        pcp_samples,
        recorded: std::mem::take(&mut env.recorded),
        failures: env.failures,
    };
    task.finish(&mut env);
    counted
}

/// Work units, allocator calls and recorded values over all CPUs.
fn sum_results(results: &[CpuResult]) -> (u64, u64, BTreeMap<String, f64>) {
    let (work_units, calls) = results.iter().fold((0, 0), |(w, c), r| (w + r.work_units, c + r.calls));
    let mut recorded = BTreeMap::new();
    for values in results.iter().map(|result| &result.recorded) {
        for (&key, &value) in values {
            *recorded.entry(key.to_string()).or_insert(0.0) += value;
        }
    }
    (work_units, calls, recorded)
}

type SharedPageCache = std::sync::Arc<crate::page_cache::PageCache>;

/// The allocator of a real-thread run, with the workload's page cache as its reclaim and
/// migrate client if it has one.
fn build_allocator(
    workload: &dyn Workload,
    args: &RunArgs,
    preset: &'static pagealloc::presets::Preset,
) -> Result<(std::sync::Arc<PageAllocator<StdPlatform>>, Option<SharedPageCache>), String> {
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, args.memory_gib << 18).policy(args.policy(preset));
    let mut allocator = PageAllocator::build(builder, StdPlatform::new()).map_err(|e| e.to_string())?;
    let page_cache = workload.uses_page_cache().then(|| std::sync::Arc::new(crate::page_cache::PageCache::default()));
    if let Some(cache) = &page_cache {
        allocator.set_reclaim(cache.clone());
        allocator.set_migrate(cache.clone());
    }
    Ok((std::sync::Arc::new(allocator), page_cache))
}

pub fn run_real(workload: &dyn Workload, args: &RunArgs) -> Result<RunReport, String> {
    let preset = args.preset()?;
    crate::pinning::check_pinning(args.cpus).map_err(|error| format!("--real --cpus {}: {error}", args.cpus))?;
    let pages = args.memory_gib << 18;
    let (allocator, page_cache) = build_allocator(workload, args, preset)?;
    // The allocator's periodic work (vmstat passes on its interval, kswapd when woken) runs
    // on its own thread, as it does for any embedder on real threads.
    let background = BackgroundWorker::spawn(allocator.clone(), BACKGROUND_POLL);
    let base_pfn = allocator.zones()[0].start_pfn();
    let data: Vec<AtomicU64> = (0..pages as usize * WORDS_PER_PAGE).map(|_| AtomicU64::new(0)).collect();
    let locks: Vec<Mutex<()>> = (0..4).map(|_| Mutex::new(())).collect();
    let lru = LruPages::for_workload(workload, &allocator, args.policy(preset).lru)?;
    let shared = Shared {
        allocator: &allocator,
        data: &data,
        base_pfn,
        locks: &locks,
        barrier: std::sync::Barrier::new(args.cpus),
        run_start: std::sync::OnceLock::new(),
        duration: Duration::from_millis(args.duration_ms()),
        spin_per_us: spin_iterations_per_us(),
        lru: lru.as_ref(),
        page_cache: page_cache.as_deref(),
    };
    let tasks = workload.tasks(args.cpus, args.seed);
    let host_start = Instant::now();
    let results: Vec<CpuResult> = std::thread::scope(|scope| {
        let shared = &shared;
        let handles: Vec<_> =
            tasks.into_iter().enumerate().map(|(cpu, task)| scope.spawn(move || run_cpu(cpu, task, shared))).collect();
        handles.into_iter().map(|h| h.join().expect("workload thread panicked")).collect()
    });
    let host_seconds = host_start.elapsed().as_secs_f64();
    drop(background);
    if let Some(error) = results.iter().find_map(|result| result.failures.rejected) {
        return Err(format!("the workload's allocation was rejected: {error}"));
    }
    finish(workload, args, preset, &allocator, (&results, host_seconds), lru.as_ref(), page_cache.as_deref())
}

/// After the threads: the counters read, the LRU and page cache emptied, the allocator
/// checked, and the report.
fn finish(
    workload: &dyn Workload,
    args: &RunArgs,
    preset: &'static pagealloc::presets::Preset,
    allocator: &PageAllocator<StdPlatform>,
    (results, host_seconds): (&[CpuResult], f64),
    lru: Option<&LruPages<'_, StdPlatform>>,
    page_cache: Option<&crate::page_cache::PageCache>,
) -> Result<RunReport, String> {
    let (work_units, calls, recorded) = sum_results(results);
    let counters = allocator.counters().pcp_counters();
    let pcp_pages_end = allocator.counters().pcp_pages();
    let lock_stats = allocator.counters().zone_lock_stats();
    let vmstat = args.vmstat.then(|| super::report::vmstat_text(allocator));
    let lru_report = lru.map(|lru| lru.report());
    if let Some(lru) = lru {
        lru.check_empty()?;
    }
    let frag = page_cache.map(|cache| super::frag_report::measure(allocator, cache));
    if let Some(cache) = page_cache {
        cache.free_all(allocator);
    }
    allocator.pagesets().drain_all();
    allocator.check_invariants().map_err(|v| format!("invariant violated after the run: {v}"))?;
    // Measured: the last CPU's stop (a fixed-work workload may end before the deadline,
    // and a step may overrun it).
    let elapsed_s = results.iter().map(|result| result.ran_ns).max().unwrap_or(0) as f64 / 1e9;
    let (sampled_pages, samples) = results
        .iter()
        .fold((0, 0), |(pages, count), result| (pages + result.pcp_samples.0, count + result.pcp_samples.1));
    Ok(RunReport {
        workload: workload.name(),
        params: workload.params(),
        preset: args.policy_label(preset),
        cpus: args.cpus,
        platform: "real threads".into(),
        seed: args.seed,
        unit: workload.unit(),
        work_units,
        elapsed_s,
        work_per_sec: work_units as f64 / elapsed_s.max(1e-9),
        allocator_calls: calls,
        out_of_memory: results.iter().map(|result| result.failures.out_of_memory).sum(),
        lock_contend_pct: lock_stats.wait_ns as f64 * 100.0 / (elapsed_s.max(1e-9) * 1e9 * args.cpus as f64),
        zone_lock: lock_stats.into(),
        alloc_zone_pages: allocator.counters().zone_counters().alloc_zone_pages,
        free_high: counters.free_high_events,
        pcp_pages_end,
        sim_ops_per_sec: None,
        host_seconds,
        recorded,
        top_pfn_reuse: Vec::new(),
        pcp_pages_avg: if samples == 0 { pcp_pages_end as f64 } else { sampled_pages as f64 / samples as f64 },
        pcp_pages_after_idle: None,
        sim: None,
        calibration: None,
        metadata_layout: None,
        faults: None,
        numa_stats: args.numa_stats.map(|numa| numa.to_string()),
        vmstat,
        lru: lru_report,
        frag,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::WorkloadKind;

    /// A fixed-work workload ends long before its cap: the report gives the time it ran, not
    /// the cap it was given (it reported the cap).
    #[test]
    fn real_runs_report_measured_time() {
        let args = RunArgs {
            cpus: 1,
            real: true,
            duration_ms: Some(60_000),
            memory_gib: 1,
            ..RunArgs::defaults(WorkloadKind::Trunc)
        };
        let report = run_real(args.workload().unwrap().as_ref(), &args).unwrap();
        assert_eq!(report.work_units, 1 << 16, "the whole file truncated");
        assert!(report.elapsed_s > 0.0 && report.elapsed_s < 30.0, "elapsed {} s of a 60 s cap", report.elapsed_s);
    }
}
