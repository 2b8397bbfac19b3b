//! `frag-thpfioscale`: the 2018 fragmentation-avoidance series' benchmark (the
//! thpfioscale-like workload: 4 fio threads writing then reading 64 KiB files worth 150% of
//! memory, THP threads faulting 75% of memory meanwhile) over the fragmentation presets, on
//! the seed's two machines: 1 socket of 8 CPUs (4 fio threads, 1 THP thread) and 2 sockets
//! of 24 (4 fio threads, 5 THP threads), each with DMA32 below 4 GiB on node 0, with and
//! without MADV_HUGEPAGE. Memory: 4 GiB per socket (1 GiB with --quick); the seed does not
//! give its machines' memory.
//!
//! Metrics: `extfrag_events` (fallbacks below pageblock order, the seed's primary metric),
//! the same by requested type, `polluting_fallbacks`, `huge_fault_pct`, the mean simulated
//! latencies `fault_base_us` and `fault_huge_us`, and compaction and reclaim work.
//! `speedup_pct` is the change of `extfrag_events` against vanilla-4.20 at the same point.
//!
//! The fallback counts swing with small changes of timing (one seed's lowzone run made 722
//! events where the next two made 7,629 and 8,120), so every point is run with three seeds
//! (the given one and the next two; one with --quick) and each metric is their median.

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use super::run_memo::RunMemo;
use super::simulate::{run_args, Setup};
use crate::run::{run_sim, RunArgs, RunReport, TopologyKind, WorkloadKind};
use crate::workload::ThpFioScale;

pub(super) fn frag_thpfioscale(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, bar, machine, .. } = job;
    let mut rows = Vec::new();
    for (sockets, topology, cpus) in [(1u64, TopologyKind::SmallCache, 8usize), (2, TopologyKind::Server48, 48)] {
        let memory_gib = sockets * if quick { 1 } else { 4 };
        let setup = Setup {
            workload: WorkloadKind::Thpfioscale,
            topology,
            cpus,
            memory_gib,
            duration_ms: 600_000,
            machine: machine.cloned(),
        };
        for madvise in [false, true] {
            bar.set_message(format!("{preset}, {sockets} socket(s), madvise {madvise}"));
            let workload = ThpFioScale::new(memory_gib << 18, cpus / sockets as usize, madvise)
                .with_costs(&super::simulate::machine(&setup).kernel);
            // --quick is a smoke run: one seed.
            let seeds = if quick { 1 } else { SEEDS };
            let mut runs = Vec::with_capacity(seeds as usize);
            for run_seed in seed..seed + seeds {
                let args = RunArgs { madvise, dma32: true, ..run_args(&setup, preset, run_seed, false) };
                runs.push(run_metrics(&workload, &args)?);
            }
            let label = format!("{preset} {sockets}s{}", if madvise { " madvise" } else { "" });
            let params = serde_json::json!({ "sockets": sockets, "madvise": madvise, "seeds": seeds });
            rows.push(Row { preset: label, params, metrics: medians(&runs) });
        }
    }
    Ok(rows)
}

/// The metrics of one run of `workload`, each run once per process however many points
/// ask for it (the sweep's base point is this experiment's 1-socket point without madvise).
pub(super) fn run_metrics(workload: &ThpFioScale, args: &RunArgs) -> Result<BTreeMap<String, f64>, String> {
    static RUNS: RunMemo<Result<BTreeMap<String, f64>, String>> = RunMemo::new();
    RUNS.get_or_run(format!("{workload:?} {args:?}"), || Ok(metrics(&run_sim(workload, args)?)))
}

/// Seeds per point.
pub(super) const SEEDS: u64 = 3;

/// Each metric's median over the runs.
pub(super) fn medians(runs: &[BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    runs[0]
        .keys()
        .map(|key| {
            let mut values: Vec<f64> = runs.iter().filter_map(|run| run.get(key).copied()).collect();
            (key.clone(), crate::stats::Spread::of(&mut values).map_or(0.0, |spread| spread.median))
        })
        .collect()
}

pub(super) fn metrics(report: &RunReport) -> BTreeMap<String, f64> {
    let recorded = |key: &str| report.recorded.get(key).copied().unwrap_or(0.0);
    let (huge, base) = (recorded("huge_faults"), recorded("base_faults"));
    let mut metrics = BTreeMap::new();
    metrics.insert("huge_fault_pct".to_string(), huge * 100.0 / (huge + base).max(1.0));
    metrics.insert("fault_huge_us".to_string(), recorded("huge_fault_ns_sum") / huge.max(1.0) / 1e3);
    metrics.insert("fault_base_us".to_string(), recorded("base_fault_ns_sum") / base.max(1.0) / 1e3);
    if let Some(frag) = &report.frag {
        metrics.insert("extfrag_events".to_string(), frag.extfrag_events as f64);
        for (name, count) in ["unmovable", "movable", "reclaimable"].iter().zip(frag.extfrag_by_start) {
            metrics.insert(format!("extfrag_by_{name}"), count as f64);
        }
        metrics.insert("polluting_fallbacks".to_string(), frag.polluting_fallbacks as f64);
        metrics.insert("watermark_boosts".to_string(), frag.watermark_boosts as f64);
        metrics.insert("compact_stall".to_string(), frag.compaction.compact_stall as f64);
        metrics.insert("compact_daemon_wake".to_string(), frag.compaction.compact_daemon_wake as f64);
        metrics.insert("pgmigrate_success".to_string(), frag.compaction.pgmigrate_success as f64);
        let reclaimed = frag.page_cache.reclaimed_kswapd + frag.page_cache.reclaimed_direct;
        metrics.insert("pages_reclaimed".to_string(), reclaimed as f64);
    }
    metrics
}
