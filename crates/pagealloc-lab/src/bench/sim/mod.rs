//! `pagelab bench B --sim`: the same benches on the simulator's CPUs, so that what grows
//! with the thread count (zone-lock waits, hand-over stacks, frame-record and counter lines
//! crossing between caches) shows at 4 to 256 CPUs on a small host.
//!
//! The allocator is the same code; the simulated machine is `--cpus` CPUs of `--topology`
//! (or a `--machine` profile). Thread `i` runs on CPU `i`, as the real bench pins it; the
//! CPUs past the thread count idle. Each call is charged the library's own path as the
//! machine profile measured it (`pagealloc_alloc_ns`, `pagealloc_free_ns`) whatever the
//! preset, since the bench calls the library and not a kernel; the cost model adds what the
//! call's cache lines and locks cost. Iteration `k` runs with seed `k + 1`: the simulator
//! is deterministic, so iterations differ only by the seeds of the shuffles.

mod barrier;
mod frag;
mod shared;
mod tasks;

use serde::Serialize;
use serde_json::json;

use super::results::Iteration;
use super::{BenchArgs, BenchKind};
use crate::run::{run_sim, LayoutKind, RunArgs, RunFormat, WorkloadKind};
use crate::workload::{CpuTask, Idle, Workload};
use shared::Shared;
use tasks::{Bulk, Ctx, Rand, Repeat};

/// One simulated iteration of a bench on `threads` of the machine's CPUs.
struct SimBench {
    kind: BenchKind,
    threads: usize,
    blocks: usize,
    order: u8,
    frag_rounds: usize,
    shared: Shared,
}

impl Workload for SimBench {
    fn name(&self) -> &'static str {
        "pagelab bench"
    }
    fn unit(&self) -> &'static str {
        "bench threads done"
    }
    fn params(&self) -> serde_json::Value {
        json!({ "bench": self.kind, "threads": self.threads, "blocks": self.blocks, "order": self.order })
    }
    fn tasks(&self, cpus: usize, seed: u64) -> Vec<Box<dyn CpuTask>> {
        assert!(self.threads <= cpus, "{} bench threads on {cpus} CPUs", self.threads);
        (0..cpus)
            .map(|cpu| {
                if cpu >= self.threads {
                    return Box::new(Idle) as Box<dyn CpuTask>;
                }
                let ctx = Ctx::new(cpu, self.order, self.blocks, self.shared.clone());
                match self.kind {
                    BenchKind::Bulk => Box::new(Bulk::new(ctx)) as Box<dyn CpuTask>,
                    BenchKind::Repeat => Box::new(Repeat::new(ctx)),
                    BenchKind::Rand => Box::new(Rand::new(ctx, seed)),
                    BenchKind::Frag => Box::new(frag::Frag::new(ctx, self.frag_rounds, seed)),
                }
            })
            .collect()
    }
}

/// The `pagelab run` arguments of one simulated iteration: the bench's machine, memory and
/// preset, run to the end of its work.
fn run_args(args: &BenchArgs, preset: &str, seed: u64) -> RunArgs {
    RunArgs {
        workload: WorkloadKind::PageBench03,
        cpus: args.sim_cpus(),
        preset: preset.to_string(),
        real: false,
        topology: args.topology,
        machine: args.machine.clone(),
        metadata_layout: LayoutKind::Pagealloc,
        duration_ms: Some(86_400_000),
        memory_gib: args.memory_gib,
        seed,
        order: args.order,
        mode: crate::workload::FaultMode::Process,
        message_bytes: 0,
        role_swap_us: None,
        co_located: false,
        format: RunFormat::Json,
        top_reuse: false,
        faults: crate::run::FaultArgs::default(),
        numa_stats: None,
        vmstat: false,
        lru_batch: None,
        lru: false,
        madvise: false,
        dma32: false,
        trace: None,
        own_path: true,
    }
}

