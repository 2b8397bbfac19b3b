//! /proc/buddyinfo and /proc/pagetypeinfo.

use core::fmt::{self, Write};

use crate::allocator::PageAllocator;
use crate::platform::Platform;
use crate::types::{MigrateType, NR_MIGRATETYPES, NR_ORDERS, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

/// Free blocks per order for each populated zone.
pub fn write_buddyinfo<P: Platform>(out: &mut impl Write, allocator: &PageAllocator<P>) -> fmt::Result {
    for zone in allocator.zones().iter().filter(|zone| zone.state().is_populated()) {
        let counts = zone.with_free_area(allocator.platform(), |area| {
            core::array::from_fn::<u64, NR_ORDERS, _>(|order| area.blocks_of_order(order))
        });
        write!(out, "Node {}, zone {:>8} ", zone.state().node(), zone.state().zone_type().kernel_name())?;
        for count in counts {
            write!(out, "{count:>6} ")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Free blocks per migratetype and order, and pageblocks per type, per node.
pub fn write_pagetypeinfo<P: Platform>(out: &mut impl Write, allocator: &PageAllocator<P>) -> fmt::Result {
    for node in 0..allocator.nodes().len() as u16 {
        let zones = || allocator.zones().iter().filter(move |z| z.state().node() == node && z.state().is_populated());
        writeln!(out, "Page block order: {PAGEBLOCK_ORDER}")?;
        writeln!(out, "Pages per block:  {PAGEBLOCK_PAGES}")?;
        writeln!(out)?;
        write!(out, "{:<43} ", "Free pages count per migrate type at order")?;
        for order in 0..NR_ORDERS {
            write!(out, "{order:>6} ")?;
        }
        writeln!(out)?;
        for zone in zones() {
            let counts = zone.with_free_area(allocator.platform(), |area| {
                core::array::from_fn::<[u64; NR_ORDERS], NR_MIGRATETYPES, _>(|mt| {
                    core::array::from_fn(|order| area.blocks(order, mt))
                })
            });
            for migratetype in MigrateType::ALL {
                write!(
                    out,
                    "Node {:>4}, zone {:>8}, type {:>12} ",
                    node,
                    zone.state().zone_type().kernel_name(),
                    migratetype.kernel_name()
                )?;
                for count in counts[migratetype.index()] {
                    write!(out, "{count:>6} ")?;
                }
                writeln!(out)?;
            }
        }
        write!(out, "\n{:<23}", "Number of blocks type ")?;
        for migratetype in MigrateType::ALL {
            write!(out, "{:>12} ", migratetype.kernel_name())?;
        }
        writeln!(out)?;
        for zone in zones() {
            write!(out, "Node {}, zone {:>8} ", node, zone.state().zone_type().kernel_name())?;
            for count in zone.pageblock_counts() {
                write!(out, "{count:>12} ")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}
