//! What every experiment shares: the machine an experiment's runs describe, one simulated
//! run of a preset on it, and the metrics read from a run.

use std::collections::BTreeMap;

use crate::run::{run_sim, LayoutKind, RunArgs, RunReport, TopologyKind, WorkloadKind};
use crate::workload::Workload;

/// The frame-metadata layout every reproduction models: the seeds ran Linux.
pub const REPRODUCTION_LAYOUT: LayoutKind = LayoutKind::Linux;

/// What an experiment's runs share.
pub(super) struct Setup {
    pub(super) workload: WorkloadKind,
    pub(super) topology: TopologyKind,
    pub(super) cpus: usize,
    pub(super) memory_gib: u64,
    pub(super) duration_ms: u64,
    /// Costs to run with instead of the seed machine's (`reproduce --machine`), on
    /// `topology`.
    pub(super) machine: Option<crate::machine::SimMachine>,
}

pub(super) fn simulate(
    setup: &Setup,
    workload: &dyn Workload,
    preset: &str,
    seed: u64,
    top_reuse: bool,
) -> Result<RunReport, String> {
    run_sim(workload, &run_args(setup, preset, seed, top_reuse))
}

/// Where a reproduction takes its costs from, for its output files: `machine` is the
/// profile `reproduce --machine` gave, if any.
pub(super) fn cost_model(machine: Option<&crate::machine::SimMachine>) -> &'static str {
    match machine {
        Some(_) => "a machine profile's hardware and kernel costs (reproduce --machine), on each experiment's topology",
        None => {
            "each run's machine: a seed machine of `pagelab machines` (cited hardware, the reference host's \
             measured kernel costs scaled by clock)"
        }
    }
}

/// The `pagelab run` arguments of one simulated run of `preset` on `setup`'s machine.
pub(super) fn run_args(setup: &Setup, preset: &str, seed: u64, top_reuse: bool) -> RunArgs {
    RunArgs {
        cpus: setup.cpus,
        preset: preset.to_string(),
        topology: setup.topology,
        machine: setup.machine.as_ref().map(|costs| {
            let topology = setup.topology.topology(setup.cpus);
            std::sync::Arc::new(crate::machine::SimMachine { topology, ..costs.clone() })
        }),
        metadata_layout: REPRODUCTION_LAYOUT,
        duration_ms: Some(setup.duration_ms),
        memory_gib: setup.memory_gib,
        seed,
        message_bytes: 0,
        format: crate::output_format::OutputFormat::Json,
        top_reuse,
        ..RunArgs::defaults(setup.workload)
    }
}

/// The simulated machine of `setup`'s runs: its seed machine, or the profile
/// `reproduce --machine` gave on its topology.
pub(super) fn machine(setup: &Setup) -> crate::machine::SimMachine {
    run_args(setup, "mainline", 0, false).sim_machine()
}

pub(super) fn cache_miss_pct(report: &RunReport) -> f64 {
    report.sim.as_ref().map_or(0.0, |s| s.page_misses as f64 * 100.0 / s.page_touches.max(1) as f64)
}

/// The 2023 seed's columns from a run (raw: normalised later).
pub(super) fn pcp_metrics(report: &RunReport, first: &str) -> BTreeMap<String, f64> {
    let mut metrics = BTreeMap::new();
    metrics.insert(first.to_string(), if first == "build_time" { report.elapsed_s } else { report.work_per_sec });
    metrics.insert("lock_contend_pct".into(), report.lock_contend_pct);
    metrics.insert("free_high".into(), report.free_high as f64);
    metrics.insert("alloc_zone".into(), report.alloc_zone_pages as f64);
    metrics.insert("cache_miss_pct".into(), cache_miss_pct(report));
    metrics.insert("pcp_pages_avg".into(), report.pcp_pages_avg);
    metrics.insert("pcp_pages_end".into(), report.pcp_pages_end as f64);
    if let Some(idle) = report.pcp_pages_after_idle {
        metrics.insert("pcp_pages_idle".into(), idle as f64);
    }
    metrics.insert("elapsed".into(), report.elapsed_s);
    metrics
}
