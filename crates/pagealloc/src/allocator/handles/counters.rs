//! The allocator's counters, summed over zones, CPUs or a node's zones.

use crate::allocator::{PageAllocator, ReclaimStats};
use crate::compaction::{fragmentation_score_pct, CompactStats};
use crate::events::ExtfragStats;
use crate::free_area::ZoneCounters;
use crate::pcp::PcpCounters;
use crate::platform::Platform;
use crate::sync::LockStats;
use crate::types::ZoneType;
use crate::vmstat::NumaEvent;

/// The allocator's counters, as /proc/vmstat and /proc/zoneinfo show them: pages managed,
/// free and cached, fallback events, pageset, zone-lock, NUMA, reclaim and compaction
/// counters. From [`PageAllocator::counters`]; [`PageAllocator::stats`] takes them all at
/// once.
#[derive(Clone, Copy)]
pub struct Counters<'a, P: Platform> {
    pub(super) allocator: &'a PageAllocator<P>,
}

impl<P: Platform> PageAllocator<P> {
    /// The allocator's counters, summed over zones and CPUs, or per node.
    #[inline]
    pub fn counters(&self) -> Counters<'_, P> {
        Counters { allocator: self }
    }
}

impl<P: Platform> Counters<'_, P> {
    /// Managed pages over all zones.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16), TestPlatform::new(2)).unwrap();
    /// // Every page is free at first: in the buddy, none in pagesets yet.
    /// assert_eq!(allocator.counters().managed_pages(), allocator.counters().buddy_free_pages() + allocator.counters().pcp_pages());
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// assert!(allocator.counters().pcp_pages() > 0, "the refill's leftovers wait in CPU 0's pageset");
    /// allocator.free_pages(block).unwrap();
    /// assert_eq!(allocator.counters().managed_pages(), allocator.counters().buddy_free_pages() + allocator.counters().pcp_pages());
    /// ```
    #[inline]
    pub fn managed_pages(&self) -> u64 {
        let allocator = self.allocator;
        allocator.zones.iter().map(|z| z.state().managed_pages()).sum()
    }

    /// Free pages in the buddy over all zones: the zones' published counts summed, then
    /// clamped at 0, as global_zone_page_state(NR_FREE_PAGES) reads them.
    #[inline]
    pub fn buddy_free_pages(&self) -> u64 {
        let allocator = self.allocator;
        allocator.zones.iter().map(|z| z.free_pages_signed()).sum::<i64>().max(0) as u64
    }

    /// Pages held in pagesets now, over all zones and CPUs, buddy-bound lists,
    /// [`Self::handed_over_pages`] and [`Self::parked_pages`] included: every page out of
    /// the buddy that is not
    /// allocated, so that at rest `buddy_free_pages + pcp_pages` is managed minus allocated.
    #[inline]
    pub fn pcp_pages(&self) -> u64 {
        let allocator = self.allocator;
        allocator.zones.iter().map(|zone| allocator.zone_pcp_pages(zone)).sum()
    }

    /// Of [`Self::pcp_pages`], those other arenas' CPUs handed to a zone's owner and no
    /// zone-lock holder has released yet (`DrainBeyondLinux::hand_remote_frees`; 0 on every
    /// other policy). Racy, exact at rest.
    #[inline]
    pub fn handed_over_pages(&self) -> u64 {
        let allocator = self.allocator;
        allocator.zones.iter().map(|zone| u64::from(zone.handed_over_pages())).sum()
    }

    /// Of [`Self::pcp_pages`], those parked in their pageblocks and not yet given to the
    /// buddy (`FragBeyondLinux::parked_frees`; 0 on every other policy). Racy, exact at
    /// rest; one load per pageblock.
    #[inline]
    pub fn parked_pages(&self) -> u64 {
        let allocator = self.allocator;
        allocator.zones.iter().map(|zone| zone.parked_pages()).sum()
    }

    /// Fallback counters summed over all zones.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// let stats = allocator.counters().extfrag_stats();
    /// assert!(stats.claims + stats.steals <= 1); // at most the first kernel take fell back
    /// allocator.free_pages(block).unwrap();
    /// ```
    #[inline]
    pub fn extfrag_stats(&self) -> ExtfragStats {
        let allocator = self.allocator;
        let mut total = ExtfragStats::default();
        for zone in allocator.zones.iter() {
            total += zone.state().extfrag.snapshot();
        }
        total
    }

    /// Pageset counters summed over all zones and CPUs.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap();
    /// let counters = allocator.counters().pcp_counters();
    /// assert!(counters.refills >= 1); // the first allocation refilled the pageset
    /// ```
    #[inline]
    pub fn pcp_counters(&self) -> PcpCounters {
        let allocator = self.allocator;
        let mut total = PcpCounters::default();
        for slot in allocator.zones.iter().flat_map(|zone| zone.pcp.iter()) {
            total += slot.inspect(&allocator.platform, |p| p.counters());
        }
        total
    }

    /// Zone-lock counters summed over zones.
    #[inline]
    pub fn zone_counters(&self) -> ZoneCounters {
        let allocator = self.allocator;
        let mut total = ZoneCounters::default();
        for zone in allocator.zones.iter() {
            total += zone.with_free_area(&allocator.platform, |area| area.counters());
        }
        total
    }

    /// The exact count of a NUMA event over all zones: the shared counters plus every
    /// CPU's unfolded part, each pageset read under its lock (mirrors
    /// sum_zone_numa_event_state() and zone_page_state_snapshot()).
    #[inline]
    pub fn numa_event(&self, event: NumaEvent) -> u64 {
        let allocator = self.allocator;
        let mut total = 0i64;
        for zone in allocator.zones.iter() {
            total += zone.state().vmstat.numa_folded(event);
            for slot in zone.pcp.iter() {
                total += slot.inspect(&allocator.platform, |p| p.stats().numa_unfolded(event));
            }
        }
        debug_assert!(total >= 0, "{event:?} counted {total}");
        total.max(0) as u64
    }

    /// Pages allocated from zones of `zone_type` (vm event `pgalloc_<zone>`), exact.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    /// assert_eq!(allocator.counters().pgalloc_pages(ZoneType::Normal), 4);
    /// allocator.free_pages(block).unwrap();
    /// ```
    #[inline]
    pub fn pgalloc_pages(&self, zone_type: ZoneType) -> u64 {
        let allocator = self.allocator;
        allocator
            .zones
            .iter()
            .filter(|zone| zone.state().zone_type == zone_type)
            .map(|zone| {
                let cpus: u64 =
                    zone.pcp.iter().map(|slot| slot.inspect(&allocator.platform, |p| p.stats().pgalloc_pages())).sum();
                zone.state().vmstat.pgalloc_unbatched_pages() + cpus
            })
            .sum()
    }

    /// Pages freed (vm event `pgfree`), exact.
    #[inline]
    pub fn pgfree_pages(&self) -> u64 {
        let allocator = self.allocator;
        allocator
            .zones
            .iter()
            .map(|zone| {
                let cpus: u64 =
                    zone.pcp.iter().map(|slot| slot.inspect(&allocator.platform, |p| p.stats().pgfree_pages())).sum();
                // A parked page counts as freed when it leaves for the buddy; until then, here.
                zone.state().vmstat.pgfree_unbatched_pages() + cpus + zone.parked_pages()
            })
            .sum()
    }

    /// Zone-lock statistics summed over zones: the one count of lock acquisitions and waits,
    /// on real threads and in the simulator alike.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// assert!(allocator.counters().zone_lock_stats().acquisitions >= 1); // the refill took the zone lock
    /// allocator.free_pages(block).unwrap();
    /// ```
    #[inline]
    pub fn zone_lock_stats(&self) -> LockStats {
        let allocator = self.allocator;
        let mut total = LockStats::default();
        for zone in allocator.zones.iter() {
            total += zone.core.lock.stats();
        }
        total
    }

    /// The node's reclaim counters.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// // No reclaim client and plenty of memory: nothing reclaimed, no stalls.
    /// assert_eq!(allocator.counters().reclaim_stats(0).allocstall, 0);
    /// ```
    #[inline]
    pub fn reclaim_stats(&self, node: u16) -> ReclaimStats {
        let allocator = self.allocator;
        allocator.nodes.get(node as usize).map_or_else(ReclaimStats::default, |node| node.reclaim.snapshot())
    }

    /// The node's compaction counters.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// allocator.background().wake_kcompactd(0, 9);
    /// allocator.background().run_due_work(0, 0); // kcompactd's pass: free memory needs no compaction
    /// assert_eq!(allocator.counters().compaction_stats(0).compact_stall, 0, "no direct compaction ran");
    /// ```
    #[inline]
    pub fn compaction_stats(&self, node: u16) -> CompactStats {
        let allocator = self.allocator;
        allocator.nodes.get(node as usize).map_or_else(CompactStats::default, |node| node.compact.snapshot())
    }

    /// The node's fragmentation score: its zones' scores weighted by their share of the
    /// node's pages (mirrors fragmentation_score_node()).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// assert_eq!(allocator.counters().fragmentation_score(0), 0); // all free in whole blocks
    /// ```
    #[inline]
    pub fn fragmentation_score(&self, node: u16) -> u64 {
        let allocator = self.allocator;
        let node_pages: u64 = allocator.populated_zones(node).map(|zone| zone.state().present_pages()).sum();
        allocator
            .populated_zones(node)
            .map(|zone| fragmentation_score_pct(&allocator.free_blocks_per_order(zone)) * zone.state().present_pages())
            .sum::<u64>()
            / (node_pages + 1)
    }
}
