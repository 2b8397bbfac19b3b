//! `pagelab bench B --sim`: the same benches on the simulator's CPUs, so that what grows
//! with the thread count (zone-lock waits, hand-over stacks, frame-record and counter lines
//! crossing between caches) shows at 4 to 1024 CPUs on a small host.
//!
//! The allocator is the same code; the simulated machine is `--cpus` CPUs of `--topology`
//! (or a `--machine` profile). Thread `i` runs on CPU `i`, as the real bench pins it; the
//! CPUs past the thread count idle. Each call is charged the library's own path as the
//! machine profile measured it (`pagealloc_alloc_ns`, `pagealloc_free_ns`) whatever the
//! preset, since the bench calls the library and not a kernel; the cost model adds what the
//! call's cache lines and locks cost. Iteration `k` runs with seed `k + 1`: the simulator
//! is deterministic, so iterations differ only by the seeds of the shuffles.

mod barrier;
mod bulk;
mod costs;
mod ctx;
mod frag;
mod rand;
mod repeat;
mod shared;

use serde_json::json;

use super::results::Iteration;
use super::{BenchArgs, BenchKind};
use crate::output_format::OutputFormat;
use crate::run::{run_sim, RunArgs, WorkloadKind};
use crate::workload::{CpuTask, Idle, Workload};
use bulk::Bulk;
pub use costs::SimCosts;
use ctx::Ctx;
use rand::Rand;
use repeat::Repeat;
use shared::Shared;

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
        cpus: args.sim_cpus(),
        preset: preset.to_string(),
        topology: args.topology,
        machine: args.machine.clone(),
        duration_ms: Some(86_400_000),
        memory_gib: args.memory_gib,
        seed,
        order: args.order,
        format: OutputFormat::Json,
        own_path: true,
        ..RunArgs::defaults(WorkloadKind::PageBench03)
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

#[cfg(test)]
mod tests;
