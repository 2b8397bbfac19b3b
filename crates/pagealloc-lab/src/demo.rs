//! `pagelab demo`: a newcomer's first look. Builds a PC-like machine, runs a deterministic
//! mixed workload (user pages, kernel objects, slab, atomic high-order requests, a reclaim
//! of half the movable memory, then a burst of unmovable requests that must fall back), and
//! prints the result in the kernel's formats with the invariant checker's verdict.

use std::fmt::Write;

use clap::Args;
use pagealloc::platform::StdPlatform;
use pagealloc::views::{
    write_buddyinfo, write_extfrag_index, write_pagetypeinfo, write_unusable_index, write_zoneinfo,
};
use pagealloc::{AllocRequest, AllocatorBuilder, Block, ExtfragStats, MigrateType, PageAllocator, PageCensus};

use crate::rng::SplitMix64;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// RAM of the demo machine in MiB (PC layout: DMA, DMA32 below 3 GiB, Normal above 4 GiB).
    #[arg(long, default_value_t = 4096)]
    pub memory_mib: u64,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also print /proc/zoneinfo of the live allocator.
    #[arg(long)]
    pub zoneinfo: bool,
    /// The report in the kernel's text formats, or its numbers as JSON or `key,value` CSV
    /// rows (the summary, and per zone the free blocks by order and type and the
    /// pageblocks by type, as /proc/pagetypeinfo counts them).
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::output_format::OutputFormat,
}

/// The request kinds of the workload and their weights (out of 100).
const MIX: [(AllocRequest, u8, u32); 5] = [
    (AllocRequest::USER_MOVABLE, 0, 60),
    (AllocRequest::KERNEL, 0, 20),
    (AllocRequest::RECLAIMABLE, 0, 12),
    (AllocRequest::KERNEL, 3, 6),
    (AllocRequest::ATOMIC, 2, 2),
];

fn pick(rng: &mut SplitMix64) -> (AllocRequest, u8) {
    let mut roll = rng.below(100) as u32;
    for (request, order, weight) in MIX {
        if roll < weight {
            return (request, order);
        }
        roll -= weight;
    }
    unreachable!("weights add up to 100")
}

/// The demo's allocator.
type Allocator = PageAllocator<StdPlatform>;

/// Each block held with the mobility it was requested with.
type Held = Vec<(Block, MigrateType)>;

/// What the workload did, as the report's header states it.
struct Summary {
    managed: u64,
    /// Requests that failed, over all phases.
    failures: u64,
    /// Fallback counters after the fill, and at the end.
    after_fill: ExtfragStats,
    totals: ExtfragStats,
    census: PageCensus,
}

pub fn run(args: &DemoArgs) -> Result<(), String> {
    if args.memory_mib < 16 {
        return Err("--memory-mib must be at least 16".into());
    }
    let allocator = PageAllocator::build(AllocatorBuilder::pc_layout(args.memory_mib), StdPlatform::new())
        .map_err(|e| e.to_string())?;
    let mut rng = SplitMix64::new(args.seed);
    let managed = allocator.counters().managed_pages();
    let mut held: Held = Vec::new();
    let mut failures = 0u64;

    // Phase 1: fill to 70% with the mix.
    failures += fill(&allocator, &mut rng, managed * 7 / 10, &mut held);
    let after_fill = allocator.counters().extfrag_stats();
    // Phase 2: reclaim half of the movable and reclaimable memory, at random.
    held = reclaim_half(&allocator, &mut rng, held)?;
    // Phase 3: a burst of unmovable kernel allocations into the holes reclaim left.
    failures += unmovable_burst(&allocator, managed / 10, &mut held);
    let census = allocator.check_invariants().map_err(|e| format!("invariant violated: {e}"))?;
    let totals = allocator.counters().extfrag_stats();

    let summary = Summary { managed, failures, after_fill, totals, census };
    crate::output_format::print_report(args.format, &report_json(args, &allocator, &summary), || {
        let mut out = String::new();
        write_report(&mut out, args, &allocator, &summary).map_err(|e| e.to_string())?;
        print!("{out}");
        Ok(())
    })?;

    for (block, _) in held {
        allocator.free_pages(block).map_err(|e| e.to_string())?;
    }
    allocator.check_invariants().map_err(|e| format!("invariant violated after freeing all: {e}"))?;
    Ok(())
}

/// Allocates from the mix until `target` pages are in use; returns the requests that failed.
fn fill(allocator: &Allocator, rng: &mut SplitMix64, target: u64, held: &mut Held) -> u64 {
    let mut failures = 0;
    while allocator.counters().managed_pages() - allocator.counters().buddy_free_pages() < target {
        let (request, order) = pick(rng);
        match allocator.alloc_pages(order, request) {
            Ok(block) => held.push((block, request.migratetype)),
            Err(_) => failures += 1,
        }
    }
    failures
}

