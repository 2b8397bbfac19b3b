//! Watermark checks for callers outside the allocation path (background reclaim, compaction,
//! embedders' own balancing): on the published free count, or on the exact one when the
//! published count is within the per-CPU drift of the marks (mirrors zone_watermark_ok(),
//! zone_watermark_ok_safe() and zone_page_state_snapshot(NR_FREE_PAGES)).

use super::PageAllocator;
use crate::platform::Platform;
use crate::request::{AllocFlags, AllocRequest, WatermarkLevel};
use crate::types::ZoneType;
use crate::watermark::{mark_pages, watermark_ok};

impl<P: Platform> PageAllocator<P> {
    /// The exact free pages of zone `zone_index`: the published count plus every CPU's
    /// unpublished diff. Linux sums the diffs without a lock, touching each CPU's line; here
    /// they sit under the zone lock, which this read takes.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let before = allocator.zone_free_pages_snapshot(0);
    /// // Order 4 is above the pageset orders: straight from the buddy, nothing cached.
    /// let block = allocator.alloc_pages(4, AllocRequest::KERNEL).unwrap();
    /// assert_eq!(allocator.zone_free_pages_snapshot(0), before - 16);
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn zone_free_pages_snapshot(&self, zone_index: u16) -> u64 {
        let zone = &self.zones[zone_index as usize];
        zone.with_free_area(&self.platform, |area| area.free_pages())
    }

    /// Would an order-`order` allocation leave zone `zone_index` above its `level` mark (with
    /// boost and the lowmem reserve against `highest_zone`), judged on the published count?
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// use pagealloc::request::WatermarkLevel;
    /// assert!(allocator.zone_watermark_ok(0, 0, WatermarkLevel::High, ZoneType::Normal)); // all free
    /// ```
    pub fn zone_watermark_ok(&self, zone_index: u16, order: u8, level: WatermarkLevel, highest_zone: ZoneType) -> bool {
        let zone = &self.zones[zone_index as usize];
        self.watermark_ok_with(zone_index, order, level, highest_zone, zone.mem().free_pages())
    }

    /// As [`Self::zone_watermark_ok`], but below the zone's `percpu_drift_mark` the check
    /// reads the exact count, so that the drift the per-CPU diffs hide cannot pass a zone
    /// that is in fact below its mark.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// use pagealloc::request::WatermarkLevel;
    /// assert!(allocator.zone_watermark_ok_safe(0, 0, WatermarkLevel::Min, ZoneType::Normal));
    /// ```
    pub fn zone_watermark_ok_safe(
        &self,
        zone_index: u16,
        order: u8,
        level: WatermarkLevel,
        highest_zone: ZoneType,
    ) -> bool {
        let zone = &self.zones[zone_index as usize];
        let mut free_pages = zone.mem().free_pages();
        let drift_mark = zone.state().vmstat.percpu_drift_mark_pages();
        if drift_mark != 0 && free_pages < drift_mark {
            free_pages = self.zone_free_pages_snapshot(zone_index);
        }
        self.watermark_ok_with(zone_index, order, level, highest_zone, free_pages)
    }

    fn watermark_ok_with(
        &self,
        zone_index: u16,
        order: u8,
        level: WatermarkLevel,
        highest_zone: ZoneType,
        free: u64,
    ) -> bool {
        let zone = &self.zones[zone_index as usize];
        let flags = AllocFlags::fast_path(&AllocRequest::KERNEL);
        watermark_ok(zone.watermark_view(), order, mark_pages(zone.state(), level), highest_zone, flags, free)
    }
}
