//! A firmware memory map in, zones and holes out: zone types by address, holes from the
//! gaps, and every malformed map refused with a typed error.

#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::builder::{MemoryMapError, MemoryRegion};
use pagealloc::platform::TestPlatform;
use pagealloc::{AllocRequest, AllocatorBuilder, BuildError, PageAllocator, PhysAddr, ZoneType};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn region(start: u64, end: u64) -> MemoryRegion {
    MemoryRegion::new(PhysAddr(start), PhysAddr(end))
}

fn build(builder: AllocatorBuilder, cpus: usize) -> Result<TestAllocator, BuildError> {
    PageAllocator::build(builder, TestPlatform::new(cpus))
}

/// (zone type, node, first pfn, spanned pages, managed pages) of every zone.
fn zones(allocator: &TestAllocator) -> Vec<(ZoneType, u16, u64, u64, u64)> {
    let zone = |z: &pagealloc::zone::Zone<TestPlatform>| {
        (z.state().zone_type(), z.state().node(), z.start_pfn(), z.spanned_pages(), z.state().managed_pages())
    };
    allocator.zones().iter().map(zone).collect()
}

#[test]
fn a_pc_map_with_holes_becomes_dma_dma32_and_normal_zones() {
    // Three usable regions as an E820 map gives them: low memory below 640 KiB (its first
    // page kept by the firmware), 1 MiB up to 1 GiB, and 512 MiB above 4 GiB.
    let map = [region(0x1000, 0x9f000), region(MIB, GIB), region(4 * GIB, 4 * GIB + 512 * MIB)];
    let allocator = build(AllocatorBuilder::new().memory_map(&map), 2).unwrap();
    assert_eq!(
        zones(&allocator),
        [
            (ZoneType::Dma, 0, 1, 4095, 0x9e + (16 * MIB - MIB) / 4096),
            (ZoneType::Dma32, 0, 4096, GIB / 4096 - 4096, GIB / 4096 - 4096),
            (ZoneType::Normal, 0, 1 << 20, 512 * MIB / 4096, 512 * MIB / 4096),
        ]
    );
    // The gap 640 KiB..1 MiB is a hole: no allocation reaches it.
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::DMA) {
        assert!(!(0x9f..0x100).contains(&block.pfn()), "a hole was handed out");
        held.push(block);
    }
    // Down to the DMA zone's min watermark.
    assert!(held.len() as u64 > allocator.zones()[0].state().managed_pages() * 3 / 4, "{} pages", held.len());
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn partial_frames_are_trimmed_and_touching_regions_merge() {
    // Byte ends inside frames: the partial frames are left out. Overlapping and touching
    // regions of one node merge into one.
    let map = [region(4 * GIB + 0x123, 4 * GIB + 64 * MIB - 1), region(4 * GIB + 32 * MIB, 4 * GIB + 96 * MIB)];
    let allocator = build(AllocatorBuilder::new().memory_map(&map), 1).unwrap();
    let first = (4 * GIB) / 4096 + 1;
    assert_eq!(
        zones(&allocator),
        [(ZoneType::Normal, 0, first, (4 * GIB + 96 * MIB) / 4096 - first, (4 * GIB + 96 * MIB) / 4096 - first)]
    );
}

#[test]
fn nodes_and_hot_pluggable_memory_get_their_own_zones() {
    let map = [
        region(16 * MIB, 2 * GIB).on_node(0),
        region(4 * GIB, 6 * GIB).on_node(0),
        region(6 * GIB, 8 * GIB).on_node(1),
        region(8 * GIB, 9 * GIB).on_node(1).movable(),
    ];
    let allocator = build(AllocatorBuilder::new().node(2).node(2).memory_map(&map), 4).unwrap();
    let kinds: Vec<(ZoneType, u16)> = zones(&allocator).iter().map(|z| (z.0, z.1)).collect();
    assert_eq!(kinds, [(ZoneType::Dma32, 0), (ZoneType::Normal, 0), (ZoneType::Normal, 1), (ZoneType::Movable, 1)]);
    assert_eq!(allocator.counters().managed_pages(), (2 * GIB - 16 * MIB + 5 * GIB) / 4096);
    allocator.check_invariants().unwrap();
}

