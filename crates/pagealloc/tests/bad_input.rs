//! Every bad input returns a typed error and leaves the allocator exactly as it was.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::types::MAX_ORDER;
use pagealloc::{AllocError, AllocRequest, Block, FreeError, MigrateType, ZoneType};

/// Runs `bad` and checks it fails with `expected` while the fingerprint stays the same.
fn rejected<T: std::fmt::Debug, E: std::fmt::Debug + std::fmt::Display + PartialEq>(
    allocator: &TestAllocator,
    expected: E,
    bad: impl FnOnce() -> Result<T, E>,
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
    rejected(&allocator, FreeError::DoubleFree { pfn }, || free_unowned(&allocator, pfn, 2));
    let upper = pfn.max(neighbour.pfn());
    allocator.free_pages(neighbour).unwrap();
    // Both merged into a larger block: its lower half's head is still a free head, the upper
    // half's head is now interior.
    let lower = upper ^ 4;
    rejected(&allocator, FreeError::DoubleFree { pfn: lower }, || free_unowned(&allocator, lower, 2));
    rejected(&allocator, FreeError::NotAllocated { pfn: upper }, || free_unowned(&allocator, upper, 2));
}

#[test]
fn freeing_a_frame_never_allocated_is_rejected() {
    let allocator = pc(64);
    let zone = &allocator.zones()[1];
    let pfn = zone.start_pfn() + 8;
    rejected(&allocator, FreeError::NotAllocated { pfn }, || free_unowned(&allocator, pfn, 0));
    // A free head that was never freed since the build: never allocated, not a double free
    // (without generations nothing tells the two apart).
    let head = zone.start_pfn();
    rejected(&allocator, never_freed_head(head), || free_unowned(&allocator, head, MAX_ORDER));
}

#[test]
fn a_forged_block_naming_a_free_head_is_not_allocated_and_a_freed_one_is_a_double_free() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    let raw = block.raw_parts();
    allocator.free_pages(block).unwrap();
    allocator.pagesets().drain_all();
    // SAFETY: rebuilt only to show its free refused.
    let stale = unsafe { Block::from_raw(raw) };
    let free_head = allocator.zones()[1].start_pfn();
    // SAFETY: forged only to show its free refused.
    let forged =
        unsafe { Block::from_raw(pagealloc::RawBlock { pfn: free_head, order: MAX_ORDER, zone_index: 1, ..raw }) };
    rejected(&allocator, never_freed_head(free_head), || allocator.free_pages(forged));
    let result = allocator.free_pages(stale);
    assert!(matches!(result, Err(FreeError::DoubleFree { .. } | FreeError::NotAllocated { .. })), "{result:?}");
}

#[test]
fn every_error_type_is_a_core_error() {
    fn is_error<E: core::error::Error + Send + Sync + 'static>() {}
    is_error::<pagealloc::AllocError>();
    is_error::<FreeError>();
    is_error::<pagealloc::BulkFreeError>();
    is_error::<pagealloc::RangeError>();
    is_error::<pagealloc::GrowError>();
    is_error::<pagealloc::BuildError>();
    is_error::<pagealloc::InvariantViolation>();
    is_error::<pagealloc::sizing::SizingError>();
    is_error::<pagealloc::lru::LruError>();
    is_error::<pagealloc::lru::LruViolation>();
    // As the README's first snippet uses them: `?` into a boxed error.
    fn boxed() -> Result<(), Box<dyn core::error::Error>> {
        let allocator = pc(64);
        allocator.check_invariants()?;
        let block = allocator.alloc_pages(0, AllocRequest::KERNEL)?;
        allocator.free_pages(block)?;
        Ok(())
    }
    boxed().unwrap();
}

#[test]
fn a_block_prints_its_frame_order_and_zone() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    let shown = format!("{block:?}");
    let expected =
        format!("Block {{ pfn: {:#x}, order: 2, zone: {}, generation: 0 }}", block.pfn(), block.zone_index());
    assert_eq!(shown, expected);
    allocator.free_pages(block).unwrap();
}

/// The error for a free of a free head that was never freed since it was handed out.
fn never_freed_head(pfn: u64) -> FreeError {
    if pagealloc::frame::FrameInfo::GENERATIONS {
        FreeError::NotAllocated { pfn }
    } else {
        FreeError::DoubleFree { pfn }
    }
}

