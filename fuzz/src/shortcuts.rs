//! What the builder's shortcut constructors (`AllocatorBuilder::single_zone`, `pc_layout`)
//! document about the zones and reservations they create. Both targets describe the machines
//! they build independently of the builder; this is the one place those documented facts are
//! written down, so the two descriptions cannot drift apart.

use std::ops::Range;

use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::types::Pfn;
use pagealloc::ZoneType;

/// The reservations `pc_layout` makes itself: pfn 0 and the legacy 640 KiB - 1 MiB hole.
pub const PC_LAYOUT_RESERVES: [Range<Pfn>; 2] = [0..1, 0xa0..0x100];

/// Where `single_zone` starts a zone of `zone_type`: the start of its physical range.
pub fn single_zone_base(zone_type: ZoneType) -> Pfn {
    match zone_type {
        ZoneType::Dma => 0,
        ZoneType::Dma32 => DMA32_START_PFN,
        _ => NORMAL_START_PFN,
    }
}

/// The zones `pc_layout(mib)` creates, all on node 0: DMA below 16 MiB, DMA32 up to 3 GiB,
/// Normal from 4 GiB for the rest.
pub fn pc_layout_zones(mib: u64) -> Vec<(ZoneType, Range<Pfn>)> {
    let pages = mib.saturating_mul(256);
    let pci_hole = 3 << 18;
    let mut zones = vec![(ZoneType::Dma, 0..pages.min(DMA32_START_PFN))];
    if pages > DMA32_START_PFN {
        zones.push((ZoneType::Dma32, DMA32_START_PFN..pages.min(pci_hole)));
    }
    if pages > pci_hole {
        zones.push((ZoneType::Normal, NORMAL_START_PFN..NORMAL_START_PFN.saturating_add(pages - pci_hole)));
    }
    zones
}
