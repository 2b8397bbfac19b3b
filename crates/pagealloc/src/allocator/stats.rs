//! Counters summed over zones and CPUs: pages managed, free and cached, fallback events,
//! pageset and zone-lock counters.

use super::PageAllocator;
use crate::events::ExtfragStats;
use crate::free_area::ZoneCounters;
use crate::pcp::PcpCounters;
use crate::platform::Platform;
use crate::sync::LockStats;
use crate::types::ZoneType;
use crate::vmstat::NumaEvent;

impl<P: Platform> PageAllocator<P> {
    /// Managed pages over all zones.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16), TestPlatform::new(2)).unwrap();
    /// // Every page is free at first: in the buddy, none in pagesets yet.
    /// assert_eq!(allocator.managed_pages(), allocator.buddy_free_pages() + allocator.pcp_pages());
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// assert!(allocator.pcp_pages() > 0, "the refill's leftovers wait in CPU 0's pageset");
    /// allocator.free_pages(block).unwrap();
    /// assert_eq!(allocator.managed_pages(), allocator.buddy_free_pages() + allocator.pcp_pages());
    /// ```
    pub fn managed_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.state().managed_pages()).sum()
    }

    /// Free pages in the buddy over all zones: the zones' published counts summed, then
    /// clamped at 0, as global_zone_page_state(NR_FREE_PAGES) reads them.
    pub fn buddy_free_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.free_pages_signed()).sum::<i64>().max(0) as u64
    }

    /// Fallback counters summed over all zones.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// let stats = allocator.extfrag_stats();
    /// assert!(stats.claims + stats.steals <= 1); // at most the first kernel take fell back
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn extfrag_stats(&self) -> ExtfragStats {
        let mut total = ExtfragStats::default();
        for zone in self.zones.iter() {
            total += zone.state().extfrag.snapshot();
        }
        total
    }

    /// Pages held in pagesets now, over all zones and CPUs.
    pub fn pcp_pages(&self) -> u64 {
        self.zones.iter().map(|zone| self.zone_pcp_pages(zone)).sum()
    }

    /// Pages held in one zone's pagesets now, over all CPUs.
    pub(super) fn zone_pcp_pages(&self, zone: &crate::zone::Zone<P>) -> u64 {
        let held = |slot: &crate::pcp::PcpSlot<P>| {
            slot.inspect(&self.platform, |p| u64::from(p.count_pages() + p.buddy_bound_pages()))
        };
        zone.pcp.iter().map(held).sum()
    }

    /// Pageset counters summed over all zones and CPUs.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap();
    /// let counters = allocator.pcp_counters();
    /// assert!(counters.refills >= 1); // the first allocation refilled the pageset
    /// ```
    pub fn pcp_counters(&self) -> PcpCounters {
        let mut total = PcpCounters::default();
        for slot in self.zones.iter().flat_map(|zone| zone.pcp.iter()) {
            total += slot.inspect(&self.platform, |p| p.counters());
        }
        total
    }

    /// Zone-lock counters summed over zones.
    pub fn zone_counters(&self) -> ZoneCounters {
        let mut total = ZoneCounters::default();
        for zone in self.zones.iter() {
            total += zone.with_free_area(&self.platform, |area| area.counters());
        }
        total
    }

    /// The exact count of a NUMA event over all zones: the shared counters plus every
    /// CPU's unfolded part, each pageset read under its lock (mirrors
    /// sum_zone_numa_event_state() and zone_page_state_snapshot()).
    pub fn numa_event(&self, event: NumaEvent) -> u64 {
        let mut total = 0i64;
        for zone in self.zones.iter() {
            total += zone.state().vmstat.numa_folded(event);
            for slot in zone.pcp.iter() {
                total += slot.inspect(&self.platform, |p| p.stats().numa_unfolded(event));
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
    /// assert_eq!(allocator.pgalloc_pages(ZoneType::Normal), 4);
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn pgalloc_pages(&self, zone_type: ZoneType) -> u64 {
        self.zones
            .iter()
            .filter(|zone| zone.state().zone_type == zone_type)
            .map(|zone| {
                let cpus: u64 =
                    zone.pcp.iter().map(|slot| slot.inspect(&self.platform, |p| p.stats().pgalloc_pages())).sum();
                zone.state().vmstat.pgalloc_unbatched_pages() + cpus
            })
            .sum()
    }

    /// Pages freed (vm event `pgfree`), exact.
    pub fn pgfree_pages(&self) -> u64 {
        self.zones
            .iter()
            .map(|zone| {
                let cpus: u64 =
                    zone.pcp.iter().map(|slot| slot.inspect(&self.platform, |p| p.stats().pgfree_pages())).sum();
                zone.state().vmstat.pgfree_unbatched_pages() + cpus
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
    /// assert!(allocator.zone_lock_stats().acquisitions >= 1); // the refill took the zone lock
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn zone_lock_stats(&self) -> LockStats {
        let mut total = LockStats::default();
        for zone in self.zones.iter() {
            total += zone.core.lock.stats();
        }
        total
    }
}
