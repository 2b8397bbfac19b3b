//! The summaries: one block per preset (operations by kind, allocations by order and
//! request, the pressure reached, checks, violations) and a last line over all presets that
//! scripts and tests can read.

use pagealloc::types::NR_ORDERS;

use super::session::PresetRun;
use super::tally::{Op, REQUESTS};

/// "name count, name count, ..." of matching names and counts.
fn listed<'a>(names: impl IntoIterator<Item = &'a str>, counts: &[u64], separator: &str) -> String {
    names
        .into_iter()
        .zip(counts)
        .map(|(name, count)| format!("{name}{separator}{count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary of one preset's run.
pub fn preset_summary(run: &PresetRun) -> String {
    let tally = &run.tally;
    let checks = &run.checks;
    let orders: Vec<String> = (0..NR_ORDERS).map(|order| order.to_string()).collect();
    let mean_check_ms = checks.total_ns as f64 / checks.checks.max(1) as f64 / 1e6;
    let peak_held_pct = checks.peak_held_pages as f64 * 100.0 / run.managed_pages.max(1) as f64;
    let mut text = format!(
        "preset {}: {:.1} s, {} workers on {} CPUs, {} pages managed ({} MiB)\n",
        run.preset, run.elapsed_s, run.workers, run.cpus, run.managed_pages, run.memory_mib
    );
    text += &format!(
        "  operations  {} ({:.0}/s): {}\n",
        tally.total_ops(),
        tally.total_ops() as f64 / run.elapsed_s.max(1e-9),
        listed(Op::NAMES, &tally.ops, " ")
    );
    text += &format!(
        "  pressure    {} allocations out of memory, {} bulk calls short, {} hog cycles, peak {:.1}% of memory held at a check\n",
        tally.out_of_memory, tally.bulk_short, tally.hog_cycles, peak_held_pct
    );
    text += &format!(
        "  blocks      by order: {}\n",
        listed(orders.iter().map(String::as_str), &tally.allocs_by_order, ":")
    );
    text += &format!(
        "              by request: {}\n",
        listed(REQUESTS.iter().map(|(name, _)| *name), &tally.allocs_by_request, ":")
    );
    text += &format!(
        "  background  {} vmstat passes, {} kswapd passes, {} kswapd rounds, {} pages drained from pagesets\n",
        tally.vmstat_passes, tally.kswapd_passes, tally.kswapd_rounds, tally.drained_pages
    );
    text += &format!(
        "  reclaim     {} pages read into the page cache; reclaim dropped {} in kswapd passes and {} in {} direct reclaims\n",
        tally.cache_pages_read, run.reclaimed_pages.0, run.reclaimed_pages.1, run.allocstalls
    );
    text += &format!(
        "  ranges      {} pages taken offline, {} pages in contiguous runs, {} pages added past a zone, {} range operations refused\n",
        tally.offlined_pages, tally.contig_pages, tally.grown_pages, tally.range_refusals
    );
    let compaction = &run.compaction;
    text += &format!(
        "  compaction  {} pages moved in the cache ({} moves refused); {} direct compactions ({} succeeded), {} kcompactd wake-ups, {} proactive runs; {} client panics ({} caught by workers)\n",
        run.migrated_pages.0,
        run.migrated_pages.1,
        compaction.compact_stall,
        compaction.compact_success,
        compaction.compact_daemon_wake,
        compaction.compact_proactive_runs,
        run.client_panics,
        tally.client_panics_caught
    );
    text += &format!(
        "  checks      {} (mean {mean_check_ms:.1} ms, max {:.1} ms; {} CPUs offlined at quiescent points)\n",
        checks.checks,
        checks.max_ns as f64 / 1e6,
        checks.offlined_cpus
    );
    text += &format!("  violations  {}\n", run.violations);
    for violation in &run.first_violations {
        text += &format!("    {violation}\n");
    }
    if run.violations > run.first_violations.len() as u64 {
        text += &format!("    ... and {} more\n", run.violations - run.first_violations.len() as u64);
    }
    text
}

/// One preset's run as JSON: the summary's numbers, by name.
pub fn preset_json(run: &PresetRun) -> serde_json::Value {
    let tally = &run.tally;
    let named = |names: &mut dyn Iterator<Item = &str>, counts: &[u64]| -> serde_json::Map<String, serde_json::Value> {
        names.zip(counts).map(|(name, &count)| (name.to_string(), count.into())).collect()
    };
    let compaction = &run.compaction;
    serde_json::json!({
        "preset": run.preset,
        "workers": run.workers,
        "cpus": run.cpus,
        "managed_pages": run.managed_pages,
        "memory_mib": run.memory_mib,
        "elapsed_s": run.elapsed_s,
        "ops": named(&mut Op::NAMES.into_iter(), &tally.ops),
        "allocs_by_order": tally.allocs_by_order,
        "allocs_by_request": named(&mut REQUESTS.iter().map(|(name, _)| *name), &tally.allocs_by_request),
        "pages_allocated": tally.pages_allocated,
        "out_of_memory": tally.out_of_memory,
        "bulk_short": tally.bulk_short,
        "hog_cycles": tally.hog_cycles,
        "vmstat_passes": tally.vmstat_passes,
        "kswapd_passes": tally.kswapd_passes,
        "kswapd_rounds": tally.kswapd_rounds,
        "drained_pages": tally.drained_pages,
        "cache_pages_read": tally.cache_pages_read,
        "reclaimed_kswapd": run.reclaimed_pages.0,
        "reclaimed_direct": run.reclaimed_pages.1,
        "allocstalls": run.allocstalls,
        "offlined_pages": tally.offlined_pages,
        "contig_pages": tally.contig_pages,
        "range_refusals": tally.range_refusals,
        "grown_pages": tally.grown_pages,
        "migrated_pages": run.migrated_pages.0,
        "refused_moves": run.migrated_pages.1,
        "client_panics": run.client_panics,
        "client_panics_caught": tally.client_panics_caught,
        "compact_stall": compaction.compact_stall,
        "compact_success": compaction.compact_success,
        "compact_daemon_wake": compaction.compact_daemon_wake,
        "compact_proactive_runs": compaction.compact_proactive_runs,
        "checks": run.checks.checks,
        "check_max_ms": run.checks.max_ns as f64 / 1e6,
        "peak_held_pages": run.checks.peak_held_pages,
        "violations": run.violations,
        "first_violations": run.first_violations,
    })
}

/// The last line: totals over every preset.
pub fn total_line(runs: &[PresetRun]) -> String {
    let ops: u64 = runs.iter().map(|run| run.tally.total_ops()).sum();
    let checks: u64 = runs.iter().map(|run| run.checks.checks).sum();
    let violations: u64 = runs.iter().map(|run| run.violations).sum();
    format!("torture: {} presets, {ops} operations, {checks} checks, {violations} violations\n", runs.len())
}
