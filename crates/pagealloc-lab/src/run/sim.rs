//! Running a workload on the many-CPU simulator.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use pagealloc::presets::Preset;
use pagealloc::{AllocatorBuilder, LastLevelCache, PageAllocator, ZoneType};
use pagealloc_sim::platform::SimHandle;
use pagealloc_sim::{engine, Engine, SimPlatform};

use super::faults::{self, CheckFn, InvariantObserver};
use super::kswapd_task::KswapdTasks;
use super::lru_pages::LruPages;
use super::sim_env::SimEnv;
use super::{RunArgs, RunReport};
use crate::workload::{CpuTask, Step, Workload};

/// Simulated seconds of idling after a run, to watch pagesets decay (the allocator's vmstat
/// pass runs once a second, vm.stat_interval).
const IDLE_TAIL_SECONDS: u64 = 30;
const SECOND_NS: u64 = 1_000_000_000;
/// Sampling period of the pages held in pagesets.
const SAMPLE_NS: u64 = 100_000;

/// Memory of a simulated machine: one NUMA node per socket, each with a Normal zone of an
/// equal share of the pages (its own zone lock), CPUs on the node of their socket.
fn machine_memory(topology: &pagealloc_sim::Topology, pages: u64, dma32: bool) -> AllocatorBuilder {
    const NORMAL_BASE_PFN: u64 = 1 << 20;
    // x86-64: DMA32 from 16 MiB up to the PCI hole at 3 GiB.
    const DMA32_PFNS: core::ops::Range<u64> = 0x1000..0xC0000;
    let sockets = topology.sockets.max(1) as u64;
    let node_pages = pages / sockets;
    let mut builder = AllocatorBuilder::new().cpu_node_map((0..topology.cpus()).map(|cpu| topology.socket(cpu) as u16));
    let mut next_normal = NORMAL_BASE_PFN;
    for node in 0..sockets {
        let mut normal_pages = node_pages;
        if dma32 && node == 0 {
            let low_pages = node_pages.min(DMA32_PFNS.end - DMA32_PFNS.start);
            builder = builder.zone(0, ZoneType::Dma32, DMA32_PFNS.start..DMA32_PFNS.start + low_pages);
            normal_pages -= low_pages;
        }
        if normal_pages > 0 {
            builder = builder.zone(node as u16, ZoneType::Normal, next_normal..next_normal + normal_pages);
            next_normal += normal_pages;
        }
    }
    builder
}

/// The simulated machine for `args`: its allocator, the handle to its clocks, the preset
/// and the platform's name.
fn build_machine(args: &RunArgs) -> Result<(PageAllocator<SimPlatform>, SimHandle, &'static Preset, String), String> {
    let topology = args.topology();
    let machine_cpus = topology.cpus() as usize;
    if args.cpus == 0 || args.cpus > machine_cpus {
        return Err(format!("--cpus {} on a {machine_cpus}-CPU topology", args.cpus));
    }
    let preset = args.preset()?;
    let llc = LastLevelCache { size_bytes: topology.llc_bytes(), shared_by_cpus: topology.cpus_per_llc() };
    let platform_name = format!("simulated {}", topology.name);
    let memory = if args.machine_memory {
        profile_memory(args, &topology)?
    } else {
        machine_memory(&topology, args.memory_gib << 18, args.dma32)
    };
    let builder = memory.policy(args.policy(preset)).last_level_cache(llc);
    let platform = SimPlatform::with_layout(topology, args.calibration(), args.metadata_layout.layout());
    platform.reserve_for_zones(&builder.zone_spans().collect::<Vec<_>>());
    let sim = platform.handle();
    let builder = match &args.trace {
        Some(path) => {
            let clock: crate::trace::writer::Clock = Box::new(move || {
                let cpu = sim.current_cpu();
                (cpu, sim.clock_ns(cpu))
            });
            builder.event_sink(Box::new(crate::trace::writer::FtraceWriter::create(path, clock)?))
        }
        None => builder,
    };
    let allocator = PageAllocator::build(builder, platform).map_err(|e| e.to_string())?;
    if let Some(path) = &args.trace {
        write_zoneinfo_beside(path, &allocator)?;
    }
    Ok((allocator, sim, preset, platform_name))
}

