//! A firmware memory map in, zones and holes out: each node's usable RAM is split into
//! zones by address as Linux does on x86-64 (DMA below 16 MiB, DMA32 below 4 GiB, Normal
//! above, hot-pluggable memory in Movable), and the gaps between regions become holes
//! (mirrors what zone_sizes_init() and free_area_init() derive from memblock).

use core::ops::Range;

use super::error::MemoryMapError;
use super::validate::sort_stable_by_key;
use super::{zone_type_limit_pfn, AllocatorBuilder, BuildError};
use crate::table::{Table, FIXED_RANGES};
use crate::types::{Pfn, PhysAddr, ZoneType, PFN_LIMIT};

/// One usable RAM region of a firmware memory map (an E820 "usable" entry, UEFI
/// conventional memory, a device-tree memory node), in bytes: `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    pub start: PhysAddr,
    pub end: PhysAddr,
    pub node: u16,
    /// Hot-pluggable memory, placed in ZONE_MOVABLE (Linux's `movable_node` does so for
    /// memory the firmware marks hot-pluggable).
    pub movable: bool,
}

impl MemoryRegion {
    /// `[start, end)` on node 0, not movable.
    pub const fn new(start: PhysAddr, end: PhysAddr) -> MemoryRegion {
        MemoryRegion { start, end, node: 0, movable: false }
    }

    /// The region on `node`.
    pub const fn on_node(self, node: u16) -> MemoryRegion {
        MemoryRegion { node, ..self }
    }

    /// The region as hot-pluggable memory (ZONE_MOVABLE).
    pub const fn movable(self) -> MemoryRegion {
        MemoryRegion { movable: true, ..self }
    }

    /// The whole frames inside the region (a partial frame at either end is left out, as
    /// memblock trims regions to pages). A map's regions are trimmed after touching ones of
    /// one kind merge.
    pub const fn pfns(&self) -> Range<Pfn> {
        let start = self.start.pfn_up();
        let end = self.end.pfn_down();
        if end > start {
            start..end
        } else {
            start..start
        }
    }
}

/// A region in bytes, as given.
#[derive(Clone, Debug, Default)]
struct Bytes {
    bytes: Range<u64>,
    node: u16,
    movable: bool,
}

/// A region in frames, after merging and trimming.
#[derive(Clone, Debug, Default)]
struct Pages {
    pfns: Range<Pfn>,
    node: u16,
    movable: bool,
}

type Regions = Table<Pages, FIXED_RANGES>;

impl AllocatorBuilder {
    /// Adds the zones and holes a firmware memory map describes: per node, DMA, DMA32 and
    /// Normal zones over the regions' frames by address, a Movable zone over its movable
    /// regions, and every gap between regions as a hole. Declare the nodes' CPUs as
    /// usual ([`Self::node`]); reservations ([`Self::reserve`]) still apply on top.
    ///
    /// Zones of different nodes must not interleave (a zone spans from its node's first
    /// frame of its type to its last); the build refuses such a map with
    /// [`BuildError::Overlap`]. Touching regions of one node and kind merge before partial
    /// frames are trimmed; regions of different nodes or kinds sharing a byte are
    /// [`MemoryMapError::Conflict`], and frames past [`PFN_LIMIT`] in any zone
    /// [`MemoryMapError::AboveLimit`].
    ///
    /// ```
    /// use pagealloc::builder::MemoryRegion;
    /// use pagealloc::{AllocatorBuilder, PageAllocator, PhysAddr, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// const MIB: u64 = 1 << 20;
    /// let map = [
    ///     MemoryRegion::new(PhysAddr(0x1000), PhysAddr(0x9f000)), // below 640 KiB
    ///     MemoryRegion::new(PhysAddr(MIB), PhysAddr(512 * MIB)),
    ///     MemoryRegion::new(PhysAddr(4096 * MIB), PhysAddr(4608 * MIB)),
    /// ];
    /// let builder = AllocatorBuilder::new().memory_map(&map);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// let types: Vec<ZoneType> = allocator.zones().iter().map(|zone| zone.state().zone_type()).collect();
    /// assert_eq!(types, [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]);
    /// assert_eq!(allocator.counters().managed_pages(), 0x9e + (511 * MIB + 512 * MIB) / 4096);
    /// ```
    pub fn memory_map(mut self, regions: &[MemoryRegion]) -> Self {
        match sorted_regions(regions) {
            Ok(sorted) => {
                for pair in sorted.windows(2) {
                    if pair[0].pfns.end < pair[1].pfns.start {
                        self = self.hole(pair[0].pfns.end..pair[1].pfns.start);
                    }
                }
                self.zones_of(&sorted)
            }
            Err(error) => {
                self.note_error(error);
                self
            }
        }
    }

