//! /proc/vmstat: the kernel's lines this allocator keeps, in the kernel's order, then lines
//! of its own that the kernel has no counter for (fallback events and pageset drains, which
//! Linux shows only as tracepoints).

use core::fmt::{self, Write};

use crate::allocator::PageAllocator;
use crate::pcp::DrainCause;
use crate::platform::Platform;
use crate::types::ZoneType;
use crate::vmstat::NumaEvent;

/// The /proc/vmstat lines, exact (every CPU's part summed; mirrors vmstat_start()'s reads).
pub fn write_vmstat<P: Platform>(out: &mut impl Write, allocator: &PageAllocator<P>) -> fmt::Result {
    writeln!(out, "nr_free_pages {}", allocator.counters().buddy_free_pages())?;
    for event in NumaEvent::ALL {
        writeln!(out, "{} {}", event.vmstat_name(), allocator.counters().numa_event(event))?;
    }
    for zone_type in ZoneType::ALL {
        writeln!(out, "pgalloc_{} {}", zone_type.vmstat_name(), allocator.counters().pgalloc_pages(zone_type))?;
    }
    writeln!(out, "pgfree {}", allocator.counters().pgfree_pages())?;
    let kswapd_runs: u64 = allocator.nodes().iter().map(|node| node.kswapd_runs()).sum();
    let mut reclaim = crate::allocator::ReclaimStats::default();
    for node in 0..allocator.nodes().len() as u16 {
        let stats = allocator.counters().reclaim_stats(node);
        reclaim.pgsteal_kswapd += stats.pgsteal_kswapd;
        reclaim.pgsteal_direct += stats.pgsteal_direct;
        reclaim.allocstall += stats.allocstall;
    }
    writeln!(out, "pgsteal_kswapd {}", reclaim.pgsteal_kswapd)?;
    writeln!(out, "pgsteal_direct {}", reclaim.pgsteal_direct)?;
    // Linux splits allocstall by zone; the client is asked per node here.
    writeln!(out, "allocstall {}", reclaim.allocstall)?;
    writeln!(out, "pageoutrun {kswapd_runs}")?;
    let mut compact = crate::compaction::CompactStats::default();
    for node in 0..allocator.nodes().len() as u16 {
        compact += allocator.counters().compaction_stats(node);
    }
    writeln!(out, "pgmigrate_success {}", compact.pgmigrate_success)?;
    writeln!(out, "pgmigrate_fail {}", compact.pgmigrate_fail)?;
    writeln!(out, "compact_migrate_scanned {}", compact.compact_migrate_scanned)?;
    writeln!(out, "compact_free_scanned {}", compact.compact_free_scanned)?;
    writeln!(out, "compact_isolated {}", compact.compact_isolated)?;
    writeln!(out, "compact_stall {}", compact.compact_stall)?;
    writeln!(out, "compact_fail {}", compact.compact_fail)?;
    writeln!(out, "compact_success {}", compact.compact_success)?;
    writeln!(out, "compact_daemon_wake {}", compact.compact_daemon_wake)?;
    writeln!(out, "compact_daemon_migrate_scanned {}", compact.compact_daemon_migrate_scanned)?;
    writeln!(out, "compact_daemon_free_scanned {}", compact.compact_daemon_free_scanned)?;
    // Not in Linux: fallbacks as mm_page_alloc_extfrag counts them, and pageset drains.
    let extfrag = allocator.counters().extfrag_stats();
    writeln!(out, "extfrag_claim {}", extfrag.claims)?;
    writeln!(out, "extfrag_steal {}", extfrag.steals)?;
    writeln!(out, "extfrag_split_pageblock {}", extfrag.pageblock_splits)?;
    writeln!(out, "watermark_boost {}", extfrag.watermark_boosts)?;
    let drained = allocator.counters().pcp_counters().drained_pages;
    for cause in DrainCause::ALL {
        writeln!(out, "pcp_drain_{} {}", drain_name(cause), drained[cause as usize])?;
    }
    Ok(())
}

/// A drain cause as a line suffix (`pcp_drain_explicit` rather than `pcp_drain_drain`).
fn drain_name(cause: DrainCause) -> &'static str {
    match cause {
        DrainCause::Explicit => "explicit",
        other => other.name(),
    }
}
