//! Fragmentation indices (mirrors fill_contig_page_info(), unusable_free_index() and
//! __fragmentation_index()), in thousandths as the kernel computes them.

use core::fmt::{self, Write};

use crate::allocator::PageAllocator;
use crate::platform::Platform;
use crate::types::NR_ORDERS;

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

fn write_index<P: Platform>(
    out: &mut impl Write,
    allocator: &PageAllocator<P>,
    index: fn(usize, &ContigInfo) -> i64,
    pad_units: bool,
) -> fmt::Result {
    for zone in allocator.zones().iter().filter(|zone| zone.is_populated()) {
        let blocks = zone.with_free_area(allocator.platform(), |area| {
            core::array::from_fn::<u64, NR_ORDERS, _>(|order| area.blocks_of_order(order))
        });
        write!(out, "Node {}, zone {:>8} ", zone.node(), zone.zone_type().kernel_name())?;
        for order in 0..NR_ORDERS {
            let value = index(order, &ContigInfo::from_blocks(&blocks, order));
            let (units, thousandths) = (value / 1000, value % 1000);
            if pad_units {
                write!(out, "{units:>2}.{:03} ", thousandths.abs())?;
            } else {
                write!(out, "{units}.{:03} ", thousandths.abs())?;
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// debugfs extfrag/unusable_index layout.
pub fn write_unusable_index<P: Platform>(out: &mut impl Write, allocator: &PageAllocator<P>) -> fmt::Result {
    write_index(out, allocator, unusable_index_milli, false)
}

/// debugfs extfrag/extfrag_index layout.
pub fn write_extfrag_index<P: Platform>(out: &mut impl Write, allocator: &PageAllocator<P>) -> fmt::Result {
    write_index(out, allocator, extfrag_index_milli, true)
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
}
