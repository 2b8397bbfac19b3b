//! One snapshot of what an embedder watches: free pages in total, per zone and per order,
//! the pages cached in pagesets, and the allocation, free and fallback counters.

use super::PageAllocator;
use crate::events::ExtfragStats;
use crate::pcp::PcpCounters;
use crate::platform::Platform;
use crate::table::{Table, FIXED_ZONES};
use crate::types::{ZoneType, NR_ORDERS};

/// One zone's memory (a `/proc/zoneinfo` and `/proc/buddyinfo` line, as numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneStats {
    pub node: u16,
    pub zone_type: ZoneType,
    pub managed_pages: u64,
    /// Free in the zone's buddy, isolated pageblocks aside: exact, read in the same zone-lock
    /// hold as `free_blocks`. The published NR_FREE_PAGES that watermark checks read may
    /// lag it by per-CPU diffs not yet folded ([`crate::Counters::buddy_free_pages`]).
    pub buddy_free_pages: u64,
    /// Cached in the zone's per-CPU pagesets, read under each pageset's lock after the zone
    /// lock is dropped: free, and handed out first (with any frees handed over to the zone
    /// and not yet released, `Counters::pcp_pages`).
    pub pageset_pages: u64,
    /// Free buddy blocks of each order, isolated ones included, as /proc/buddyinfo counts
    /// them: with nothing isolated, `buddy_free_pages` is their pages.
    pub free_blocks: [u64; NR_ORDERS],
}

/// A fixed table's unused entry.
impl Default for ZoneStats {
    fn default() -> Self {
        ZoneStats {
            node: 0,
            zone_type: ZoneType::Dma,
            managed_pages: 0,
            buddy_free_pages: 0,
            pageset_pages: 0,
            free_blocks: [0; NR_ORDERS],
        }
    }
}

impl ZoneStats {
    /// Pages that can be allocated now: the buddy's and the pagesets'.
    pub fn free_pages(&self) -> u64 {
        self.buddy_free_pages + self.pageset_pages
    }
}

/// The allocator's counts at one moment ([`PageAllocator::stats`]). Each zone is read
/// under its own locks, one after another: a zone's buddy count and blocks agree with each
/// other always; its pageset count, the other zones and the event counters are each read
/// at their own moment, so the totals are exact only when nothing runs beside the reader.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    pub managed_pages: u64,
    /// Free pages: every zone's buddy and pagesets.
    pub free_pages: u64,
    pub buddy_free_pages: u64,
    pub pageset_pages: u64,
    /// Every zone, in the allocator's order.
    pub zones: Table<ZoneStats, FIXED_ZONES>,
    /// Pages handed out, over every zone (vm events `pgalloc_*`).
    pub pgalloc_pages: u64,
    /// Pages given back (vm event `pgfree`).
    pub pgfree_pages: u64,
    /// Fallbacks to another migratetype's free lists (claims and steals).
    pub fallbacks: ExtfragStats,
    /// Pageset refills, drains and hits.
    pub pagesets: PcpCounters,
}

impl<P: Platform> PageAllocator<P> {
    /// A snapshot of free memory and counters; needs no heap.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(1)).unwrap();
    /// let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    /// let stats = allocator.stats();
    /// assert_eq!(stats.free_pages, stats.managed_pages - 4);
    /// assert_eq!(stats.zones[0].free_pages(), stats.free_pages);
    /// assert_eq!(stats.pgalloc_pages, 4);
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn stats(&self) -> AllocatorStats {
        let mut stats = AllocatorStats {
            pgalloc_pages: ZoneType::ALL.iter().map(|&zone_type| self.counters().pgalloc_pages(zone_type)).sum(),
            pgfree_pages: self.counters().pgfree_pages(),
            fallbacks: self.counters().extfrag_stats(),
            pagesets: self.counters().pcp_counters(),
            ..AllocatorStats::default()
        };
        for zone in self.zones.iter() {
            // The zone lock first: it releases handed-over frees, which would otherwise be
            // read both as pageset pages and, once released, as buddy pages.
            let (buddy_free_pages, free_blocks) = zone.with_free_area(&self.platform, |area| {
                (area.free_pages(), core::array::from_fn(|order| area.blocks_of_order(order)))
            });
            let pageset_pages = self.zone_pcp_pages(zone);
            let zone_stats = ZoneStats {
                node: zone.state().node(),
                zone_type: zone.state().zone_type(),
                managed_pages: zone.state().managed_pages(),
                buddy_free_pages,
                pageset_pages,
                free_blocks,
            };
            stats.managed_pages += zone_stats.managed_pages;
            stats.buddy_free_pages += zone_stats.buddy_free_pages;
            stats.pageset_pages += zone_stats.pageset_pages;
            stats.zones.push(zone_stats).expect("as many zones as the build made");
        }
        stats.free_pages = stats.buddy_free_pages + stats.pageset_pages;
        stats
    }
}

#[cfg(test)]
mod tests {
    use crate::platform::TestPlatform;
    use crate::policy::FreePagesCount;
    use crate::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};

    /// A zone's buddy count and its blocks come from one zone-lock hold: they agree even
    /// where the published count lags behind per-CPU diffs not yet folded.
    #[test]
    fn a_zones_free_count_and_blocks_agree_with_unfolded_diffs() {
        let mut policy = crate::presets::find("mainline").unwrap().policy;
        policy.vmstat.free_pages = FreePagesCount::PerCpuDiffs;
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 14).policy(policy);
        let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
        let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
        let stats = allocator.stats();
        let zone = &stats.zones[0];
        let listed: u64 = zone.free_blocks.iter().enumerate().map(|(order, &blocks)| blocks << order).sum();
        assert_eq!(zone.buddy_free_pages, listed, "one hold: the buddy's pages are its blocks' pages");
        assert_eq!(zone.free_pages() + 1, zone.managed_pages, "exact: all but the page held");
        allocator.free_pages(block).unwrap();
        allocator.check_invariants().unwrap();
    }
}
