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
