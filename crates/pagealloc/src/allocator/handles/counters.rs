//! The allocator's counters, summed over zones, CPUs or a node's zones.

use crate::allocator::{PageAllocator, ReclaimStats};
use crate::compaction::CompactStats;
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
        self.allocator.managed_pages()
    }

    /// Free pages in the buddy over all zones: the zones' published counts summed, then
    /// clamped at 0, as global_zone_page_state(NR_FREE_PAGES) reads them.
    #[inline]
    pub fn buddy_free_pages(&self) -> u64 {
        self.allocator.buddy_free_pages()
    }

    /// Pages held in pagesets now, over all zones and CPUs, buddy-bound lists,
    /// [`Self::handed_over_pages`] and [`Self::parked_pages`] included: every page out of
    /// the buddy that is not
    /// allocated, so that at rest `buddy_free_pages + pcp_pages` is managed minus allocated.
    #[inline]
    pub fn pcp_pages(&self) -> u64 {
        self.allocator.pcp_pages()
    }

    /// Of [`Self::pcp_pages`], those other arenas' CPUs handed to a zone's owner and no
    /// zone-lock holder has released yet (`DrainBeyondLinux::hand_remote_frees`; 0 on every
    /// other policy). Racy, exact at rest.
    #[inline]
    pub fn handed_over_pages(&self) -> u64 {
        self.allocator.handed_over_pages()
    }

    /// Of [`Self::pcp_pages`], those parked in their pageblocks and not yet given to the
    /// buddy (`FragBeyondLinux::parked_frees`; 0 on every other policy). Racy, exact at
    /// rest; one load per pageblock.
    #[inline]
    pub fn parked_pages(&self) -> u64 {
        self.allocator.parked_pages()
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
        self.allocator.extfrag_stats()
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
        self.allocator.pcp_counters()
    }

    /// Zone-lock counters summed over zones.
    #[inline]
    pub fn zone_counters(&self) -> ZoneCounters {
        self.allocator.zone_counters()
    }

    /// The exact count of a NUMA event over all zones: the shared counters plus every
    /// CPU's unfolded part, each pageset read under its lock (mirrors
    /// sum_zone_numa_event_state() and zone_page_state_snapshot()).
    #[inline]
    pub fn numa_event(&self, event: NumaEvent) -> u64 {
        self.allocator.numa_event(event)
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
        self.allocator.pgalloc_pages(zone_type)
    }

    /// Pages freed (vm event `pgfree`), exact.
    #[inline]
    pub fn pgfree_pages(&self) -> u64 {
        self.allocator.pgfree_pages()
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
        self.allocator.zone_lock_stats()
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
        self.allocator.reclaim_stats(node)
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
        self.allocator.compaction_stats(node)
    }
}
