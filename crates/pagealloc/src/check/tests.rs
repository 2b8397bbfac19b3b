//! The checker finds each kind of corruption it promises to: each test breaks one structure
//! by hand and expects the violation.

use crate::builder::AllocatorBuilder;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::TestPlatform;
use crate::request::AllocRequest;
use crate::types::{MigrateType, ZoneType};
use crate::PageAllocator;

fn allocator() -> PageAllocator<TestPlatform> {
    PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(1)).unwrap()
}

#[test]
fn detects_a_free_head_that_lost_its_state() {
    let allocator = allocator();
    let zone = &allocator.zones()[0];
    zone.mem().frame(zone.start_pfn()).corrupt(FrameInfo::INTERIOR);
    let violation = allocator.check_invariants().unwrap_err();
    assert!(violation.what.contains("is Interior"), "{violation}");
}

#[test]
fn detects_a_wrong_free_count() {
    let allocator = allocator();
    let zone = &allocator.zones()[0];
    {
        // Counts that agree with one another (so the lock's own check lets them pass), but
        // not with the list.
        let mut locked = zone.buddy(allocator.platform()).lock();
        assert!(!locked.area.lists[10][MigrateType::Movable.index()].is_empty());
        locked.area.nr_free[10][MigrateType::Movable.index()] += 1;
        locked.area.free_pages += 1 << 10;
    }
    let violation = allocator.check_invariants().unwrap_err();
    assert!(violation.what.contains("blocks listed"), "{violation}");
}

/// A zone-lock hold that leaves the counts disagreeing fails as the lock is released.
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "free pages counted")]
fn a_hold_that_leaves_counts_disagreeing_fails_at_release() {
    let allocator = allocator();
    let zone = &allocator.zones()[0];
    zone.buddy(allocator.platform()).lock().area.nr_free[10][MigrateType::Movable.index()] += 1;
}

#[test]
fn detects_a_leaked_allocation_marker() {
    let allocator = allocator();
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let zone = &allocator.zones()[0];
    // An allocated head inside the free order-9 buddy block: two owners of one frame.
    zone.mem().frame(block.pfn() ^ 0x203).corrupt(FrameInfo::new(FrameState::AllocHead, 0, MigrateType::Movable));
    let violation = allocator.check_invariants().unwrap_err();
    assert!(violation.what.contains("inside the"), "{violation}");
}

#[test]
fn detects_unmerged_buddies() {
    let allocator = allocator();
    let first = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let second = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let zone = &allocator.zones()[0];
    // Put both back as separate free blocks, bypassing the merge.
    let mut locked = zone.buddy(allocator.platform()).lock();
    for block in [&first, &second] {
        // Claimed, as a free does before returning a block.
        zone.mem().frame(block.pfn()).corrupt(FrameInfo::INTERIOR);
        locked.add_free(block.pfn(), 0, MigrateType::Movable, false);
    }
    drop(locked);
    let violation = allocator.check_invariants().unwrap_err();
    assert!(violation.what.contains("not merged"), "{violation}");
}

#[test]
fn detects_a_free_block_in_a_pageblock_of_another_type() {
    let allocator = allocator();
    let zone = &allocator.zones()[0];
    zone.mem().set_pageblock_type(zone.start_pfn(), MigrateType::Unmovable);
    let violation = allocator.check_invariants().unwrap_err();
    assert!(violation.what.contains("pageblock"), "{violation}");
}

#[test]
fn detects_handed_over_pages_the_count_misses() {
    // Frees into another arena are handed over when they do not park.
    let mut policy = crate::presets::find("pagealloc").unwrap().policy;
    policy.frag.beyond_linux.parked_frees = false;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4 * crate::builder::MIN_ARENA_PAGES).policy(policy);
    let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    let held: alloc::vec::Vec<_> =
        (0..16).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    allocator.platform().set_cpu(1);
    for block in held {
        assert_eq!(block.zone_index(), 0, "CPU 0's arena");
        allocator.free_pages(block).unwrap();
    }
    let remote = &allocator.zones()[0].core.remote_frees;
    assert_eq!(allocator.check_invariants().unwrap().handed_over_pages, 16);
    remote.released(8);
    let violation = allocator.check_invariants().unwrap_err();
    assert!(violation.what.contains("chains hold 16 pages, 8 counted"), "{violation}");
}

/// A `pagealloc` allocator with 16 order-0 pages parked in its first arena's pageblocks.
fn with_parked_pages() -> PageAllocator<TestPlatform> {
    let policy = crate::presets::find("pagealloc").unwrap().policy;
    assert!(policy.frag.beyond_linux.parked_frees);
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4 * crate::builder::MIN_ARENA_PAGES).policy(policy);
    let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    let held: alloc::vec::Vec<_> =
        (0..16).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    allocator
}

#[test]
fn counts_parked_pages_and_detects_a_count_that_misses_some() {
    let allocator = with_parked_pages();
    let census = allocator.check_invariants().unwrap();
    assert_eq!((census.parked_pages, census.allocated_pages), (16, 0));
    assert_eq!(allocator.counters().parked_pages(), 16);
    let mem = allocator.zones()[0].mem();
    let slot = (0..mem.pageblock_count()).find(|&slot| mem.pageblock_free.parked(slot) != 0).unwrap();
    let parked = mem.pageblock_free.parked(slot);
    mem.pageblock_free.unpark(slot, 1);
    let violation = allocator.check_invariants().unwrap_err();
    let expected = alloc::format!("holds {parked} parked pages, counted {}", parked - 1);
    assert!(violation.what.contains(&expected), "{violation}");
}

#[test]
fn detects_a_parked_block_over_more_than_a_pageblock() {
    let allocator = with_parked_pages();
    let mem = allocator.zones()[0].mem();
    let pfn = (mem.start_pfn..mem.end_pfn()).find(|&pfn| mem.frame(pfn).info().state() == FrameState::Parked).unwrap();
    let order = crate::types::PAGEBLOCK_ORDER + 1;
    let head = pfn & !((1 << order) - 1);
    mem.frame(head).corrupt(FrameInfo::new(FrameState::Parked, order, MigrateType::Movable));
    let violation = allocator.check_invariants().unwrap_err();
    assert_eq!(violation.pfn, Some(head), "{violation}");
}

#[test]
fn detects_present_pages_that_disagree_with_the_holes() {
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4096).hole(0x10_0400..0x10_0600);
    let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
    allocator.check_invariants().unwrap();
    allocator.zones()[0].state().present_pages.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    let violation = allocator.check_invariants().unwrap_err();
    assert!(violation.what.contains("3584 frames present, 3585 present pages"), "{violation}");
}
