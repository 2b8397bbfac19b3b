//! The high-order atomic reserve: after a non-blocking order > 0 allocation succeeds, its
//! pageblock is set aside (up to ~1% of the zone) so later atomic high-order requests find
//! blocks (mirrors reserve_highatomic_pageblock()).

use core::sync::atomic::Ordering::Relaxed;

use crate::buddy::BuddyZone;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};
use crate::zone_state::ZoneState;

fn reserve_limit_pages(zone: &ZoneState) -> Option<u64> {
    let one_percent = zone.managed_pages() / 100;
    (one_percent >= PAGEBLOCK_PAGES).then(|| one_percent.next_multiple_of(PAGEBLOCK_PAGES))
}

/// Reserves the pageblock(s) of the block just allocated at `pfn`.
#[cold]
#[inline(never)]
pub(crate) fn reserve_pageblock<P: Platform>(buddy: BuddyZone<'_, P>, pfn: Pfn, order: u8) {
    let zone = &buddy.core.state;
    let Some(limit_pages) = reserve_limit_pages(zone) else { return };
    if zone.reserved_highatomic_pages() >= limit_pages {
        return;
    }
    let mut ctx = buddy.lock();
    if zone.reserved_highatomic_pages() >= limit_pages {
        return;
    }
    let current = buddy.mem.pageblock_type(pfn);
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
    let reserved_now = zone.reserved_highatomic_pages.fetch_add(reserved_pages, Relaxed) + reserved_pages;
    debug_assert!(
        reserved_now <= limit_pages + (1 << crate::types::MAX_ORDER),
        "reserve {reserved_now} over its limit"
    );
}

/// Gives one reserved pageblock (or one larger free reserved block) back to `migratetype`
/// when allocations are about to fail; returns whether anything was released (mirrors
/// unreserve_highatomic_pageblock()).
pub(crate) fn unreserve_pageblock<P: Platform>(buddy: BuddyZone<'_, P>, migratetype: MigrateType) -> bool {
    let zone = &buddy.core.state;
    if zone.reserved_highatomic_pages() == 0 {
        return false;
    }
    let mut ctx = buddy.lock();
    let Some((pfn, order)) = (0..crate::types::NR_ORDERS).find_map(|order| {
        let index = ctx.area.lists[order][MigrateType::HighAtomic.index()].head()?;
        Some((ctx.mem.pfn(index), order as u8))
    }) else {
        return false;
    };
    let released_pages = if order >= PAGEBLOCK_ORDER {
        ctx.del_free(pfn, order, MigrateType::HighAtomic);
        ctx.set_pageblock_range_type(pfn, order, migratetype);
        ctx.add_free(pfn, order, migratetype, true);
        1 << order
    } else {
        let Some((start, end)) = ctx.whole_pageblock(pfn) else { return false };
        ctx.move_pageblock(start, end, MigrateType::HighAtomic, migratetype);
        PAGEBLOCK_PAGES
    };
    zone.reserved_highatomic_pages.fetch_sub(released_pages, Relaxed);
    true
}

#[cfg(test)]
mod tests {
    use core::sync::atomic::Ordering::Relaxed;

    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;
    use crate::types::{MigrateType, ZoneType, MAX_ORDER, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};
    use crate::PageAllocator;

    /// A reserved pageblock that is one free block, beside a free MOVABLE buddy pageblock,
    /// given back to MOVABLE: the zone stays valid.
    #[test]
    fn an_unreserved_free_pageblock_beside_a_free_buddy_leaves_a_valid_zone() {
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 128 * PAGEBLOCK_PAGES);
        let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
        let zone = &allocator.zones()[0];
        let start = zone.start_pfn().next_multiple_of(1 << MAX_ORDER);
        {
            let mut ctx = zone.buddy(allocator.platform()).lock();
            ctx.del_free(start, MAX_ORDER, MigrateType::Movable);
            ctx.add_free(start + PAGEBLOCK_PAGES, PAGEBLOCK_ORDER, MigrateType::Movable, true);
            ctx.set_pageblock_range_type(start, PAGEBLOCK_ORDER, MigrateType::HighAtomic);
            ctx.add_free(start, PAGEBLOCK_ORDER, MigrateType::HighAtomic, true);
        }
        zone.state().reserved_highatomic_pages.fetch_add(PAGEBLOCK_PAGES, Relaxed);
        allocator.check_invariants().unwrap();
        assert!(super::unreserve_pageblock(zone.buddy(allocator.platform()), MigrateType::Movable));
        assert_eq!(zone.state().reserved_highatomic_pages(), 0);
        allocator.check_invariants().unwrap();
    }
}
