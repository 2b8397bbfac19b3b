//! The kernel-format views, byte for byte on a small known state.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::views::{write_buddyinfo, write_extfrag_index, write_pagetypeinfo, write_unusable_index};
use pagealloc::ZoneType;

/// One DMA32 zone of 2048 frames (4 pageblocks, two order-10 blocks), nothing allocated.
fn allocator() -> TestAllocator {
    single_zone(ZoneType::Dma32, 2048)
}

#[test]
fn buddyinfo_layout() {
    let mut text = String::new();
    write_buddyinfo(&mut text, &allocator()).unwrap();
    assert_eq!(
        text,
        "Node 0, zone    DMA32      0      0      0      0      0      0      0      0      0      0      2 \n"
    );
}

#[test]
fn pagetypeinfo_layout() {
    let mut text = String::new();
    write_pagetypeinfo(&mut text, &allocator()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Page block order: 9");
    assert_eq!(lines[1], "Pages per block:  512");
    assert_eq!(lines[2], "");
    assert_eq!(
        lines[3],
        "Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10 "
    );
    assert_eq!(
        lines[5],
        "Node    0, zone    DMA32, type      Movable      0      0      0      0      0      0      0      0      0      0      2 "
    );
    assert_eq!(lines[10], "");
    assert_eq!(
        lines[11],
        "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic          CMA      Isolate "
    );
    assert_eq!(
        lines[12],
        "Node 0, zone    DMA32            0            4            0            0            0            0 "
    );
}

#[test]
fn fragmentation_index_layouts() {
    let mut unusable = String::new();
    write_unusable_index(&mut unusable, &allocator()).unwrap();
    assert_eq!(unusable, "Node 0, zone    DMA32 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 0.000 \n");
    let mut extfrag = String::new();
    write_extfrag_index(&mut extfrag, &allocator()).unwrap();
    assert_eq!(
        extfrag,
        "Node 0, zone    DMA32 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 -1.000 \n"
    );
}

/// The heap-free writer of a live allocator prints what the description-shaped writer
/// prints for it: every zone type of every node, pagesets in use included.
#[test]
fn zoneinfo_of_a_live_allocator_needs_no_zone_list() {
    for allocator in [pc_with(64, "mainline", 2), pc_with(64, "pagealloc", 2), single_zone(ZoneType::Normal, 1 << 14)] {
        let held: Vec<_> =
            (0..300).filter_map(|_| allocator.alloc_pages(0, pagealloc::AllocRequest::KERNEL).ok()).collect();
        let mut direct = String::new();
        pagealloc::views::write_zoneinfo(&mut direct, &allocator).unwrap();
        let mut listed = String::new();
        let zones = pagealloc::views::ZoneinfoZone::from_allocator(&allocator);
        pagealloc::views::write_zoneinfo_zones(&mut listed, &zones, pagealloc::sizing::LinuxVersion::MAINLINE).unwrap();
        assert_eq!(direct, listed);
        assert!(direct.contains("count:    "), "{direct}");
        for block in held {
            allocator.free_pages(block).unwrap();
        }
    }
}

/// The snapshot agrees with the invariant checker's census and with /proc/buddyinfo.
#[test]
fn stats_agree_with_the_census_and_buddyinfo() {
    for allocator in [pc_with(64, "mainline", 2), pc_with(256, "pagealloc", 2)] {
        let held: Vec<_> = (0..500u32)
            .filter_map(|i| allocator.alloc_pages((i % 3) as u8, pagealloc::AllocRequest::KERNEL).ok())
            .collect();
        let stats = allocator.stats();
        let census = allocator.check_invariants().unwrap();
        assert_eq!(stats.managed_pages, census.managed_pages);
        assert_eq!(stats.free_pages + census.allocated_pages, census.managed_pages);
        assert_eq!(stats.zones.len(), allocator.zones().len());
        let zone_free: u64 = stats.zones.iter().map(|zone| zone.free_pages()).sum();
        assert_eq!(zone_free, stats.free_pages);
        for zone in stats.zones.iter() {
            let in_blocks: u64 = zone.free_blocks.iter().enumerate().map(|(order, blocks)| blocks << order).sum();
            assert_eq!(in_blocks, zone.buddy_free_pages, "{zone:?}");
        }
        let allocated: u64 = held.iter().map(|block| block.pages()).sum();
        assert_eq!(stats.pgalloc_pages - stats.pgfree_pages, allocated);
        for block in held {
            allocator.free_pages(block).unwrap();
        }
    }
}