/// Frees each movable or reclaimable block with probability one half; returns the rest.
fn reclaim_half(allocator: &Allocator, rng: &mut SplitMix64, mut held: Held) -> Result<Held, String> {
    let mut kept = Vec::with_capacity(held.len());
    for (block, migratetype) in held.drain(..) {
        let reclaimable = matches!(migratetype, MigrateType::Movable | MigrateType::Reclaimable);
        if reclaimable && rng.below(2) == 0 {
            allocator.free_pages(block).map_err(|e| e.to_string())?;
        } else {
            kept.push((block, migratetype));
        }
    }
    Ok(kept)
}

/// Makes `requests` order-0 kernel allocations; returns those that failed.
fn unmovable_burst(allocator: &Allocator, requests: u64, held: &mut Held) -> u64 {
    let mut failures = 0;
    for _ in 0..requests {
        match allocator.alloc_pages(0, AllocRequest::KERNEL) {
            Ok(block) => held.push((block, MigrateType::Unmovable)),
            Err(_) => failures += 1,
        }
    }
    failures
}

/// The report's numbers as JSON.
fn report_json(args: &DemoArgs, allocator: &Allocator, summary: &Summary) -> serde_json::Value {
    let fallbacks = |stats: &ExtfragStats| {
        serde_json::json!({
            "claims": stats.claims,
            "steals": stats.steals,
            "pageblock_splits": stats.pageblock_splits,
            "watermark_boosts": stats.watermark_boosts,
        })
    };
    let zones: Vec<serde_json::Value> = allocator
        .zones()
        .iter()
        .map(|zone| {
            let free_blocks = zone.with_free_area(allocator.platform(), |area| {
                MigrateType::ALL
                    .iter()
                    .map(|&migratetype| {
                        let per_order: Vec<u64> = (0..pagealloc::types::NR_ORDERS)
                            .map(|order| area.blocks(order, migratetype.index()))
                            .collect();
                        (migratetype.kernel_name().to_string(), serde_json::json!(per_order))
                    })
                    .collect::<serde_json::Map<_, _>>()
            });
            let pageblocks: serde_json::Map<_, _> = MigrateType::ALL
                .iter()
                .zip(zone.pageblock_counts())
                .map(|(migratetype, count)| (migratetype.kernel_name().to_string(), count.into()))
                .collect();
            serde_json::json!({
                "node": zone.state().node(),
                "zone": zone.state().zone_type().kernel_name(),
                "managed_pages": zone.state().managed_pages(),
                "free_pages": zone.free_pages(),
                "free_blocks_by_type_and_order": free_blocks,
                "pageblocks_by_type": pageblocks,
            })
        })
        .collect();
    let census = &summary.census;
    serde_json::json!({
        "memory_mib": args.memory_mib,
        "seed": args.seed,
        "managed_pages": summary.managed,
        "failed_requests": summary.failures,
        "fallbacks_after_fill": fallbacks(&summary.after_fill),
        "fallbacks": fallbacks(&summary.totals),
        "census": {
            "managed_pages": census.managed_pages,
            "free_pages": census.free_pages,
            "allocated_pages": census.allocated_pages,
            "pcp_pages": census.pcp_pages,
        },
        "zones": zones,
    })
}

/// The summary, then the allocator's state in the kernel's formats.
fn write_report(out: &mut String, args: &DemoArgs, allocator: &Allocator, summary: &Summary) -> std::fmt::Result {
    let Summary { managed, failures, after_fill, totals, census } = summary;
    writeln!(out, "pagelab demo: {} MiB PC layout, seed {}, {} managed pages", args.memory_mib, args.seed, managed)?;
    out.push_str(&crate::metadata::metadata_line());
    writeln!(
        out,
        "workload: fill to 70% (60% user movable, 20% kernel, 12% slab, 6% order-3 kernel, 2% order-2 atomic), \
         reclaim half of movable/reclaimable, then {} order-0 kernel requests; {} requests failed",
        managed / 10,
        failures
    )?;
    writeln!(
        out,
        "fallbacks: after fill {} claims, {} steals; at end {} claims, {} steals, {} split a pageblock, {} watermark boosts",
        after_fill.claims, after_fill.steals, totals.claims, totals.steals, totals.pageblock_splits, totals.watermark_boosts
    )?;
    writeln!(
        out,
        "census: managed {} = free {} + allocated {} + per-cpu {}; invariants OK\n",
        census.managed_pages, census.free_pages, census.allocated_pages, census.pcp_pages
    )?;
    writeln!(out, "== /proc/buddyinfo")?;
    write_buddyinfo(out, allocator)?;
    writeln!(out, "\n== /proc/pagetypeinfo")?;
    write_pagetypeinfo(out, allocator)?;
    writeln!(out, "\n== extfrag/unusable_index")?;
    write_unusable_index(out, allocator)?;
    writeln!(out, "\n== extfrag/extfrag_index")?;
    write_extfrag_index(out, allocator)?;
    if args.zoneinfo {
        writeln!(out, "\n== /proc/zoneinfo")?;
        write_zoneinfo(out, allocator)?;
    }
    Ok(())
}
