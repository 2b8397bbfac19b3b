//! The high-order atomic reserve: after a non-blocking order > 0 allocation succeeds, its
//! pageblock is set aside (up to ~1% of the zone) so later atomic high-order requests find
//! blocks (mirrors reserve_highatomic_pageblock()).

use core::sync::atomic::Ordering::Relaxed;

use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};
use crate::zone::Zone;

fn reserve_limit_pages<P: Platform>(zone: &Zone<P>) -> Option<u64> {
    let one_percent = zone.managed_pages / 100;
    (one_percent >= PAGEBLOCK_PAGES).then(|| one_percent.next_multiple_of(PAGEBLOCK_PAGES))
}

/// Reserves the pageblock(s) of the block just allocated at `pfn`.
#[cold]
#[inline(never)]
pub(crate) fn reserve_pageblock<P: Platform>(zone: &Zone<P>, platform: &P, pfn: Pfn, order: u8) {
    let Some(limit_pages) = reserve_limit_pages(zone) else { return };
    if zone.reserved_highatomic_pages() >= limit_pages {
        return;
    }
    let mut area = zone.free.lock(platform);
    let mut ctx = zone.buddy(&mut area, platform);
    if zone.reserved_highatomic_pages() >= limit_pages {
        return;
    }
    let current = zone.mem.pageblock_type(pfn);
    if !current.is_mergeable() {
        return;
    }
    let reserved_pages = if order < PAGEBLOCK_ORDER {
        let Some((start, end)) = ctx.whole_pageblock(pfn) else { return };
        ctx.move_pageblock(start, end, current, MigrateType::HighAtomic);
        PAGEBLOCK_PAGES
    } else {
        ctx.set_pageblock_range_type(pfn, order, MigrateType::HighAtomic);
        1 << order
    };
    zone.reserved_highatomic_pages.fetch_add(reserved_pages, Relaxed);
}
