//! Output of the results: a table (median [min-max] per op, frag's huge-free share) or
//! pretty-printed JSON.

use super::{RunResult, Spread};
use crate::output_format::OutputFormat;

fn cell(spread: &Option<Spread>) -> String {
    spread.map_or_else(|| "-".into(), |s| format!("{:.1} [{:.1}-{:.1}]", s.median, s.min, s.max))
}

/// Prints `results` as a table or as JSON.
pub(super) fn print(results: &[RunResult], format: OutputFormat) -> Result<(), String> {
    crate::output_format::print_report(format, results, || {
        print_table(results);
        Ok(())
    })
}

/// The people's form: median [min-max] per op, frag's huge-free share.
fn print_table(results: &[RunResult]) {
    if let Some(batched) = results.iter().find(|r| r.free_batch != 1) {
        println!("frees: {} blocks per call (--free-batch)", batched.free_batch);
    }
    println!(
        "{:<7} {:<21} {:<22} {:>5} {:>7}  {:<24} {:<24} {:<24}",
        "bench", "allocator", "preset", "order", "threads", "alloc ns median [min-max]", "free ns", "pair ns"
    );
    for r in results {
        println!(
            "{:<7} {:<21} {:<22} {:>5} {:>7}  {:<24} {:<24} {:<24}",
            format!("{:?}", r.bench).to_lowercase(),
            r.allocator,
            r.preset.as_deref().unwrap_or("-"),
            r.order,
            r.threads,
            cell(&r.alloc_ns),
            cell(&r.free_ns),
            cell(&r.pair_ns)
        );
        if let Some(costs) = &r.sim_costs {
            println!(
                "        per call: zone-lock wait {:.1} ns ({:.1}% contended), hold {:.1} ns; {:.2} line transfers ({:.1} ns); {:.2} memory misses",
                costs.zone_lock_wait_ns,
                costs.zone_lock_contended_pct,
                costs.zone_lock_hold_ns,
                costs.line_transfers,
                costs.line_transfer_ns,
                costs.line_misses
            );
        }
        if let Some(huge) = &r.free_huge_pct {
            let at = |round: usize| huge.get(round.saturating_sub(1)).copied().unwrap_or(0.0);
            println!(
                "        free as whole 2 MiB blocks: {:.1}% after 10 rounds, {:.1}% after 50, {:.1}% after {}",
                at(10),
                at(50),
                at(huge.len()),
                huge.len()
            );
        }
        if let Some(moves) = &r.pack_moves {
            println!(
                "        pages compaction would move to pack free memory into 2 MiB blocks: {:.0} after {} rounds",
                moves.last().copied().unwrap_or(0.0),
                moves.len()
            );
        }
    }
}
