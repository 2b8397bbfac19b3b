//! `pagelab demo`: a newcomer's first look. Builds a PC-like machine, runs a deterministic
//! mixed workload (user pages, kernel objects, slab, atomic high-order requests, a reclaim
//! of half the movable memory, then a burst of unmovable requests that must fall back), and
//! prints the result in the kernel's formats with the invariant checker's verdict.

use std::fmt::Write;

use clap::Args;
use pagealloc::platform::StdPlatform;
use pagealloc::sizing::LinuxVersion;
use pagealloc::views::{
    write_buddyinfo, write_extfrag_index, write_pagetypeinfo, write_unusable_index, write_zoneinfo, ZoneinfoZone,
};
use pagealloc::{AllocRequest, AllocatorBuilder, Block, MigrateType, PageAllocator};

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

pub fn run(args: &DemoArgs) -> Result<(), String> {
    if args.memory_mib < 16 {
        return Err("--memory-mib must be at least 16".into());
    }
    let allocator = PageAllocator::build(AllocatorBuilder::pc_layout(args.memory_mib), StdPlatform::new())
        .map_err(|e| e.to_string())?;
    let mut rng = SplitMix64::new(args.seed);
    let managed = allocator.managed_pages();
    // Each block with the mobility it was requested with.
    let mut held: Vec<(Block, MigrateType)> = Vec::new();
    let mut failures = 0u64;

    // Phase 1: fill to 70% with the mix.
    while allocator.managed_pages() - allocator.buddy_free_pages() < managed * 7 / 10 {
        let (request, order) = pick(&mut rng);
        match allocator.alloc_pages(order, request) {
            Ok(block) => held.push((block, request.migratetype)),
            Err(_) => failures += 1,
        }
    }
    let after_fill = allocator.extfrag_stats();

    // Phase 2: reclaim half of the movable and reclaimable memory, at random.
    let mut kept = Vec::with_capacity(held.len());
    for (block, migratetype) in held.drain(..) {
        let reclaimable = matches!(migratetype, MigrateType::Movable | MigrateType::Reclaimable);
        if reclaimable && rng.below(2) == 0 {
            allocator.free_pages(block).map_err(|e| e.to_string())?;
        } else {
            kept.push((block, migratetype));
        }
    }
    held = kept;

    // Phase 3: a burst of unmovable kernel allocations into the holes reclaim left.
    for _ in 0..managed / 10 {
        match allocator.alloc_pages(0, AllocRequest::KERNEL) {
            Ok(block) => held.push((block, MigrateType::Unmovable)),
            Err(_) => failures += 1,
        }
    }
    let census = allocator.check_invariants().map_err(|e| format!("invariant violated: {e}"))?;
    let totals = allocator.extfrag_stats();

    let mut out = String::new();
    let w = |e: std::fmt::Error| e.to_string();
    writeln!(out, "pagelab demo: {} MiB PC layout, seed {}, {} managed pages", args.memory_mib, args.seed, managed)
        .map_err(w)?;
    out.push_str(&crate::metadata_line());
    writeln!(
        out,
        "workload: fill to 70% (60% user movable, 20% kernel, 12% slab, 6% order-3 kernel, 2% order-2 atomic), \
         reclaim half of movable/reclaimable, then {} order-0 kernel requests; {} requests failed",
        managed / 10,
        failures
    )
    .map_err(w)?;
    writeln!(
        out,
        "fallbacks: after fill {} claims, {} steals; at end {} claims, {} steals, {} split a pageblock, {} watermark boosts",
        after_fill.claims, after_fill.steals, totals.claims, totals.steals, totals.pageblock_splits, totals.watermark_boosts
    )
    .map_err(w)?;
    writeln!(
        out,
        "census: managed {} = free {} + allocated {} + per-cpu {}; invariants OK\n",
        census.managed_pages, census.free_pages, census.allocated_pages, census.pcp_pages
    )
    .map_err(w)?;
    writeln!(out, "== /proc/buddyinfo").map_err(w)?;
    write_buddyinfo(&mut out, &allocator).map_err(w)?;
    writeln!(out, "\n== /proc/pagetypeinfo").map_err(w)?;
    write_pagetypeinfo(&mut out, &allocator).map_err(w)?;
    writeln!(out, "\n== extfrag/unusable_index").map_err(w)?;
    write_unusable_index(&mut out, &allocator).map_err(w)?;
    writeln!(out, "\n== extfrag/extfrag_index").map_err(w)?;
    write_extfrag_index(&mut out, &allocator).map_err(w)?;
    if args.zoneinfo {
        writeln!(out, "\n== /proc/zoneinfo").map_err(w)?;
        write_zoneinfo(&mut out, &ZoneinfoZone::from_allocator(&allocator), LinuxVersion::MAINLINE).map_err(w)?;
    }
    print!("{out}");

    for (block, _) in held {
        allocator.free_pages(block).map_err(|e| e.to_string())?;
    }
    allocator.check_invariants().map_err(|e| format!("invariant violated after freeing all: {e}"))?;
    Ok(())
}