#[test]
fn malformed_maps_are_refused_with_a_typed_error() {
    let refused = |map: &[MemoryRegion]| build(AllocatorBuilder::new().node(1).node(1).memory_map(map), 2).err();
    assert_eq!(
        refused(&[region(GIB, MIB)]),
        Some(BuildError::MemoryMap(MemoryMapError::Inverted { start: PhysAddr(GIB), end: PhysAddr(MIB) }))
    );
    // Two nodes claiming the same frames; hot-pluggable and fixed memory overlapping.
    assert_eq!(
        refused(&[region(4 * GIB, 6 * GIB), region(5 * GIB, 7 * GIB).on_node(1)]),
        Some(BuildError::MemoryMap(MemoryMapError::Conflict { at: PhysAddr(5 * GIB) }))
    );
    assert_eq!(
        refused(&[region(4 * GIB, 6 * GIB), region(5 * GIB, 7 * GIB).movable()]),
        Some(BuildError::MemoryMap(MemoryMapError::Conflict { at: PhysAddr(5 * GIB) }))
    );
    // Nothing a whole frame long, or nothing at all.
    assert_eq!(refused(&[region(0x10, 0xff0)]), Some(BuildError::MemoryMap(MemoryMapError::NoMemory)));
    assert_eq!(refused(&[]), Some(BuildError::MemoryMap(MemoryMapError::NoMemory)));
    // Zones of two nodes interleaving: the description is refused, not guessed.
    let interleaved = [region(4 * GIB, 5 * GIB), region(5 * GIB, 6 * GIB).on_node(1), region(6 * GIB, 7 * GIB)];
    assert!(matches!(refused(&interleaved), Some(BuildError::Overlap { .. })));
    // A node the CPUs were not declared for.
    let unknown = build(AllocatorBuilder::new().node(2).memory_map(&[region(4 * GIB, 5 * GIB).on_node(3)]), 2);
    assert!(matches!(unknown.err(), Some(BuildError::UnknownNode { .. })));
    for error in [MemoryMapError::NoMemory, MemoryMapError::Conflict { at: PhysAddr(GIB) }] {
        assert!(!BuildError::MemoryMap(error).to_string().is_empty());
    }
}

#[test]
fn addresses_and_frames_convert_both_ways() {
    assert_eq!(PhysAddr(0x1fff).pfn_down(), 1);
    assert_eq!(PhysAddr(0x1fff).pfn_up(), 2);
    assert_eq!(PhysAddr(0x2000).pfn_up(), 2);
    assert_eq!(PhysAddr::of_pfn(2), PhysAddr(0x2000));
    assert!(PhysAddr(0x2000).is_page_aligned() && !PhysAddr(0x2001).is_page_aligned());
    let allocator = single_zone(ZoneType::Normal, 4096);
    let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    assert_eq!(block.phys_addr().pfn_down(), block.pfn());
    allocator.free_pages(block).unwrap();
}

/// Regions are merged in bytes before they are trimmed to whole frames (as memblock merges
/// regions, then rounds each inward): a frame split between two adjacent regions of one
/// node is memory, not a hole.
#[test]
fn a_frame_split_between_adjacent_regions_is_memory() {
    let map = [region(4 * GIB, 4 * GIB + 0x1800), region(4 * GIB + 0x1800, 4 * GIB + 64 * MIB)];
    let allocator = build(AllocatorBuilder::new().memory_map(&map), 1).unwrap();
    let pages = 64 * MIB / 4096;
    assert_eq!(zones(&allocator), [(ZoneType::Normal, 0, (4 * GIB) / 4096, pages, pages)]);
    allocator.check_invariants().unwrap();
    // Two nodes meeting inside a frame: the frame is neither's, a hole between their zones.
    let map = [
        region(4 * GIB, 4 * GIB + 64 * MIB + 0x800),
        region(4 * GIB + 64 * MIB + 0x800, 4 * GIB + 128 * MIB).on_node(1),
    ];
    let allocator = build(AllocatorBuilder::new().node(1).node(1).memory_map(&map), 2).unwrap();
    let first = (4 * GIB) / 4096;
    assert_eq!(
        zones(&allocator),
        [(ZoneType::Normal, 0, first, pages, pages), (ZoneType::Normal, 1, first + pages + 1, pages - 1, pages - 1)]
    );
}

/// Two nodes claiming the same bytes conflict, also when the bytes lie inside one frame
/// that trimming would leave to neither.
#[test]
fn a_byte_overlap_of_two_nodes_inside_one_frame_is_a_conflict() {
    let map = [region(4 * GIB, 4 * GIB + 0x1800), region(4 * GIB + 0x1400, 4 * GIB + 64 * MIB).on_node(1)];
    let refused = build(AllocatorBuilder::new().node(1).node(1).memory_map(&map), 2).err();
    assert_eq!(refused, Some(BuildError::MemoryMap(MemoryMapError::Conflict { at: PhysAddr(4 * GIB + 0x1400) })));
}

/// Memory past the highest frame number a block names is refused, whatever zone it would
/// fill: Normal as Movable, nothing clipped silently.
#[test]
fn regions_past_the_frame_limit_are_refused_in_every_zone() {
    let limit = PhysAddr::of_pfn(pagealloc::types::PFN_LIMIT);
    let past = region(limit.0 - GIB, limit.0 + GIB);
    let refused = MemoryMapError::AboveLimit { end: PhysAddr(limit.0 + GIB), limit };
    for map in [[past], [past.movable()]] {
        let error = build(AllocatorBuilder::new().memory_map(&map), 1).err();
        assert_eq!(error, Some(BuildError::MemoryMap(refused)), "{map:?}");
    }
    assert!(!BuildError::MemoryMap(refused).to_string().is_empty());
    // A partial frame past the limit is trimmed, as at any region's end: nothing refused.
    let map = [region(limit.0 - GIB, limit.0 + 0x800)];
    let allocator = build(AllocatorBuilder::new().memory_map(&map), 1).unwrap();
    assert_eq!(allocator.zones()[0].start_pfn() + allocator.zones()[0].spanned_pages(), limit.pfn_down());
}