/// The machine profile's memory as its /proc/zoneinfo describes it (`--machine-memory`);
/// its CPUs must be the profile topology's.
fn profile_memory(args: &RunArgs, topology: &pagealloc_sim::Topology) -> Result<AllocatorBuilder, String> {
    let machine = args.sim_machine();
    let text = machine.zoneinfo.as_deref().ok_or("--machine-memory: the profile holds no /proc/zoneinfo")?;
    let zones =
        crate::trace::zoneinfo::parse_zoneinfo(text).map_err(|error| format!("the profile's zoneinfo: {error}"))?;
    let zoneinfo_cpus = crate::trace::zoneinfo::cpu_count(&zones);
    if zoneinfo_cpus != topology.cpus() as usize {
        return Err(format!("the profile's zoneinfo has {zoneinfo_cpus} CPUs, its topology {}", topology.cpus()));
    }
    crate::trace::zoneinfo::machine(&zones)
}

/// The machine of a traced run as /proc/zoneinfo, at `<trace>.zoneinfo`, for `pagelab
/// replay --zoneinfo`.
fn write_zoneinfo_beside(trace: &std::path::Path, allocator: &PageAllocator<SimPlatform>) -> Result<(), String> {
    let mut text = String::new();
    let zones = pagealloc::views::ZoneinfoZone::from_allocator(allocator);
    pagealloc::views::write_zoneinfo_zones(&mut text, &zones, pagealloc::sizing::LinuxVersion::MAINLINE)
        .map_err(|error| error.to_string())?;
    let path = format!("{}.zoneinfo", trace.display());
    std::fs::write(&path, text).map_err(|error| format!("{path}: {error}"))
}

/// Runs the tasks until `duration_ns` of simulated time, with the observer's checks when
/// faults are on; returns the time-average of pages held in pagesets (sampled every
/// SAMPLE_NS of CPU 0's time), if sampled.
fn drive(
    allocator: &PageAllocator<SimPlatform>,
    sim: SimHandle,
    tasks: &mut [Box<dyn CpuTask>],
    envs: &mut [SimEnv],
    duration_ns: u64,
    mut observer: Option<&mut InvariantObserver>,
    kswapd: &mut KswapdTasks,
) -> Option<f64> {
    let cpus: Vec<usize> = (0..envs.len()).collect();
    let (mut sum_pages, mut samples) = (0u64, 0u64);
    let mut next_sample_ns = 0u64;
    Engine::new(sim).run(&cpus, duration_ns, |cpu| {
        // This CPU's clock is the earliest: the checks due by now see every call before.
        if let Some(observer) = observer.as_deref_mut() {
            observer.maybe_check(allocator, sim, sim.clock_ns(cpu));
        }
        if cpu == 0 && sim.clock_ns(0) >= next_sample_ns {
            sum_pages += sim.observe(|| allocator.counters().pcp_pages());
            samples += 1;
            // Skip samples a long step jumped over rather than bunching them.
            next_sample_ns = (sim.clock_ns(0) / SAMPLE_NS + 1) * SAMPLE_NS;
        }
        if kswapd.runs_kswapd(cpu) {
            return kswapd.step(allocator, sim, cpu);
        }
        // The allocator's own schedule decides what is due (pageset decay, kswapd).
        allocator.background().run_due_work(cpu, sim.clock_ns(cpu));
        match tasks[cpu].step(&mut envs[cpu]) {
            // A request the allocator rejects ends this CPU's run; run_sim reports it.
            Step::Continue if envs[cpu].failures.rejected.is_none() => engine::Next::Continue,
            Step::Done if envs[cpu].failures.rejected.is_none() => kswapd.task_done(allocator, cpu),
            Step::Continue | Step::Done => engine::Next::Done,
        }
    });
    (samples > 0).then(|| sum_pages as f64 / samples as f64)
}

/// The machine idles after the run, each CPU waking once a simulated second for whatever
/// periodic work is due; what the pagesets still hold afterwards shows whether cached
/// memory returns.
fn idle_tail(allocator: &PageAllocator<SimPlatform>, sim: SimHandle, cpus: usize, elapsed_ns: u64) {
    for second in 1..=IDLE_TAIL_SECONDS {
        for cpu in 0..cpus {
            sim.set_cpu(cpu);
            sim.idle_until(cpu, elapsed_ns + second * SECOND_NS);
            allocator.background().run_due_work(cpu, sim.clock_ns(cpu));
        }
    }
}

/// What the CPUs' environments counted, summed.
struct EnvTotals {
    work_units: u64,
    calls: u64,
    recorded: BTreeMap<String, f64>,
    top_pfn_reuse: Vec<(u64, u64)>,
}

fn env_totals(envs: &[SimEnv]) -> EnvTotals {
    let (work_units, calls) = envs.iter().fold((0, 0), |(w, c), env| (w + env.work_units, c + env.calls));
    let mut reuse: HashMap<u64, u64> = HashMap::new();
    let mut recorded = BTreeMap::new();
    for env in envs {
        for (&pfn, &count) in env.reuse.iter().flatten() {
            *reuse.entry(pfn).or_default() += count;
        }
        for (&key, &value) in &env.recorded {
            *recorded.entry(key.to_string()).or_insert(0.0) += value;
        }
    }
    let mut top_pfn_reuse: Vec<(u64, u64)> = reuse.into_iter().collect();
    top_pfn_reuse.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top_pfn_reuse.truncate(5);
    EnvTotals { work_units, calls, recorded, top_pfn_reuse }
}

