//! What a run with a page cache did to fragmentation, read at its end with the workload's
//! memory still held: fallbacks (the seed's extfrag events below pageblock order),
//! compaction and reclaim counters, and the share of free memory in whole pageblocks before
//! and after compacting every node (as `echo 1 > /proc/sys/vm/compact_memory` would).
//! With memory nearly full that share has a ceiling no packing can pass: only whole
//! multiples of a pageblock of the free pages can be whole (`free_huge_pct_ceiling`). So
//! it is read a second time after the workload's anonymous memory is released, as at its
//! processes' exit, with the file pages it read still cached (`exit_*`): compaction must
//! then pack the scattered file pages to make the freed memory whole.

use pagealloc::compaction::CompactStats;
use pagealloc::platform::Platform;
use pagealloc::{PageAllocator, PAGEBLOCK_ORDER};
use serde::Serialize;

use crate::page_cache::{PageCache, PageCacheReport};

#[derive(Clone, Debug, Serialize)]
pub struct FragReport {
    /// Fallbacks with fallback_order below pageblock order (mm_page_alloc_extfrag).
    pub extfrag_events: u64,
    /// `extfrag_events` by the requested type: unmovable, movable, reclaimable.
    pub extfrag_by_start: [u64; 3],
    /// Steals that mixed movable with unmovable or reclaimable memory in one pageblock.
    pub polluting_fallbacks: u64,
    pub extfrag_claims: u64,
    pub extfrag_steals: u64,
    pub watermark_boosts: u64,
    pub compaction: CompactionReport,
    pub page_cache: PageCacheReport,
    /// Free memory in free blocks of pageblock order or more, in percent of free memory.
    pub free_huge_pct_end: f64,
    /// The same after compacting every node whole.
    pub free_huge_pct_compacted: f64,
    /// Pages compaction moved for that.
    pub final_compaction_pages: u64,
    /// The most `free_huge_pct_compacted` could be: the whole pageblocks in the free page
    /// count, in percent of it.
    pub free_huge_pct_ceiling: f64,
    /// After the anonymous memory is freed (the file pages stay cached): the share before
    /// compacting, after, its ceiling, and the pages compaction moved.
    pub exit_free_huge_pct: f64,
    pub exit_free_huge_pct_compacted: f64,
    pub exit_free_huge_pct_ceiling: f64,
    pub exit_compaction_pages: u64,
}

/// Free pages in blocks of pageblock order or more, and all free pages.
fn free_huge<P: Platform>(allocator: &PageAllocator<P>) -> (u64, u64) {
    allocator.zones().iter().fold((0, 0), |(huge, free), zone| {
        let (zone_huge, zone_free) = zone.with_free_area(allocator.platform(), |area| {
            let huge = (PAGEBLOCK_ORDER as usize..=pagealloc::MAX_ORDER as usize)
                .map(|order| area.blocks_of_order(order) << order)
                .sum::<u64>();
            (huge, area.free_pages())
        });
        (huge + zone_huge, free + zone_free)
    })
}

/// Share of managed memory free in blocks of pageblock order or more, in percent: pages in
/// per-CPU pagesets are not free huge pages; every zone counts (per-CPU arenas are zones of
/// their own).
pub fn free_huge_pct<P: Platform>(allocator: &PageAllocator<P>) -> f64 {
    pct(free_huge(allocator).0, allocator.counters().managed_pages())
}

/// Whole pageblocks' share of `free` pages at best, in percent.
fn ceiling_pct(free: u64) -> f64 {
    pct(free >> PAGEBLOCK_ORDER << PAGEBLOCK_ORDER, free)
}

/// Compacts every node; the pages moved.
fn compact_all<P: Platform>(allocator: &PageAllocator<P>) -> u64 {
    (0..allocator.nodes().len() as u16).map(|node| allocator.background().compact_node(node)).sum()
}

fn pct(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole.max(1) as f64
}

/// The allocator's compaction counters, as /proc/vmstat names them.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CompactionReport {
    pub compact_stall: u64,
    pub compact_success: u64,
    pub compact_fail: u64,
    pub compact_migrate_scanned: u64,
    pub compact_free_scanned: u64,
    pub pgmigrate_success: u64,
    pub pgmigrate_fail: u64,
    pub compact_daemon_wake: u64,
    pub compact_proactive_runs: u64,
}

impl From<CompactStats> for CompactionReport {
    fn from(stats: CompactStats) -> Self {
        CompactionReport {
            compact_stall: stats.compact_stall,
            compact_success: stats.compact_success,
            compact_fail: stats.compact_fail,
            compact_migrate_scanned: stats.compact_migrate_scanned,
            compact_free_scanned: stats.compact_free_scanned,
            pgmigrate_success: stats.pgmigrate_success,
            pgmigrate_fail: stats.pgmigrate_fail,
            compact_daemon_wake: stats.compact_daemon_wake,
            compact_proactive_runs: stats.compact_proactive_runs,
        }
    }
}

pub(super) fn measure<P: Platform>(allocator: &PageAllocator<P>, cache: &PageCache) -> FragReport {
    let extfrag = allocator.counters().extfrag_stats();
    let mut compaction = CompactStats::default();
    for node in 0..allocator.nodes().len() as u16 {
        compaction += allocator.counters().compaction_stats(node);
    }
    allocator.pagesets().drain_all();
    let (huge, free) = free_huge(allocator);
    let final_compaction_pages = compact_all(allocator);
    let (huge_after, free_after) = free_huge(allocator);
    cache.free_anon(allocator);
    allocator.pagesets().drain_all();
    let (exit_huge, exit_free) = free_huge(allocator);
    let exit_compaction_pages = compact_all(allocator);
    let (exit_huge_after, exit_free_after) = free_huge(allocator);
    FragReport {
        extfrag_events: extfrag.pageblock_splits,
        extfrag_by_start: extfrag.splits_by_start,
        polluting_fallbacks: extfrag.polluting,
        extfrag_claims: extfrag.claims,
        extfrag_steals: extfrag.steals,
        watermark_boosts: extfrag.watermark_boosts,
        compaction: compaction.into(),
        page_cache: cache.report(),
        free_huge_pct_end: pct(huge, free),
        free_huge_pct_compacted: pct(huge_after, free_after),
        final_compaction_pages,
        free_huge_pct_ceiling: ceiling_pct(free_after),
        exit_free_huge_pct: pct(exit_huge, exit_free),
        exit_free_huge_pct_compacted: pct(exit_huge_after, exit_free_after),
        exit_free_huge_pct_ceiling: ceiling_pct(exit_free_after),
        exit_compaction_pages,
    }
}
