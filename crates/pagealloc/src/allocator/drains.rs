//! Explicit pageset drains: this CPU's, every CPU's, and an offlined CPU's (mirrors
//! drain_local_pages(), drain_all_pages() and page_alloc_cpu_dead()).

use super::PageAllocator;
use crate::pcp::{self, DrainCause};
use crate::platform::Platform;

impl<P: Platform> PageAllocator<P> {
    /// Empties `cpu`'s pagesets in every zone; returns pages drained.
    fn drain_cpu_pagesets(&self, cpu: usize, cause: DrainCause) -> u64 {
        self.zones
            .iter()
            .filter_map(|zone| zone.pcp.get(cpu).map(|slot| (zone, slot)))
            .map(|(zone, slot)| pcp::drain_pcp(zone.buddy(&self.platform), slot, &self.policy.pcp, cause) as u64)
            .sum()
    }

    /// Drains the calling CPU's pagesets (mirrors drain_local_pages()).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap(); // onto this CPU's pageset
    /// assert!(allocator.drain_local() > 0);
    /// assert_eq!(allocator.pcp_pages(), 0);
    /// ```
    pub fn drain_local(&self) -> u64 {
        self.drain_cpu_pagesets(self.platform.current_cpu(), DrainCause::Explicit)
    }

    /// Drains every CPU's pagesets that hold pages (mirrors drain_all_pages()).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap(); // onto this CPU's pageset
    /// assert!(allocator.drain_all() > 0);    // every pageset back to the buddy
    /// assert_eq!(allocator.buddy_free_pages(), allocator.managed_pages());
    /// ```
    pub fn drain_all(&self) -> u64 {
        let drained = (0..self.platform.nr_cpus()).map(|cpu| self.drain_cpu_pagesets(cpu, DrainCause::Explicit)).sum();
        for zone in self.zones.iter() {
            zone.buddy(&self.platform).release_handed_over();
        }
        drained
    }

    /// Drains every CPU's pageset of one zone (mirrors drain_all_pages(zone), as kcompactd
    /// calls it after a run that ended Complete). Returns pages drained.
    pub(super) fn drain_zone(&self, zone: &crate::zone::Zone<P>) -> u64 {
        let drained = zone
            .pcp
            .iter()
            .map(|slot| pcp::drain_pcp(zone.buddy(&self.platform), slot, &self.policy.pcp, DrainCause::Explicit) as u64)
            .sum();
        zone.buddy(&self.platform).release_handed_over();
        drained
    }

    /// Sets `cpu`'s pageset high in zone `zone_index` to `high_pages`, clamped to the
    /// pageset's high_min..high_max, as a running kernel's auto-tuning leaves it: for a
    /// replay that starts from a /proc/zoneinfo snapshot. Returns the high set, or `None`
    /// without such a pageset.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let high = allocator.set_pageset_high(1, 0, u64::MAX).unwrap(); // clamped to high_max
    /// assert!(high > 0);
    /// ```
    pub fn set_pageset_high(&self, cpu: usize, zone_index: u16, high_pages: u64) -> Option<u64> {
        let zone = self.zones.get(zone_index as usize)?;
        let slot = zone.pcp.get(cpu)?;
        Some(u64::from(pcp::set_high(slot, &self.platform, high_pages)))
    }

    /// A CPU went offline: return its cached pages (mirrors page_alloc_cpu_dead()).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::{Platform, TestPlatform};
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap();
    /// let cpu = allocator.platform().current_cpu();
    /// assert!(allocator.cpu_offline(cpu) > 0); // its pageset goes back to the buddy
    /// ```
    pub fn cpu_offline(&self, cpu: usize) -> u64 {
        self.drain_cpu_pagesets(cpu, DrainCause::CpuOffline)
    }
}