pub fn run_sim(workload: &dyn Workload, args: &RunArgs) -> Result<RunReport, String> {
    run_sim_checked(workload, args, faults::check_invariants)
}

/// What a run measured, before it becomes a report.
struct Measured {
    elapsed_ns: u64,
    cpu_time_ns: u64,
    stats: pagealloc_sim::SimStats,
    zone_lock: pagealloc::sync::LockStats,
    free_high: u64,
    pcp_pages_end: u64,
    pcp_pages_avg: Option<f64>,
    pcp_pages_after_idle: u64,
    host_seconds: f64,
    totals: EnvTotals,
    out_of_memory: u64,
    faults: Option<super::faults::FaultReport>,
    lru: Option<super::LruReport>,
    frag: Option<super::FragReport>,
}

/// `run_sim` with the observer's check given (tests plant a failing one). With
/// `--faults`, the platform injects faults and the observer checks every period, at the end
/// of the run and after the idle tail; the report leaves the checks' own lock acquisitions
/// out.
pub(super) fn run_sim_checked(workload: &dyn Workload, args: &RunArgs, check: CheckFn) -> Result<RunReport, String> {
    let (mut allocator, sim, preset, platform_name) = build_machine(args)?;
    let page_cache = attach_page_cache(workload, &mut allocator);
    let allocator = allocator;
    let mut observer = inject_faults(args, sim, check);
    let lru = LruPages::for_workload(workload, &allocator, args.policy(preset).lru)?;
    let mut tasks = workload.tasks(args.cpus, args.seed);
    let mut envs = SimEnv::for_cpus(
        &allocator,
        sim,
        args.cpus,
        args.top_reuse,
        observer.is_some(),
        (lru.as_ref(), page_cache.as_deref()),
    );
    let call_costs = args.call_costs();
    for env in &mut envs {
        env.call_costs = call_costs;
    }
    let host_start = Instant::now();
    let duration_ns = args.duration_ms() * 1_000_000;
    // A run with a reclaim client runs each node's kswapd as a task of its own.
    let mut kswapd = KswapdTasks::new(page_cache.is_some(), args.cpus, allocator.nodes().len());
    let pcp_pages_avg = drive(&allocator, sim, &mut tasks, &mut envs, duration_ns, observer.as_mut(), &mut kswapd);
    kswapd.release(&allocator);
    let host_seconds = host_start.elapsed().as_secs_f64();
    if let Some(error) = envs.iter().find_map(|env| env.failures.rejected) {
        return Err(format!("the workload's allocation was rejected: {error}"));
    }
    let clocks: Vec<u64> = (0..args.cpus).map(|cpu| sim.clock_ns(cpu)).collect();
    let (elapsed_ns, cpu_time_ns) = (
        clocks.iter().copied().max().unwrap_or(0),
        clocks.iter().sum::<u64>() - kswapd.idle_ns - envs.iter().map(|env| env.slept_ns).sum::<u64>(),
    );
    if let Some(observer) = observer.as_mut() {
        observer.check_now(&allocator, sim, elapsed_ns);
    }
    // Read in this order: the pageset reads take (and charge) the pagesets' locks.
    let stats = sim.stats();
    let mut zone_lock = allocator.counters().zone_lock_stats();
    zone_lock.acquisitions -= observer.as_ref().map_or(0, InvariantObserver::zone_lock_acquisitions);
    let free_high = allocator.counters().pcp_counters().free_high_events;
    let (pcp_pages_end, totals) = (allocator.counters().pcp_pages(), env_totals(&envs));
    let lru_report = lru.as_ref().map(|lru| sim.observe(|| lru.report()));
    idle_tail(&allocator, sim, args.cpus, elapsed_ns);
    let pcp_pages_after_idle = allocator.counters().pcp_pages();
    if let Some(observer) = observer.as_mut() {
        observer.check_now(&allocator, sim, elapsed_ns + IDLE_TAIL_SECONDS * SECOND_NS);
    }
    let frag = page_cache.as_ref().map(|cache| sim.observe(|| super::frag_report::measure(&allocator, cache)));
    wind_down(&allocator, sim, (&mut tasks, &mut envs), page_cache.as_deref(), lru.as_ref())?;
    let faults = observer.map(|observer| observer.report(&args.faults, sim.fault_stats().unwrap_or_default()));
    let out_of_memory = envs.iter().map(|env| env.failures.out_of_memory).sum();
    let measured = Measured {
        elapsed_ns,
        cpu_time_ns,
        stats,
        zone_lock,
        free_high,
        pcp_pages_end,
        pcp_pages_avg,
        pcp_pages_after_idle,
        host_seconds,
        totals,
        out_of_memory,
        faults,
        lru: lru_report,
        frag,
    };
    Ok(report(workload, args, preset, platform_name, &allocator, sim, measured))
}

