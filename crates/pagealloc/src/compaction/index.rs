//! Fragmentation indices (mirrors fill_contig_page_info(), unusable_free_index(),
//! __fragmentation_index() and fragmentation_score_zone()), in thousandths as the kernel
//! computes them, and the v5.9 fragmentation score in percent. Compaction consults them to
//! decide whether it can help (the extfrag index against `extfrag_threshold`) and when
//! proactive compaction is done (the score against its watermarks).

use crate::types::{NR_ORDERS, PAGEBLOCK_ORDER};

/// Free memory seen from one target order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContigInfo {
    pub free_pages: u64,
    pub free_blocks_total: u64,
    /// Blocks of the target order that the free blocks of that order or above could yield.
    pub free_blocks_suitable: u64,
}

impl ContigInfo {
    /// From free block counts per order.
    pub fn from_blocks(blocks_per_order: &[u64; NR_ORDERS], target_order: usize) -> ContigInfo {
        let mut info = ContigInfo::default();
        for (order, &blocks) in blocks_per_order.iter().enumerate() {
            info.free_blocks_total += blocks;
            info.free_pages += blocks << order;
            if order >= target_order {
                info.free_blocks_suitable += blocks << (order - target_order);
            }
        }
        info
    }
}

/// Share of free memory unusable for `order`, 0..=1000 (1000 when nothing is free).
pub fn unusable_index_milli(order: usize, info: &ContigInfo) -> i64 {
    if info.free_pages == 0 {
        return 1000;
    }
    (((info.free_pages - (info.free_blocks_suitable << order)) * 1000) / info.free_pages) as i64
}

/// External fragmentation index for `order`: -1000 when a suitable block exists, towards
/// 0 when failure is due to lack of memory, towards 1000 when due to fragmentation.
pub fn extfrag_index_milli(order: usize, info: &ContigInfo) -> i64 {
    if info.free_blocks_total == 0 {
        return 0;
    }
    if info.free_blocks_suitable > 0 {
        return -1000;
    }
    let requested = 1u64 << order;
    1000 - ((1000 + info.free_pages * 1000 / requested) / info.free_blocks_total) as i64
}

/// Percent of free memory not in free blocks of `order` or larger (mirrors
/// extfrag_for_order()); 0 when nothing is free.
pub fn extfrag_for_order_pct(blocks_per_order: &[u64; NR_ORDERS], order: usize) -> u64 {
    let info = ContigInfo::from_blocks(blocks_per_order, order);
    if info.free_pages == 0 {
        return 0;
    }
    (info.free_pages - (info.free_blocks_suitable << order)) * 100 / info.free_pages
}

/// A zone's fragmentation score, 0..=100: the free memory it could not hand out as
/// pageblock-order blocks (mirrors fragmentation_score_zone(), COMPACTION_HPAGE_ORDER).
pub fn fragmentation_score_pct(blocks_per_order: &[u64; NR_ORDERS]) -> u64 {
    extfrag_for_order_pct(blocks_per_order, PAGEBLOCK_ORDER as usize)
}

/// The proactive-compaction watermarks for a proactiveness of 0..=100: compaction starts
/// above `high` and stops at or below `low` (mirrors fragmentation_score_wmark()).
pub fn fragmentation_score_wmarks(proactiveness: u32) -> (u64, u64) {
    let low = 100u64.saturating_sub(u64::from(proactiveness.min(100))).max(5);
    (low, (low + 10).min(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_match_kernel_definitions() {
        // 8 order-0 blocks free, nothing larger.
        let mut blocks = [0u64; NR_ORDERS];
        blocks[0] = 8;
        let order2 = ContigInfo::from_blocks(&blocks, 2);
        assert_eq!(unusable_index_milli(2, &order2), 1000);
        // 1000 - (1000 + 8*1000/4) / 8 = 1000 - 375 = 625
        assert_eq!(extfrag_index_milli(2, &order2), 625);
        let order0 = ContigInfo::from_blocks(&blocks, 0);
        assert_eq!(unusable_index_milli(0, &order0), 0);
        assert_eq!(extfrag_index_milli(0, &order0), -1000);
        assert_eq!(unusable_index_milli(3, &ContigInfo::default()), 1000);
        assert_eq!(extfrag_index_milli(3, &ContigInfo::default()), 0);
    }

    #[test]
    fn fragmentation_score_counts_free_memory_below_pageblock_order() {
        let mut blocks = [0u64; NR_ORDERS];
        blocks[0] = 512;
        blocks[9] = 1;
        assert_eq!(fragmentation_score_pct(&blocks), 50);
        blocks[10] = 1;
        assert_eq!(fragmentation_score_pct(&blocks), 25);
        assert_eq!(fragmentation_score_pct(&[0; NR_ORDERS]), 0);
        // Default proactiveness 20: start above 90, stop at 80.
        assert_eq!(fragmentation_score_wmarks(20), (80, 90));
        assert_eq!(fragmentation_score_wmarks(100), (5, 15));
        assert_eq!(fragmentation_score_wmarks(0), (100, 100));
    }
}
