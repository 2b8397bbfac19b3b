//! `frag-thpcompact`: the thpcompact-like workload (mmtests thpcompact: a MADV_HUGEPAGE
//! region faulted and half punched out, a file read into the holes, then a second region
//! faulted 2 MiB at a time) on a 4-CPU machine with 4 GiB (1 GiB with --quick), one thread
//! per CPU, with and without MADV_HUGEPAGE on the second region, over the fragmentation
//! presets. Metrics: the share of the second region's faults that got a huge page, the
//! huge faults' latency (p50, p95 from a histogram of quarter-doublings; mean), the base
//! faults' mean latency, and the share of free memory obtainable as whole pageblocks at the
//! end, before and after compacting every node, with the most any packing could reach
//! (whole pageblocks in the free page count: with memory nearly full that ceiling is below
//! 98%), and again after the anonymous memory is released with the file pages still cached.
//! The goal: with compaction, at least 98% of free memory obtainable as order-9
//! (upstream proactive compaction reported 98%).

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use super::simulate::{run_args, Setup};
use crate::run::{run_sim, RunArgs, RunReport, TopologyKind, WorkloadKind};
use crate::workload::{latency_bucket_bound_ns, latency_bucket_keys, ThpCompact};

/// The presets of the fragmentation experiments.
pub(super) const FRAG_PRESETS: &[&str] =
    &["vanilla-4.20", "lowzone", "boost", "stall", "mainline", "mainline+defrag-mode", "mainline+fullest-first"];

pub(super) fn frag_thpcompact(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, bar, machine, .. } = job;
    let setup = Setup {
        workload: WorkloadKind::Thpcompact,
        topology: TopologyKind::Flat,
        cpus: 4,
        memory_gib: if quick { 1 } else { 4 },
        duration_ms: 600_000,
        machine: machine.cloned(),
    };
    let mut rows = Vec::new();
    for madvise in [false, true] {
        bar.set_message(format!("{preset}, madvise {madvise}"));
        let args = RunArgs { madvise, ..run_args(&setup, preset, seed, false) };
        let workload =
            ThpCompact::new(setup.memory_gib << 18, madvise).with_costs(&super::simulate::machine(&setup).kernel);
        let report = run_sim(&workload, &args)?;
        // The label names the parameter: the table shows one row per (preset, madvise).
        let label = if madvise { format!("{preset} madvise") } else { preset.to_string() };
        rows.push(Row { preset: label, params: serde_json::json!({ "madvise": madvise }), metrics: metrics(&report) });
    }
    Ok(rows)
}

/// The latency below which `share` of the recorded huge faults fall, in us.
fn percentile_us(report: &RunReport, share: f64) -> f64 {
    let counts: Vec<f64> =
        latency_bucket_keys().iter().map(|key| report.recorded.get(*key).copied().unwrap_or(0.0)).collect();
    let total: f64 = counts.iter().sum();
    let mut seen = 0.0;
    for (bucket, count) in counts.iter().enumerate() {
        seen += count;
        if total > 0.0 && seen >= share * total {
            return latency_bucket_bound_ns(bucket) / 1e3;
        }
    }
    0.0
}

fn metrics(report: &RunReport) -> BTreeMap<String, f64> {
    let recorded = |key: &str| report.recorded.get(key).copied().unwrap_or(0.0);
    let (huge, base) = (recorded("second_huge_faults"), recorded("second_base_faults"));
    let mut metrics = BTreeMap::new();
    metrics.insert("huge_fault_pct".to_string(), huge * 100.0 / (huge + base).max(1.0));
    metrics.insert("huge_fault_us_p50".to_string(), percentile_us(report, 0.50));
    metrics.insert("huge_fault_us_p95".to_string(), percentile_us(report, 0.95));
    metrics.insert("fault_huge_us".to_string(), recorded("huge_fault_ns_sum") / huge.max(1.0) / 1e3);
    metrics.insert("fault_base_us".to_string(), recorded("base_fault_ns_sum") / base.max(1.0) / 1e3);
    if let Some(frag) = &report.frag {
        metrics.insert("obtainable_huge_pct".to_string(), frag.free_huge_pct_compacted);
        metrics.insert("obtainable_huge_ceiling_pct".to_string(), frag.free_huge_pct_ceiling);
        metrics.insert("free_huge_pct_end".to_string(), frag.free_huge_pct_end);
        metrics.insert("exit_free_huge_pct".to_string(), frag.exit_free_huge_pct);
        metrics.insert("exit_obtainable_huge_pct".to_string(), frag.exit_free_huge_pct_compacted);
        metrics.insert("exit_obtainable_huge_ceiling_pct".to_string(), frag.exit_free_huge_pct_ceiling);
        metrics.insert("extfrag_events".to_string(), frag.extfrag_events as f64);
        metrics.insert("compact_stall".to_string(), frag.compaction.compact_stall as f64);
        metrics.insert("pgmigrate_success".to_string(), frag.compaction.pgmigrate_success as f64);
        let reclaimed = frag.page_cache.reclaimed_kswapd + frag.page_cache.reclaimed_direct;
        metrics.insert("pages_reclaimed".to_string(), reclaimed as f64);
    }
    metrics
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_makes_free_memory_whole_and_madvise_gets_huge_pages() {
        let bar = indicatif::ProgressBar::hidden();
        let rows =
            frag_thpcompact(&Job { preset: "mainline", quick: true, seed: 1, machine: None, bar: &bar }).unwrap();
        let (plain, madvise) = (&rows[0].metrics, &rows[1].metrics);
        assert!(madvise["huge_fault_pct"] > plain["huge_fault_pct"], "{plain:?} {madvise:?}");
        assert!(madvise["compact_stall"] > 0.0 && plain["compact_stall"] == 0.0);
        // Compacting at the end makes more of free memory whole pageblocks than it was.
        assert!(madvise["obtainable_huge_pct"] > madvise["free_huge_pct_end"] + 10.0, "{madvise:?}");
        for metrics in [plain, madvise] {
            assert!(metrics["obtainable_huge_pct"] <= metrics["obtainable_huge_ceiling_pct"] + 1e-9, "{metrics:?}");
            assert!(metrics["exit_obtainable_huge_pct"] <= metrics["exit_obtainable_huge_ceiling_pct"] + 1e-9);
            // Released anonymous memory leaves holes compaction fills from the file pages.
            assert!(metrics["exit_obtainable_huge_pct"] > metrics["exit_free_huge_pct"], "{metrics:?}");
        }
        // Deterministic for a seed.
        assert_eq!(
            frag_thpcompact(&Job { preset: "mainline", quick: true, seed: 1, machine: None, bar: &bar }).unwrap()[1]
                .metrics,
            *madvise
        );
    }
}