/// The page cache, as reclaim and migration client, for a workload that asks for one.
fn attach_page_cache(
    workload: &dyn Workload,
    allocator: &mut PageAllocator<SimPlatform>,
) -> Option<std::sync::Arc<crate::page_cache::PageCache>> {
    let page_cache = workload.uses_page_cache().then(|| std::sync::Arc::new(crate::page_cache::PageCache::default()));
    if let Some(cache) = &page_cache {
        allocator.set_reclaim(cache.clone());
        allocator.set_migrate(cache.clone());
    }
    page_cache
}

/// With `--faults`: the platform injects them, and the observer that checks the
/// invariants every period is returned.
fn inject_faults(args: &RunArgs, sim: SimHandle, check: CheckFn) -> Option<InvariantObserver> {
    let fault_config = args.faults.config(args.seed, args.cpus)?;
    sim.inject_faults(fault_config);
    Some(InvariantObserver::new(args.faults.check_every_ms, check))
}

/// After the measurements: each task finishes on its CPU, the page cache and pagesets
/// empty, and the allocator and LRU lists must be consistent and empty of pages.
fn wind_down(
    allocator: &PageAllocator<SimPlatform>,
    sim: SimHandle,
    (tasks, envs): (&mut [Box<dyn CpuTask>], &mut [SimEnv<'_>]),
    page_cache: Option<&crate::page_cache::PageCache>,
    lru: Option<&LruPages<'_, SimPlatform>>,
) -> Result<(), String> {
    for (task, env) in tasks.iter_mut().zip(envs.iter_mut()) {
        sim.set_cpu(env.cpu);
        task.finish(env);
    }
    if let Some(cache) = page_cache {
        cache.free_all(allocator);
    }
    allocator.pagesets().drain_all();
    allocator.check_invariants().map_err(|v| format!("invariant violated after the run: {v}"))?;
    if let Some(lru) = lru {
        lru.check_empty()?;
    }
    Ok(())
}

fn report(
    workload: &dyn Workload,
    args: &RunArgs,
    preset: &Preset,
    platform_name: String,
    allocator: &PageAllocator<SimPlatform>,
    sim: SimHandle,
    measured: Measured,
) -> RunReport {
    let Measured { elapsed_ns, cpu_time_ns, zone_lock, totals, host_seconds, .. } = measured;
    let elapsed_s = elapsed_ns as f64 / 1e9;
    RunReport {
        workload: workload.name(),
        params: workload.params(),
        preset: args.policy_label(preset),
        cpus: args.cpus,
        platform: platform_name,
        seed: args.seed,
        unit: workload.unit(),
        work_units: totals.work_units,
        elapsed_s,
        work_per_sec: totals.work_units as f64 / elapsed_s.max(1e-12),
        allocator_calls: totals.calls,
        out_of_memory: measured.out_of_memory,
        lock_contend_pct: zone_lock.wait_ns as f64 * 100.0 / cpu_time_ns.max(1) as f64,
        zone_lock: zone_lock.into(),
        alloc_zone_pages: allocator.counters().zone_counters().alloc_zone_pages,
        free_high: measured.free_high,
        pcp_pages_end: measured.pcp_pages_end,
        sim_ops_per_sec: Some(totals.calls as f64 / host_seconds.max(1e-9)),
        host_seconds,
        recorded: totals.recorded,
        top_pfn_reuse: totals.top_pfn_reuse,
        pcp_pages_avg: measured.pcp_pages_avg.unwrap_or(measured.pcp_pages_end as f64),
        pcp_pages_after_idle: Some(measured.pcp_pages_after_idle),
        sim: Some(measured.stats),
        calibration: Some(sim.calibration()),
        metadata_layout: Some(sim.metadata_layout()),
        faults: measured.faults,
        numa_stats: args.numa_stats.map(|numa| numa.to_string()),
        // Read as an observer: the dump charges no simulated time.
        vmstat: args.vmstat.then(|| sim.observe(|| super::report::vmstat_text(allocator))),
        lru: measured.lru,
        frag: measured.frag,
    }
}

#[cfg(test)]
mod tests;
