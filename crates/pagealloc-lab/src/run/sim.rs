//! Running a workload on the many-CPU simulator.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use pagealloc::presets::Preset;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, LastLevelCache, PageAllocator, ZoneType};
use pagealloc_sim::platform::SimHandle;
use pagealloc_sim::{engine, Calibration, Engine, SimPlatform};

use super::{AllocFailures, RunArgs, RunReport};
use crate::workload::{CpuTask, Env, Step, Workload};

/// Simulated seconds of idling after a run, to watch pagesets decay (the allocator's vmstat
/// pass runs once a second, vm.stat_interval).
const IDLE_TAIL_SECONDS: u64 = 30;
const SECOND_NS: u64 = 1_000_000_000;
/// Sampling period of the pages held in pagesets.
const SAMPLE_NS: u64 = 100_000;

struct SimEnv<'a> {
    allocator: &'a PageAllocator<SimPlatform>,
    sim: SimHandle,
    cpu: usize,
    work_units: u64,
    calls: u64,
    recorded: BTreeMap<&'static str, f64>,
    /// Allocations per page frame, when tracked.
    reuse: Option<HashMap<u64, u64>>,
    failures: AllocFailures,
}

impl Env for SimEnv<'_> {
    fn alloc(&mut self, order: u8, request: AllocRequest) -> Option<Block> {
        self.calls += 1;
        let block = self.failures.note(self.allocator.alloc_pages(order, request))?;
        if let Some(reuse) = self.reuse.as_mut() {
            *reuse.entry(block.pfn()).or_default() += 1;
        }
        Some(block)
    }
    fn free(&mut self, block: Block) {
        self.calls += 1;
        self.allocator.free_pages(block).expect("workloads free what they allocated");
    }
    fn touch(&mut self, pfn: u64, pages: u64) {
        use pagealloc::platform::Platform;
        self.allocator.platform().touch_pages(pfn, pages);
    }
    fn compute(&mut self, ns: u64) {
        self.sim.advance(ns);
    }
    fn lock(&mut self, id: u16) {
        self.allocator.platform().workload_lock(id);
    }
    fn unlock(&mut self, id: u16) {
        self.allocator.platform().workload_unlock(id);
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
}