#[test]
fn freeing_with_the_wrong_order_is_rejected() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(3, AllocRequest::KERNEL).unwrap();
    let pfn = block.pfn();
    for wrong in [0, 1, 2, 4] {
        rejected(&allocator, FreeError::WrongOrder { pfn, allocated_order: 3, freed_order: wrong }, || {
            free_unowned(&allocator, pfn, wrong)
        });
    }
    // Freeing an interior frame of the block.
    rejected(&allocator, FreeError::NotAllocated { pfn: pfn + 1 }, || free_unowned(&allocator, pfn + 1, 0));
    allocator.free_pages(block).unwrap();
}

#[test]
fn misaligned_block_is_rejected() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    let pfn = block.pfn() + 2;
    rejected(&allocator, FreeError::Misaligned { pfn, order: 2 }, || free_unowned(&allocator, pfn, 2));
    allocator.free_pages(block).unwrap();
}

#[test]
fn out_of_range_and_hole_pfns_are_rejected() {
    let allocator = pc(64);
    let beyond = 64 * 256;
    rejected(&allocator, FreeError::OutOfRange { pfn: beyond }, || free_unowned(&allocator, beyond, 0));
    rejected(&allocator, FreeError::OutOfRange { pfn: !1023 }, || free_unowned(&allocator, !1023, 10));
    // pc_layout reserves pfn 0 and the legacy 640 KiB - 1 MiB hole.
    rejected(&allocator, FreeError::NotManaged { pfn: 0 }, || free_unowned(&allocator, 0, 0));
    rejected(&allocator, FreeError::NotManaged { pfn: 0xa0 }, || free_unowned(&allocator, 0xa0, 0));
}

#[test]
fn block_from_another_allocator_is_rejected() {
    let first = pc(64);
    let second = pc(64);
    let block = first.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    let pfn = block.pfn();
    let raw = block.raw_parts();
    rejected(&second, FreeError::ForeignBlock { pfn }, || second.free_pages(block));
    // SAFETY: the block given to `second` was rejected and dropped: `raw` is its only owner.
    first.free_pages(unsafe { Block::from_raw(raw) }).unwrap();
    first.check_invariants().unwrap();
}

#[test]
fn block_claiming_the_wrong_zone_is_rejected() {
    let allocator = pc(64);
    let block = allocator.alloc_pages(0, AllocRequest::DMA32).unwrap();
    let (pfn, zone_index) = (block.pfn(), block.zone_index());
    let raw = block.into_raw();
    // SAFETY: a forged copy naming zone 0; the free is rejected, so `raw` still owns it.
    // SAFETY: forged only to show its free refused.
    let forged = unsafe { Block::from_raw(pagealloc::RawBlock { zone_index: 0, ..raw }) };
    rejected(&allocator, FreeError::WrongZone { pfn, claimed_zone: 0, actual_zone: zone_index }, || {
        allocator.free_pages(forged)
    });
    // SAFETY: `raw` came from into_raw and is rebuilt once.
    allocator.free_pages(unsafe { Block::from_raw(raw) }).unwrap();
}

/// A stale copy of a block, freed and handed out again to someone
/// else, used to free the new owner's pages.
#[test]
#[cfg(feature = "generations")]
fn a_stale_block_does_not_free_the_next_owner() {
    let allocator = pc_with(64, "mainline", 1);
    let first = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    let stale = first.raw_parts();
    allocator.free_pages(first).unwrap();
    // The pageset hands the same frame out again (last in, first out).
    let second = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    assert_eq!(second.pfn(), stale.pfn);
    assert_ne!(second.generation(), stale.generation);
    let expected = FreeError::StaleBlock {
        pfn: stale.pfn,
        block_generation: stale.generation,
        frame_generation: second.generation(),
    };
    // SAFETY: deliberately broken (a stale copy); the allocator must refuse it.
    rejected(&allocator, expected, || allocator.free_pages(unsafe { Block::from_raw(stale) }));
    assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 1);
    allocator.free_pages(second).unwrap();
    // A stale copy of a block that is free now is a double free.
    // SAFETY: as above.
    let error = allocator.free_pages(unsafe { Block::from_raw(stale) }).unwrap_err();
    assert_eq!(error, FreeError::DoubleFree { pfn: stale.pfn });
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
    rejected(&allocator, FreeError::OrderTooLarge { order: 11 }, || free_unowned(&allocator, 0, MAX_ORDER + 1));
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
        let floor =
            zone.state().params().watermarks.min_pages + zone.state().params().lowmem_reserve[ZoneType::Normal.index()];
        assert!(zone.free_pages() >= floor, "{:?} below min + protection", zone.state().zone_type());
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

