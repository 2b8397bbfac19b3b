//! The debugfs fragmentation index files (extfrag/unusable_index, extfrag/extfrag_index);
//! the indices themselves are compaction's (`compaction::index`).

use core::fmt::{self, Write};

use crate::allocator::PageAllocator;
use crate::platform::Platform;
use crate::types::NR_ORDERS;

pub use crate::compaction::{extfrag_index_milli, unusable_index_milli, ContigInfo};

fn write_index<P: Platform>(
    out: &mut impl Write,
    allocator: &PageAllocator<P>,
    index: fn(usize, &ContigInfo) -> i64,
    pad_units: bool,
) -> fmt::Result {
    for zone in allocator.zones().iter().filter(|zone| zone.state().is_populated()) {
        let blocks = zone.with_free_area(allocator.platform(), |area| {
            core::array::from_fn::<u64, NR_ORDERS, _>(|order| area.blocks_of_order(order))
        });
        write!(out, "Node {}, zone {:>8} ", zone.state().node(), zone.state().zone_type().kernel_name())?;
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