/// The simulated machine's CPUs, checked against the thread counts.
pub(super) fn machine_cpus(args: &BenchArgs, most_threads: usize) -> Result<usize, String> {
    let cpus = args.sim_cpus();
    let topology_cpus = run_args(args, "mainline", 1).topology().cpus() as usize;
    if cpus == 0 || cpus > topology_cpus {
        return Err(format!("--cpus {cpus} on a {topology_cpus}-CPU topology"));
    }
    if most_threads > cpus {
        return Err(format!("-x {most_threads}: the simulated machine has {cpus} CPUs (--cpus)"));
    }
    Ok(cpus)
}

/// One iteration of `args.bench` on `threads` simulated CPUs.
pub(super) fn iteration(
    args: &BenchArgs,
    preset: &str,
    threads: usize,
    blocks: usize,
    iteration: usize,
) -> Result<Iteration, String> {
    let shared = Shared::new(threads);
    let (order, frag_rounds) = (args.order, args.frag_rounds);
    let bench = SimBench { kind: args.bench, threads, blocks, order, frag_rounds, shared: shared.clone() };
    let run = run_args(args, preset, iteration as u64 + 1);
    let report = run_sim(&bench, &run)?;
    let pool = shared.pool();
    let mean = |pick: fn(&shared::ThreadTimes) -> Option<f64>| {
        let values: Vec<f64> = pool.times.iter().filter_map(pick).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    Ok(Iteration {
        alloc_ns: mean(|times| times.alloc_ns),
        free_ns: mean(|times| times.free_ns),
        pair_ns: mean(|times| times.pair_ns),
        free_huge_pct: pool.free_huge_pct.clone(),
        pack_moves: pool.pack_moves.clone(),
        sim_costs: Some(SimCosts::of(&report)),
    })
}

/// Where a simulated run's time went, per allocator call of the whole run (its untimed
/// set-up calls too): what grows with the thread count shows here.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SimCosts {
    /// Zone-lock wait, and the share of acquisitions that found the lock held.
    pub zone_lock_wait_ns: f64,
    pub zone_lock_contended_pct: f64,
    /// Time inside zone locks.
    pub zone_lock_hold_ns: f64,
    /// Shared lines (frame records, free-list heads, counters, stacks) another CPU held,
    /// and their cost.
    pub line_transfers: f64,
    pub line_transfer_ns: f64,
    /// Shared lines served by memory.
    pub line_misses: f64,
}

impl SimCosts {
    fn of(report: &crate::run::RunReport) -> SimCosts {
        let calls = report.allocator_calls.max(1) as f64;
        let stats = report.sim.clone().unwrap_or_default();
        let lock = &report.zone_lock;
        SimCosts {
            zone_lock_wait_ns: lock.wait_ns as f64 / calls,
            zone_lock_contended_pct: lock.contended as f64 * 100.0 / lock.acquisitions.max(1) as f64,
            zone_lock_hold_ns: stats.zone_lock.hold_ns as f64 / calls,
            line_transfers: stats.line_transfers as f64 / calls,
            line_transfer_ns: stats.line_transfer_ns as f64 / calls,
            line_misses: stats.line_misses as f64 / calls,
        }
    }

    /// The mean of `costs`, field by field.
    pub(super) fn mean(costs: &[SimCosts]) -> Option<SimCosts> {
        let n = costs.len() as f64;
        let sum = |pick: fn(&SimCosts) -> f64| costs.iter().map(pick).sum::<f64>() / n;
        (!costs.is_empty()).then(|| SimCosts {
            zone_lock_wait_ns: sum(|c| c.zone_lock_wait_ns),
            zone_lock_contended_pct: sum(|c| c.zone_lock_contended_pct),
            zone_lock_hold_ns: sum(|c| c.zone_lock_hold_ns),
            line_transfers: sum(|c| c.line_transfers),
            line_transfer_ns: sum(|c| c.line_transfer_ns),
            line_misses: sum(|c| c.line_misses),
        })
    }
}

#[cfg(test)]
mod tests;