    /// One zone per node and zone type that the sorted regions reach.
    fn zones_of(mut self, sorted: &Regions) -> Self {
        let nodes = sorted.iter().map(|region| region.node + 1).max().unwrap_or(0);
        for node in 0..nodes {
            for zone_type in [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal, ZoneType::Movable] {
                let movable = zone_type == ZoneType::Movable;
                let floor = match zone_type {
                    ZoneType::Dma32 => zone_type_limit_pfn(ZoneType::Dma),
                    ZoneType::Normal => zone_type_limit_pfn(ZoneType::Dma32),
                    _ => 0,
                };
                let ceiling = if movable { Pfn::MAX } else { zone_type_limit_pfn(zone_type) };
                let clipped = sorted
                    .iter()
                    .filter(|region| region.node == node && region.movable == movable)
                    .map(|region| region.pfns.start.max(floor)..region.pfns.end.min(ceiling))
                    .filter(|pfns| pfns.start < pfns.end);
                let span = clipped.fold(None, |span: Option<Range<Pfn>>, pfns| match span {
                    None => Some(pfns),
                    Some(span) => Some(span.start.min(pfns.start)..span.end.max(pfns.end)),
                });
                if let Some(span) = span {
                    self = self.zone(node, zone_type, span);
                }
            }
        }
        self
    }
}

/// The regions by start, overlapping or touching ones of one kind merged in bytes, then
/// trimmed to whole frames (as memblock_add_node() merges regions of one node and flags
/// and for_each_mem_pfn_range() rounds each inward, so a frame split between two regions
/// of one kind is memory); regions left without a whole frame dropped. Two regions of
/// different kinds sharing a byte are a [`MemoryMapError::Conflict`].
fn sorted_regions(regions: &[MemoryRegion]) -> Result<Regions, BuildError> {
    let mut sorted: Table<Bytes, FIXED_RANGES> = Table::new();
    for region in regions {
        if region.end < region.start {
            return Err(MemoryMapError::Inverted { start: region.start, end: region.end }.into());
        }
        if region.start < region.end {
            let bytes = region.start.0..region.end.0;
            let pushed = sorted.push(Bytes { bytes, node: region.node, movable: region.movable });
            pushed.map_err(|full| BuildError::TableFull { table: "memory map regions", capacity: full.capacity })?;
        }
    }
    sort_stable_by_key(&mut sorted, |region| region.bytes.start);
    let mut trimmed = Regions::new();
    let mut current: Option<Bytes> = None;
    for region in sorted.iter() {
        if let Some(last) = current.as_mut() {
            let same_kind = last.node == region.node && last.movable == region.movable;
            if !same_kind && region.bytes.start < last.bytes.end {
                return Err(MemoryMapError::Conflict { at: PhysAddr(region.bytes.start) }.into());
            }
            if same_kind && region.bytes.start <= last.bytes.end {
                last.bytes.end = last.bytes.end.max(region.bytes.end);
                continue;
            }
        }
        if let Some(done) = current.replace(region.clone()) {
            push_trimmed(&mut trimmed, done)?;
        }
    }
    if let Some(done) = current {
        push_trimmed(&mut trimmed, done)?;
    }
    if trimmed.is_empty() {
        return Err(MemoryMapError::NoMemory.into());
    }
    Ok(trimmed)
}

/// A merged region's whole frames, if any; frames past [`PFN_LIMIT`] are refused.
fn push_trimmed(trimmed: &mut Regions, region: Bytes) -> Result<(), BuildError> {
    let pfns = MemoryRegion::new(PhysAddr(region.bytes.start), PhysAddr(region.bytes.end)).pfns();
    if pfns.end > PFN_LIMIT {
        let limit = PhysAddr::of_pfn(PFN_LIMIT);
        return Err(MemoryMapError::AboveLimit { end: PhysAddr(region.bytes.end), limit }.into());
    }
    if !pfns.is_empty() {
        let pages = Pages { pfns, node: region.node, movable: region.movable };
        trimmed.push(pages).expect("no more merged regions than regions");
    }
    Ok(())
}