/// Memory of a simulated machine: one NUMA node per socket, each with a Normal zone of an
/// equal share of the pages (its own zone lock), CPUs on the node of their socket.
fn machine_memory(topology: &pagealloc_sim::Topology, pages: u64) -> AllocatorBuilder {
    const NORMAL_BASE_PFN: u64 = 1 << 20;
    let sockets = topology.sockets.max(1) as u64;
    let node_pages = pages / sockets;
    let mut builder =
        AllocatorBuilder::new().cpu_node_map((0..topology.cpus()).map(|cpu| topology.socket(cpu) as u16).collect());
    for node in 0..sockets {
        let start = NORMAL_BASE_PFN + node * node_pages;
        builder = builder.zone(node as u16, ZoneType::Normal, start..start + node_pages);
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
    let preset = pagealloc::presets::find(&args.preset).ok_or_else(|| format!("unknown preset '{}'", args.preset))?;
    let llc = LastLevelCache { size_bytes: topology.llc_bytes_per_socket, shared_by_cpus: topology.cpus_per_llc() };
    let platform_name = format!("simulated {}", topology.name);
    let builder = machine_memory(&topology, args.memory_gib << 18).policy(preset.policy).last_level_cache(llc);
    let platform = SimPlatform::with_layout(topology, Calibration::XEON, args.metadata_layout.layout());
    let sim = platform.handle();
    let allocator = PageAllocator::build(builder, platform).map_err(|e| e.to_string())?;
    Ok((allocator, sim, preset, platform_name))
}

/// Runs the tasks until `duration_ns` of simulated time; returns the time-average of pages
/// held in pagesets (sampled every SAMPLE_NS of CPU 0's time), if sampled.
fn drive(
    allocator: &PageAllocator<SimPlatform>,
    sim: SimHandle,
    tasks: &mut [Box<dyn CpuTask>],
    envs: &mut [SimEnv],
    duration_ns: u64,
) -> Option<f64> {
    let cpus: Vec<usize> = (0..envs.len()).collect();
    let (mut sum_pages, mut samples) = (0u64, 0u64);
    let mut next_sample_ns = 0u64;
    Engine::new(sim).run(&cpus, duration_ns, |cpu| {
        if cpu == 0 && sim.clock_ns(0) >= next_sample_ns {
            sum_pages += sim.observe(|| allocator.pcp_pages());
            samples += 1;
            // Skip samples a long step jumped over rather than bunching them.
            next_sample_ns = (sim.clock_ns(0) / SAMPLE_NS + 1) * SAMPLE_NS;
        }
        // The allocator's own schedule decides what is due (pageset decay, kswapd).
        allocator.run_due_work(cpu, sim.clock_ns(cpu));
        match tasks[cpu].step(&mut envs[cpu]) {
            // A request the allocator rejects ends this CPU's run; run_sim reports it.
            Step::Continue if envs[cpu].failures.rejected.is_none() => engine::Next::Continue,
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
            allocator.run_due_work(cpu, sim.clock_ns(cpu));
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
    let (allocator, sim, preset, platform_name) = build_machine(args)?;
    let mut tasks = workload.tasks(args.cpus, args.seed);
    let mut envs: Vec<SimEnv> = (0..args.cpus)
        .map(|cpu| SimEnv {
            allocator: &allocator,
            sim,
            cpu,
            work_units: 0,
            calls: 0,
            recorded: BTreeMap::new(),
            reuse: args.top_reuse.then(HashMap::new),
            failures: AllocFailures::default(),
        })
        .collect();
    let host_start = Instant::now();
    let pcp_pages_avg = drive(&allocator, sim, &mut tasks, &mut envs, args.duration_ms() * 1_000_000);
    let host_seconds = host_start.elapsed().as_secs_f64();
    if let Some(error) = envs.iter().find_map(|env| env.failures.rejected) {
        return Err(format!("the workload's allocation was rejected: {error}"));
    }
    let clocks: Vec<u64> = (0..args.cpus).map(|cpu| sim.clock_ns(cpu)).collect();
    let (elapsed_ns, cpu_time_ns) = (clocks.iter().copied().max().unwrap_or(0), clocks.iter().sum::<u64>());
    let stats = sim.stats();
    let zone_lock = allocator.zone_lock_stats();
    let counters = allocator.pcp_counters();
    let pcp_pages_end = allocator.pcp_pages();
    let totals = env_totals(&envs);
    idle_tail(&allocator, sim, args.cpus, elapsed_ns);
    let pcp_pages_after_idle = allocator.pcp_pages();
    for (task, env) in tasks.iter_mut().zip(envs.iter_mut()) {
        sim.set_cpu(env.cpu);
        task.finish(env);
    }
    allocator.drain_all();
    allocator.check_invariants().map_err(|v| format!("invariant violated after the run: {v}"))?;

    let elapsed_s = elapsed_ns as f64 / 1e9;
    Ok(RunReport {
        workload: workload.name(),
        params: workload.params(),
        preset: preset.name.to_string(),
        cpus: args.cpus,
        platform: platform_name,
        seed: args.seed,
        unit: workload.unit(),
        work_units: totals.work_units,
        elapsed_s,
        work_per_sec: totals.work_units as f64 / elapsed_s.max(1e-12),
        allocator_calls: totals.calls,
        out_of_memory: envs.iter().map(|env| env.failures.out_of_memory).sum(),
        lock_contend_pct: zone_lock.wait_ns as f64 * 100.0 / cpu_time_ns.max(1) as f64,
        zone_lock: zone_lock.into(),
        alloc_zone_pages: allocator.zone_counters().alloc_zone_pages,
        free_high: counters.free_high_events,
        pcp_pages_end,
        sim_ops_per_sec: Some(totals.calls as f64 / host_seconds.max(1e-9)),
        host_seconds,
        recorded: totals.recorded,
        top_pfn_reuse: totals.top_pfn_reuse,
        pcp_pages_avg: pcp_pages_avg.unwrap_or(pcp_pages_end as f64),
        pcp_pages_after_idle: Some(pcp_pages_after_idle),
        sim: Some(stats),
        calibration: Some(sim.calibration()),
        metadata_layout: Some(sim.metadata_layout()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{LayoutKind, TopologyKind, WorkloadKind};

    fn args(workload: WorkloadKind, cpus: usize, duration_ms: u64) -> RunArgs {
        RunArgs {
            workload,
            cpus,
            preset: "mainline".into(),
            real: false,
            topology: TopologyKind::SmallCache,
            metadata_layout: LayoutKind::Pagealloc,
            duration_ms: Some(duration_ms),
            memory_gib: 1,
            seed: 7,
            order: 0,
            mode: crate::workload::FaultMode::Thread,
            message_bytes: 16_384,
            role_swap_us: None,
            co_located: false,
            format: crate::run::RunFormat::Table,
            top_reuse: false,
        }
    }

    #[test]
    fn every_workload_runs_on_the_simulator_and_repeats_exactly() {
        for (workload, duration_ms) in [
            (WorkloadKind::PageBench03, 1),
            (WorkloadKind::PageFault1, 5),
            (WorkloadKind::NetperfPairs, 2),
            (WorkloadKind::UnixPairs, 2),
            (WorkloadKind::Trunc, 10_000),
            (WorkloadKind::Kbuild, 40),
        ] {
            let run = || {
                let args = args(workload, 4, duration_ms);
                run_sim(args.workload().unwrap().as_ref(), &args).unwrap()
            };
            let (first, second) = (run(), run());
            assert!(first.work_units > 0, "{workload:?} did no work");
            assert_eq!(first.work_units, second.work_units, "{workload:?}");
            assert_eq!(first.sim, second.sim, "{workload:?}");
            assert_eq!(first.elapsed_s, second.elapsed_s, "{workload:?}");
        }
    }

    /// Patch 9's explanation of patch 7's regression, as a regression test of the model: once
    /// a pair's tasks trade CPUs, a CPU whose high grew while it sent keeps receiving into a
    /// large pageset under patch 7 (no free_high until it fills), while patch 9's free_count
    /// detects the consecutive high-order frees at once. Pinned, the two behave alike.
    #[test]
    fn role_swaps_grow_patch7_pagesets_but_not_patch9s() {
        let pcp_pages_avg = |preset: &str, role_swap_us: Option<u64>| {
            let args = RunArgs {
                preset: preset.into(),
                message_bytes: 65_536,
                role_swap_us,
                co_located: false,
                ..args(WorkloadKind::UnixPairs, 4, 20)
            };
            run_sim(args.workload().unwrap().as_ref(), &args).unwrap().pcp_pages_avg
        };
        let (patch7, patch9) = (pcp_pages_avg("patch7", Some(2_000)), pcp_pages_avg("patch9", Some(2_000)));
        assert!(patch7 > 4.0 * patch9, "patch7 {patch7:.0} pages vs patch9 {patch9:.0}");
        let (pinned7, pinned9) = (pcp_pages_avg("patch7", None), pcp_pages_avg("patch9", None));
        assert!(pinned7 < 2.0 * pinned9, "pinned: patch7 {pinned7:.0} pages vs patch9 {pinned9:.0}");
    }

    /// Co-located, a pair's frees refill the pageset its next writes allocate from: after the
    /// first refills the buddy is left alone, whatever the preset; split over two CPUs, every
    /// block the sender allocates comes from the buddy.
    #[test]
    fn co_located_pairs_allocate_from_their_own_frees() {
        let run = |preset: &str, co_located: bool| {
            let args = RunArgs {
                preset: preset.into(),
                message_bytes: 65_536,
                co_located,
                ..args(WorkloadKind::UnixPairs, if co_located { 2 } else { 4 }, 20)
            };
            run_sim(args.workload().unwrap().as_ref(), &args).unwrap()
        };
        for preset in ["base", "patch9"] {
            let (split, together) = (run(preset, false), run(preset, true));
            // 16 pages a message (blocks of order 3, 2, 1, 0).
            let split_per_message = split.alloc_zone_pages as f64 / split.work_units as f64;
            let together_per_message = together.alloc_zone_pages as f64 / together.work_units as f64;
            assert!(split_per_message > 14.0, "{preset} split: {split_per_message:.2} pages a message");
            assert!(together_per_message < 0.5, "{preset} co-located: {together_per_message:.2} pages a message");
            assert_eq!(together.free_high, 0, "{preset}: no pageset outgrows its high");
        }
    }

    #[test]
    fn trunc_records_its_truncate_time() {
        let args = args(WorkloadKind::Trunc, 2, 10_000);
        let report = run_sim(args.workload().unwrap().as_ref(), &args).unwrap();
        assert_eq!(report.work_units, 1 << 16);
        assert!(report.recorded["truncate_s"] > 0.0);
    }
}