#[test]
fn a_request_for_a_node_the_machine_lacks_is_an_error_not_a_redirect() {
    let allocator = pc(64);
    let request = AllocRequest::KERNEL.on_node(3);
    rejected(&allocator, AllocError::NoSuchNode { node: 3, nodes: 1 }, || allocator.alloc_pages(0, request));
    // The node it has is fine.
    let block = allocator.alloc_pages(0, AllocRequest::KERNEL.on_node(0)).unwrap();
    allocator.free_pages(block).unwrap();
}

#[test]
fn device_memory_and_unmovable_requests_into_movable_are_rejected() {
    let allocator = pc(64);
    for (highest_zone, migratetype) in [
        (ZoneType::Device, MigrateType::Movable),
        (ZoneType::Movable, MigrateType::Unmovable),
        (ZoneType::Movable, MigrateType::Reclaimable),
    ] {
        let request = AllocRequest::KERNEL.with_highest_zone(highest_zone).with_migratetype(migratetype);
        let expected = AllocError::ZoneNotAllowed { highest_zone, migratetype };
        rejected(&allocator, expected, || allocator.alloc_pages(0, request));
    }
    // Movable requests may use Movable.
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    allocator.free_pages(block).unwrap();
}

#[test]
fn a_layout_beyond_the_largest_block_names_the_layout() {
    let allocator = pc(64);
    let layout = std::alloc::Layout::from_size_align(8 << 20, 4096).unwrap();
    let expected = AllocError::LayoutTooLarge { size_bytes: 8 << 20, align_bytes: 4096 };
    rejected(&allocator, expected, || allocator.alloc_layout(layout, AllocRequest::KERNEL));
}

#[test]
fn bulk_calls_grow_with_what_they_get_and_report_malformed_requests() {
    let allocator = single_zone(ZoneType::Normal, 1 << 12);
    let mut blocks = Vec::new();
    // A count no memory could satisfy: it returns what there was, without reserving
    // usize::MAX slots up front (which aborted).
    let got = allocator.alloc_bulk(0, AllocRequest::ATOMIC, usize::MAX, &mut blocks).unwrap();
    assert!(got > 0 && got == blocks.len());
    allocator.free_bulk(blocks.drain(..)).unwrap();
    rejected(&allocator, AllocError::OrderTooLarge { order: 11 }, || {
        allocator.alloc_bulk(11, AllocRequest::KERNEL, 4, &mut blocks)
    });
    assert!(blocks.is_empty());
}

/// A platform that breaks its contract: CPU ids past `nr_cpus`.
struct OutOfRangeCpu(pagealloc::platform::TestPlatform);

impl pagealloc::platform::Platform for OutOfRangeCpu {
    type RawLock = <pagealloc::platform::TestPlatform as pagealloc::platform::Platform>::RawLock;
    type PcpLock = <pagealloc::platform::TestPlatform as pagealloc::platform::Platform>::PcpLock;
    fn current_cpu(&self) -> usize {
        self.0.nr_cpus() + 5
    }
    fn nr_cpus(&self) -> usize {
        self.0.nr_cpus()
    }
    fn now_ns(&self) -> u64 {
        self.0.now_ns()
    }
}

/// Documented behaviour: a CPU id outside 0..nr_cpus takes the first node and, having no
/// pageset, the buddy; nothing is corrupted and every frame comes back.
#[test]
fn a_platform_reporting_an_impossible_cpu_is_served_from_the_buddy() {
    use pagealloc::platform::Platform;
    let platform = OutOfRangeCpu(pagealloc::platform::TestPlatform::new(2));
    let builder = pagealloc::AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 12);
    let allocator = pagealloc::PageAllocator::build(builder, platform).unwrap();
    let locks_before = allocator.counters().zone_lock_stats().acquisitions;
    let blocks: Vec<_> = (0..64).map(|_| allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap()).collect();
    assert!(allocator.counters().zone_lock_stats().acquisitions >= locks_before + 64, "every call took the zone lock");
    assert_eq!(allocator.counters().pcp_pages(), 0, "no pageset was used");
    allocator.free_bulk(blocks).unwrap();
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.free_pages, allocator.counters().managed_pages());
    assert!(allocator.platform().current_cpu() >= allocator.platform().nr_cpus());
}
