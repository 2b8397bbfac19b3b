//! The watermark check (mirrors __zone_watermark_ok() and zone_watermark_fast()).

use core::sync::atomic::Ordering::Relaxed;

use crate::request::{AllocFlags, WatermarkLevel};
use crate::types::{ZoneType, NR_ORDERS, NR_PCP_TYPES};
use crate::zone_mem::ZoneMem;
use crate::zone_state::ZoneState;

/// What a watermark check reads: the zone's marks and boost, and its free summary.
#[derive(Clone, Copy)]
pub(crate) struct WatermarkView<'a> {
    pub state: &'a ZoneState,
    pub mem: &'a ZoneMem,
}

/// The boosted watermark an attempt with `level` must pass.
#[inline]
pub(crate) fn mark_pages(zone: &ZoneState, level: WatermarkLevel) -> u64 {
    let marks = &zone.params.watermarks();
    debug_assert!(marks.min_pages <= marks.low_pages && marks.low_pages <= marks.high_pages);
    let base = match level {
        WatermarkLevel::Min => marks.min_pages,
        WatermarkLevel::Low => marks.low_pages,
        WatermarkLevel::High => marks.high_pages,
    };
    base + zone.boost_pages()
}

/// Free pages a request cannot use: the free part of the high-order atomic reserve, unless
/// it has reserve access (mirrors __zone_watermark_unusable_free(), v6.12+ accounting).
#[inline]
fn unusable_reserve_pages(zone: WatermarkView<'_>, flags: AllocFlags) -> u64 {
    if flags.uses_reserves() {
        0
    } else {
        zone.mem.free_highatomic_pages()
    }
}

/// Would taking a block of `order` leave more than `mark` plus the lowmem reserve free?
/// For order > 0 a free block of at least that order must exist too.
#[inline]
pub(crate) fn watermark_ok(
    zone: WatermarkView<'_>,
    order: u8,
    mark: u64,
    highest_zone: ZoneType,
    flags: AllocFlags,
    free_pages: u64,
) -> bool {
    debug_assert!((order as usize) < NR_ORDERS, "order {order}");
    let unusable_pages = (1u64 << order) - 1 + unusable_reserve_pages(zone, flags);
    let usable_pages = free_pages as i64 - unusable_pages as i64;
    let mut min = mark as i64;
    if flags.min_reserve {
        min -= min / 2;
        if flags.non_block {
            min -= min / 4;
        }
    }
    // Reserve access lowers the mark, never below zero nor above where it was.
    debug_assert!(min >= 0 && min <= mark as i64);
    if usable_pages <= min + zone.state.params.lowmem_reserve(highest_zone) as i64 {
        return false;
    }
    if order == 0 {
        return true;
    }
    let pcp_types_mask = (1u8 << NR_PCP_TYPES) - 1;
    let highatomic_bit = 1u8 << crate::types::MigrateType::HighAtomic.index();
    (order as usize..NR_ORDERS).any(|current| {
        let nonempty = zone.mem.summary.nonempty_types[current].load(Relaxed);
        nonempty & pcp_types_mask != 0 || (flags.highatomic && nonempty & highatomic_bit != 0)
    })
}

/// Watermark check with the order-0 shortcut and the boost exemption for high-priority
/// order-0 requests at the min watermark.
#[inline]
pub(crate) fn watermark_fast(
    zone: WatermarkView<'_>,
    order: u8,
    mark: u64,
    highest_zone: ZoneType,
    flags: AllocFlags,
) -> bool {
    debug_assert!((order as usize) < NR_ORDERS, "order {order}");
    let free_pages = zone.mem.free_pages();
    if order == 0 {
        let usable_pages = free_pages.saturating_sub(unusable_reserve_pages(zone, flags));
        if usable_pages > mark + zone.state.params.lowmem_reserve(highest_zone) {
            return true;
        }
    }
    if watermark_ok(zone, order, mark, highest_zone, flags, free_pages) {
        return true;
    }
    if order == 0 && flags.min_reserve && flags.watermark == WatermarkLevel::Min && zone.state.boost_pages() > 0 {
        return watermark_ok(zone, order, zone.state.params.watermarks().min_pages, highest_zone, flags, free_pages);
    }
    false
}
