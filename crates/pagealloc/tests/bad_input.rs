//! Every bad input returns a typed error and leaves the allocator exactly as it was.

mod common;

use common::*;
use pagealloc::types::MAX_ORDER;
use pagealloc::{AllocError, AllocRequest, Block, FreeError, ZoneType};

/// Runs `bad` and checks it fails with `expected` while the fingerprint stays the same.
fn rejected<T: std::fmt::Debug>(
    allocator: &TestAllocator,
    expected: FreeError,
    bad: impl FnOnce() -> Result<T, FreeError>,
) {
    let before = fingerprint(allocator);
    let error = bad().expect_err("bad input must be rejected");
    assert_eq!(error, expected);
    assert!(!error.to_string().is_empty());
    assert_eq!(fingerprint(allocator), before, "state changed after {expected:?}");
}

#[test]
fn double_free_of_a_block_is_rejected() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    let pfn = block.pfn();
    let neighbour = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    allocator.free_pages(block).unwrap();
    // The freed block could not merge (its buddy is allocated): it is a free head.
    assert_eq!(neighbour.pfn(), pfn ^ 4);
    rejected(&allocator, FreeError::DoubleFree { pfn }, || allocator.free_pfn(pfn, 2));
    let upper = pfn.max(neighbour.pfn());
    allocator.free_pages(neighbour).unwrap();
    // Both merged into a larger block: its lower half's head is still a free head, the upper
    // half's head is now interior.
    let lower = upper ^ 4;
    rejected(&allocator, FreeError::DoubleFree { pfn: lower }, || allocator.free_pfn(lower, 2));
    rejected(&allocator, FreeError::NotAllocated { pfn: upper }, || allocator.free_pfn(upper, 2));
}

#[test]
fn freeing_a_frame_never_allocated_is_rejected() {
    let allocator = pc(64);
    let zone = &allocator.zones()[1];
    let pfn = zone.start_pfn() + 8;
    rejected(&allocator, FreeError::NotAllocated { pfn }, || allocator.free_pfn(pfn, 0));
    let head = zone.start_pfn();
    rejected(&allocator, FreeError::DoubleFree { pfn: head }, || allocator.free_pfn(head, MAX_ORDER));
}

#[test]
fn freeing_with_the_wrong_order_is_rejected() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(3, AllocRequest::KERNEL).unwrap();
    let pfn = block.pfn();
    for wrong in [0, 1, 2, 4] {
        rejected(&allocator, FreeError::WrongOrder { pfn, allocated_order: 3, freed_order: wrong }, || {
            allocator.free_pfn(pfn, wrong)
        });
    }
    // Freeing an interior frame of the block.
    rejected(&allocator, FreeError::NotAllocated { pfn: pfn + 1 }, || allocator.free_pfn(pfn + 1, 0));
    allocator.free_pages(block).unwrap();
}

#[test]
fn misaligned_block_is_rejected() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    let pfn = block.pfn() + 2;
    rejected(&allocator, FreeError::Misaligned { pfn, order: 2 }, || allocator.free_pfn(pfn, 2));
    allocator.free_pages(block).unwrap();
}

#[test]
fn out_of_range_and_hole_pfns_are_rejected() {
    let allocator = pc(64);
    let beyond = 64 * 256;
    rejected(&allocator, FreeError::OutOfRange { pfn: beyond }, || allocator.free_pfn(beyond, 0));
    rejected(&allocator, FreeError::OutOfRange { pfn: !1023 }, || allocator.free_pfn(!1023, 10));
    // pc_layout reserves pfn 0 and the legacy 640 KiB - 1 MiB hole.
    rejected(&allocator, FreeError::NotManaged { pfn: 0 }, || allocator.free_pfn(0, 0));
    rejected(&allocator, FreeError::NotManaged { pfn: 0xa0 }, || allocator.free_pfn(0xa0, 0));
}

#[test]
fn block_from_another_allocator_is_rejected() {
    let first = pc(64);
    let second = pc(64);
    let block = first.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    let pfn = block.pfn();
    let (order, zone_index, id) = (block.order(), block.zone_index(), block.allocator_id());
    rejected(&second, FreeError::ForeignBlock { pfn }, || second.free_pages(block));
    first.free_pages(Block::from_raw_parts(pfn, order, zone_index, id)).unwrap();
    first.check_invariants().unwrap();
}

#[test]
fn block_claiming_the_wrong_zone_is_rejected() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(0, AllocRequest::DMA32).unwrap();
    let (pfn, id, zone_index) = (block.pfn(), block.allocator_id(), block.zone_index());
    let forged = Block::from_raw_parts(pfn, 0, 0, id);
    rejected(&allocator, FreeError::WrongZone { pfn, claimed_zone: 0, actual_zone: zone_index }, || {
        allocator.free_pages(forged)
    });
    allocator.free_pages(Block::from_raw_parts(pfn, 0, zone_index, id)).unwrap();
}

#[test]
fn impossible_orders_are_rejected() {
    let allocator = pc(64);
    let before = fingerprint(&allocator);
    assert_eq!(
        allocator.alloc_pages(MAX_ORDER + 1, AllocRequest::KERNEL),
        Err(AllocError::OrderTooLarge { order: 11 })
    );
    assert_eq!(allocator.alloc_pages(u8::MAX, AllocRequest::KERNEL), Err(AllocError::OrderTooLarge { order: 255 }));
    assert_eq!(fingerprint(&allocator), before);
    rejected(&allocator, FreeError::OrderTooLarge { order: 11 }, || allocator.free_pfn(0, MAX_ORDER + 1));
}

#[test]
fn exhausted_memory_returns_an_error_and_respects_the_watermarks() {
    let allocator = pc(64);
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
        held.push(block);
    }
    let before = fingerprint(&allocator);
    assert_eq!(allocator.alloc_pages(0, AllocRequest::KERNEL), Err(AllocError::OutOfMemory { order: 0 }));
    assert_eq!(
        allocator.alloc_pages(MAX_ORDER, AllocRequest::KERNEL),
        Err(AllocError::OutOfMemory { order: MAX_ORDER })
    );
    assert_eq!(fingerprint(&allocator), before);
    for zone in allocator.zones() {
        let floor = zone.params().watermarks.min_pages + zone.params().lowmem_reserve[ZoneType::Normal.index()];
        assert!(zone.free_pages() >= floor, "{:?} below min + protection", zone.zone_type());
    }
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 0);
}

#[test]
fn request_for_a_zone_the_machine_lacks_is_rejected() {
    let allocator = single_zone(ZoneType::Normal, 4096);
    assert_eq!(
        allocator.alloc_pages(0, AllocRequest::DMA32),
        Err(AllocError::NoUsableZone { highest_zone: ZoneType::Dma32 })
    );
}
