//! `llfree-frag`: LLFree's fragmentation benchmark (`pagelab bench frag`, mirroring its
//! eval/src/bin/frag.rs) over the fragmentation presets, on real threads: 4 GiB, 2 threads,
//! 100 rounds of churn (LLFree's parameters here). Per round, the share of memory free as
//! whole 2 MiB blocks (the list `free_huge_pct` in the JSON) and the pages compaction would
//! have to move to pack free memory into whole blocks. The first preset's run also measures
//! `buddy_system_allocator` (row `buddy-system`). LLFree's own run on this machine with the
//! same parameters (docs/benchmarks.md): 0% after 10 rounds, 7.9% after 50, 48.4%
//! after 100. Real threads on a shared machine: results vary from run to run (medians of 3
//! iterations; 1 with --quick, on 1 GiB).

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use crate::bench::{run_benchmarks, AllocatorKind, BenchArgs, BenchKind, RunResult};
use crate::output_format::OutputFormat;

/// LLFree's frag parameters on this machine.
/// The presets compared, the first also beside `buddy_system_allocator`.
pub(super) const LLFREE_FRAG_PRESETS: &[&str] =
    &["mainline", "vanilla-4.20", "mainline+defrag-mode", "mainline+fullest-first", "pagealloc"];

const MEMORY_GIB: u64 = 4;
const THREADS: usize = 2;
const ROUNDS: usize = 100;

pub(super) fn llfree_frag(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, bar, .. } = job;
    let mut allocators = vec![AllocatorKind::Pagealloc];
    if preset == LLFREE_FRAG_PRESETS[0] {
        allocators.push(AllocatorKind::BuddySystem);
    }
    bar.set_message(format!("{preset}: bench frag"));
    let args = BenchArgs {
        bench: BenchKind::Frag,
        allocator: allocators,
        threads_max: Some(THREADS),
        threads: vec![THREADS],
        order: 0,
        memory_gib: if quick { 1 } else { MEMORY_GIB },
        iterations: if quick { 1 } else { 3 },
        presets: vec![preset.to_string()],
        format: OutputFormat::Json,
        frag_rounds: ROUNDS,
        free_batch: 1,
        sim: false,
        cpus: None,
        topology: crate::run::TopologyKind::Flat,
        machine: None,
    };
    let results = run_benchmarks(&args)?;
    Ok(results.iter().map(|result| row(preset, &args, result)).collect())
}

fn row(preset: &str, args: &BenchArgs, result: &RunResult) -> Row {
    let huge = result.free_huge_pct.clone().unwrap_or_default();
    let moves = result.pack_moves.clone().unwrap_or_default();
    let at = |series: &[f64], round: usize| series.get(round - 1).copied().unwrap_or(0.0);
    let mut metrics = BTreeMap::new();
    for round in [10, 50, ROUNDS] {
        metrics.insert(format!("free_huge_pct_{round}"), at(&huge, round));
    }
    metrics.insert("pack_moves_pages".to_string(), at(&moves, ROUNDS));
    if let Some(alloc) = result.alloc_ns {
        metrics.insert("alloc_ns".to_string(), alloc.median);
    }
    if let Some(free) = result.free_ns {
        metrics.insert("free_ns".to_string(), free.median);
    }
    let label = if result.allocator == "pagealloc" { preset.to_string() } else { result.allocator.to_string() };
    Row {
        preset: label,
        params: serde_json::json!({
            "memory_gib": args.memory_gib,
            "threads": THREADS,
            "rounds": ROUNDS,
            "iterations": args.iterations,
            "free_huge_pct": huge,
            "pack_moves_pages": moves,
        }),
        metrics,
    }
}
