//! Whether compaction can help a zone, and when a run is done (mirrors
//! __compaction_suitable(), compaction_suit_allocation_order() and __compact_finished()).

use core::sync::atomic::Ordering::Relaxed;

use super::index::{extfrag_index_milli, ContigInfo};
use crate::request::AllocFlags;
use crate::types::{MigrateType, ZoneType, COSTLY_ORDER, NR_ORDERS, PAGEBLOCK_ORDER};
use crate::watermark::{watermark_ok, WatermarkView};
use crate::zone_mem::ZoneMem;

/// How a compaction attempt ended (mirrors `enum compact_result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactResult {
    /// Not tried: no client, too little free memory to move pages into, or a failure that
    /// is better served by reclaim (extfrag index at or below `extfrag_threshold`).
    Skipped,
    /// Not tried: recent runs for this order failed (deferral).
    Deferred,
    /// The goal was met: a block of the order is free, or the score fell far enough.
    Success,
    /// The scanners met without meeting the goal.
    Complete,
    /// The free scanner found no free page to move into (it stopped at the min watermark)
    /// before the scanners met: the run stopped early, and its positions stay for the next
    /// one (COMPACT_CONTENDED as compact_zone() returns it when migrate_pages() fails for
    /// want of targets).
    Contended,
}

impl CompactResult {
    /// The kernel's ranking of outcomes, as try_to_compact_pages() keeps the best over
    /// zones (the order of `enum compact_result`): Skipped < Deferred < Complete <
    /// Contended < Success.
    pub fn rank(self) -> u8 {
        match self {
            CompactResult::Skipped => 0,
            CompactResult::Deferred => 1,
            CompactResult::Complete => 2,
            CompactResult::Contended => 3,
            CompactResult::Success => 4,
        }
    }
}

/// Has the zone enough free memory above its watermark for compaction to move pages into,
/// and is a failure at `order` due to fragmentation rather than lack of memory? `blocks`
/// counts free blocks per order (read under the zone lock).
pub(crate) fn compaction_suitable(
    zone: WatermarkView<'_>,
    order: u8,
    highest_zone: ZoneType,
    extfrag_threshold: u32,
    blocks: &[u64; NR_ORDERS],
) -> bool {
    // Boosted, as low_wmark_pages() and min_wmark_pages() read them.
    let marks = &zone.state.watermarks_with_boost();
    // Costly orders need the low watermark, cheap ones the min; plus room for the copies
    // (compact_gap(): twice the request).
    let base = if order > COSTLY_ORDER { marks.low_pages } else { marks.min_pages };
    let mark = base + (2u64 << order);
    let free_pages = zone.mem.free_pages();
    if !watermark_ok(zone, 0, mark, highest_zone, AllocFlags::PLAIN, free_pages) {
        return false;
    }
    if order > COSTLY_ORDER {
        let index = extfrag_index_milli(order as usize, &ContigInfo::from_blocks(blocks, order as usize));
        if index >= 0 && index <= i64::from(extfrag_threshold) {
            return false;
        }
    }
    true
}

/// Is a free block of `order` or larger there for `migratetype`, natively or as a fallback
/// it would claim whole (the free-list test of __compact_finished())? Reads the lockless
/// summary.
pub(crate) fn target_block_free(mem: &ZoneMem, order: u8, migratetype: MigrateType, whole_blocks_only: bool) -> bool {
    let native = 1u8 << migratetype.index();
    let fallbacks = migratetype.fallbacks().iter().fold(0u8, |mask, fallback| mask | 1 << fallback.index());
    (order as usize..NR_ORDERS).any(|current| {
        let nonempty = mem.summary.nonempty_types[current].load(Relaxed);
        // A fallback claim is tried for blocks of half a pageblock or more, or for any
        // unmovable or reclaimable request (should_try_claim_block()).
        let claims = if whole_blocks_only {
            current >= PAGEBLOCK_ORDER as usize
        } else {
            current >= (PAGEBLOCK_ORDER / 2) as usize || migratetype != MigrateType::Movable
        };
        nonempty & native != 0 || (claims && nonempty & fallbacks != 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::PageAllocator;
    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;

    /// __compaction_suitable() reads the boosted watermarks: a boost that puts the free
    /// count below low + boost + the gap makes compaction unsuitable, as reclaim must
    /// come first.
    #[test]
    fn compaction_suitability_counts_the_watermark_boost() {
        let allocator =
            PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 14), TestPlatform::new(1))
                .unwrap();
        let zone = &allocator.zones()[0];
        let order = 9;
        let blocks: [u64; NR_ORDERS] = core::array::from_fn(|current| u64::from(current == 0) * zone.free_pages());
        assert!(compaction_suitable(zone.watermark_view(), order, ZoneType::Normal, 500, &blocks));
        let needed = zone.state().watermarks().low_pages + (2u64 << order);
        zone.state().boost_pages.store(zone.free_pages() - needed, Relaxed);
        assert!(!compaction_suitable(zone.watermark_view(), order, ZoneType::Normal, 500, &blocks));
        zone.state().boost_pages.store(0, Relaxed);
    }
}
