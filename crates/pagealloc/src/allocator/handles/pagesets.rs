//! Operations on the per-CPU pagesets from outside the allocation and free paths.

use crate::allocator::PageAllocator;
use crate::pcp::{self, DrainCause};
use crate::platform::Platform;

/// The per-CPU pagesets, operated on from outside the allocation and free paths:
/// explicit drains (mirrors drain_local_pages() and drain_all_pages()) and a pageset's
/// high set as a running kernel's auto-tuning left it. From [`PageAllocator::pagesets`].
#[derive(Clone, Copy)]
pub struct Pagesets<'a, P: Platform> {
    pub(super) allocator: &'a PageAllocator<P>,
}

impl<P: Platform> PageAllocator<P> {
    /// Explicit pageset drains, and a pageset's high set from outside.
    #[inline]
    pub fn pagesets(&self) -> Pagesets<'_, P> {
        Pagesets { allocator: self }
    }
}

impl<P: Platform> Pagesets<'_, P> {
    /// Drains the calling CPU's pagesets (mirrors drain_local_pages()).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap(); // onto this CPU's pageset
    /// assert!(allocator.pagesets().drain_local() > 0);
    /// assert_eq!(allocator.counters().pcp_pages(), 0);
    /// ```
    #[inline]
    pub fn drain_local(&self) -> u64 {
        let allocator = self.allocator;
        allocator.drain_cpu_pagesets(allocator.platform.current_cpu(), DrainCause::Explicit)
    }

    /// Drains every CPU's pagesets that hold pages (mirrors drain_all_pages()).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap(); // onto this CPU's pageset
    /// assert!(allocator.pagesets().drain_all() > 0);    // every pageset back to the buddy
    /// assert_eq!(allocator.counters().buddy_free_pages(), allocator.counters().managed_pages());
    /// ```
    #[inline]
    pub fn drain_all(&self) -> u64 {
        let allocator = self.allocator;
        let drained =
            (0..allocator.platform.nr_cpus()).map(|cpu| allocator.drain_cpu_pagesets(cpu, DrainCause::Explicit)).sum();
        for zone in allocator.zones.iter() {
            zone.buddy(&allocator.platform).release_handed_over();
            zone.buddy(&allocator.platform).collect_parked();
        }
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
    /// let high = allocator.pagesets().set_pageset_high(1, 0, u64::MAX).unwrap(); // clamped to high_max
    /// assert!(high > 0);
    /// ```
    #[inline]
    pub fn set_pageset_high(&self, cpu: usize, zone_index: u16, high_pages: u64) -> Option<u64> {
        let allocator = self.allocator;
        let zone = allocator.zones.get(zone_index as usize)?;
        let slot = zone.pcp.get(cpu)?;
        Some(u64::from(pcp::set_high(slot, &allocator.platform, high_pages)))
    }
}
