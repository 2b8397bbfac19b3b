//! Hot-plug and reservations: memory reserved at boot, the allocator's own records among it,
//! is present and stays reserved through add_memory, offline and online; only holes are
//! added, and present_pages counts a reserved frame once (mirrors memblock: reserved
//! memory is present, and add_memory() refuses memory already present). Records given to
//! add_memory_in with their address are kept out of use wherever they lie.

#![cfg(feature = "alloc")]

use std::mem::MaybeUninit;
use std::ops::Range;

use pagealloc::builder::NORMAL_START_PFN;
use pagealloc::platform::TestPlatform;
use pagealloc::types::PAGEBLOCK_PAGES;
use pagealloc::views::{write_buddyinfo, write_pagetypeinfo};
use pagealloc::{AllocRequest, AllocatorBuilder, Block, MetadataMemory, PageAllocator, Pfn, PhysAddr, RangeError};
use pagealloc::{ZoneType, MAX_ORDER};

const BASE: Pfn = NORMAL_START_PFN;
const BLOCK: u64 = PAGEBLOCK_PAGES;
const HOLD: AllocRequest = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };

/// `bytes` of leaked heap standing for the memory at `pfn` (a kernel passes its real address).
fn memory_at(bytes: usize, pfn: Pfn) -> MetadataMemory {
    MetadataMemory::at(vec![MaybeUninit::uninit(); bytes].leak(), PhysAddr::of_pfn(pfn))
}

/// What a refused operation must leave unchanged.
fn snapshot(allocator: &PageAllocator<TestPlatform>) -> (String, u64, u64) {
    let mut text = String::new();
    write_buddyinfo(&mut text, allocator).unwrap();
    write_pagetypeinfo(&mut text, allocator).unwrap();
    (text, allocator.counters().managed_pages(), allocator.zones()[0].state().present_pages())
}

/// Takes every page the allocator hands out, checks none lies in `kept`, and frees them.
fn assert_never_handed_out(allocator: &PageAllocator<TestPlatform>, kept: &Range<Pfn>) {
    let mut held: Vec<Block> = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, HOLD) {
        assert!(!kept.contains(&block.pfn()), "pfn {:#x} handed out from {kept:#x?}", block.pfn());
        held.push(block);
    }
    assert!(!held.is_empty());
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    allocator.pagesets().drain_all();
}

/// Hot-plug over the frames that hold the allocator's records (reserved by `build_in`):
/// add, offline and online are all refused, and the frames are never handed out.
#[test]
fn hotplug_never_hands_out_the_frames_holding_the_records() {
    let pages = 1 << 14;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, pages);
    let needed = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 1) as usize;
    // At least one whole pageblock of records, starting on a pageblock boundary.
    let records = BASE + 4 * BLOCK;
    let memory = memory_at(needed.max(2 * BLOCK as usize * 4096), records);
    let reserved = memory.frames().unwrap();
    let allocator = PageAllocator::build_in(builder, TestPlatform::new(1), memory).unwrap();
    let before = snapshot(&allocator);
    let range = records..records + BLOCK;
    let refused = Err(RangeError::ReservedFrame { pfn: records });
    assert_eq!(allocator.hotplug().add_memory(range.clone(), ZoneType::Normal), refused);
    assert_eq!(allocator.hotplug().offline(range.clone()), refused);
    assert_eq!(allocator.hotplug().online(range.clone()), refused);
    assert_eq!(snapshot(&allocator), before, "a refused operation changes nothing");
    allocator.check_invariants().unwrap();
    assert_never_handed_out(&allocator, &reserved);
    allocator.check_invariants().unwrap();
}

/// A zone with a hole and a reservation: the hole is added and counted present once, the
/// reservation (already present) is refused and counted nowhere twice.
#[test]
fn present_pages_count_a_reservation_once() {
    let span = BASE..BASE + 32 * BLOCK;
    let (reserve, hole) = (BASE + 4 * BLOCK..BASE + 6 * BLOCK, BASE + 8 * BLOCK..BASE + 12 * BLOCK);
    let builder =
        AllocatorBuilder::new().zone(0, ZoneType::Normal, span.clone()).reserve(reserve.clone()).hole(hole.clone());
    let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
    let zone = &allocator.zones()[0];
    assert_eq!(zone.state().present_pages(), 28 * BLOCK);
    assert_eq!(zone.state().managed_pages(), 26 * BLOCK);
    let refused = Err(RangeError::ReservedFrame { pfn: reserve.start });
    assert_eq!(allocator.hotplug().add_memory(reserve.clone(), ZoneType::Normal), refused);
    // A range of the hole and the reservation together: refused whole.
    let across = reserve.start..hole.end;
    assert_eq!(allocator.hotplug().add_memory(across, ZoneType::Normal), refused);
    assert_eq!(zone.state().present_pages(), 28 * BLOCK);
    assert_eq!(allocator.hotplug().add_memory(hole.clone(), ZoneType::Normal).unwrap(), 4 * BLOCK);
    assert_eq!(zone.state().present_pages(), 32 * BLOCK, "every frame of the span is present, once");
    assert_eq!(zone.state().managed_pages(), 30 * BLOCK);
    allocator.check_invariants().unwrap();
    // Offline and online move present pages with managed ones; the reservation stays.
    assert_eq!(allocator.hotplug().offline(hole.clone()).unwrap(), 4 * BLOCK);
    assert_eq!(zone.state().present_pages(), 28 * BLOCK);
    assert_eq!(allocator.hotplug().online(hole.clone()).unwrap(), 4 * BLOCK);
    assert_eq!(zone.state().present_pages(), 32 * BLOCK);
    assert_eq!(allocator.hotplug().offline(reserve.clone()), refused);
    allocator.check_invariants().unwrap();
    assert_never_handed_out(&allocator, &reserve);
}

/// Records carved from a hole at build (memory the caller has, not yet added): their
/// frames become present and reserved, and adding the hole leaves them out.
#[test]
fn build_in_records_in_a_hole_are_present_and_stay_reserved() {
    let span = BASE..BASE + (1 << 14);
    let hole = BASE + 8 * BLOCK..BASE + 16 * BLOCK;
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, span.clone()).hole(hole.clone());
    let needed = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 1) as usize;
    let memory = memory_at(needed, hole.start);
    let reserved = memory.frames().unwrap();
    assert!(reserved.end <= hole.start + BLOCK, "the records fit in the hole's first pageblock");
    let allocator = PageAllocator::build_in(builder, TestPlatform::new(1), memory).unwrap();
    let zone = &allocator.zones()[0];
    let records_pages = reserved.end - reserved.start;
    let spanned = span.end - span.start;
    assert_eq!(zone.state().present_pages(), spanned - 8 * BLOCK + records_pages);
    assert_eq!(zone.state().managed_pages(), spanned - 8 * BLOCK);
    let refused = Err(RangeError::ReservedFrame { pfn: reserved.start });
    assert_eq!(allocator.hotplug().add_memory(hole.clone(), ZoneType::Normal), refused);
    assert_eq!(allocator.hotplug().add_memory(hole.start + BLOCK..hole.end, ZoneType::Normal).unwrap(), 7 * BLOCK);
    assert_eq!(zone.state().present_pages(), spanned - BLOCK + records_pages);
    allocator.check_invariants().unwrap();
    assert_never_handed_out(&allocator, &reserved);
}

/// Records given to add_memory_in that lie in another hole of a span are reserved there
/// and counted present: a later add of that hole leaves them out.
#[test]
fn add_memory_in_records_in_another_hole_stay_reserved_and_count_present() {
    let span = BASE..BASE + 32 * BLOCK;
    let (first, second) = (BASE + 8 * BLOCK..BASE + 12 * BLOCK, BASE + 16 * BLOCK..BASE + 20 * BLOCK);
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, span).hole(first.clone()).hole(second.clone());
    let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
    let zone = &allocator.zones()[0];
    assert_eq!(zone.state().present_pages(), 24 * BLOCK);
    let records = second.start + 8..second.start + 10;
    let memory = memory_at(2 * 4096, records.start);
    assert_eq!(allocator.hotplug().add_memory_in(first.clone(), ZoneType::Normal, memory).unwrap(), 4 * BLOCK);
    assert_eq!(zone.state().present_pages(), 28 * BLOCK + 2, "the records' frames are present");
    assert_eq!(zone.state().managed_pages(), 28 * BLOCK);
    allocator.check_invariants().unwrap();
    let refused = Err(RangeError::ReservedFrame { pfn: records.start });
    assert_eq!(allocator.hotplug().add_memory(second.clone(), ZoneType::Normal), refused);
    assert_eq!(allocator.hotplug().add_memory(second.start + BLOCK..second.end, ZoneType::Normal).unwrap(), 3 * BLOCK);
    assert_eq!(zone.state().present_pages(), 31 * BLOCK + 2);
    allocator.check_invariants().unwrap();
    assert_never_handed_out(&allocator, &records);
}

/// Records given in free memory of a zone would be handed out over them: refused, and
/// nothing changes. Memory the caller allocated first is its own to give.
#[test]
fn add_memory_in_refuses_records_in_free_memory_and_takes_allocated_memory() {
    let span = BASE..BASE + 32 * BLOCK;
    let hole = BASE + 8 * BLOCK..BASE + 12 * BLOCK;
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, span).hole(hole.clone());
    let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
    let before = snapshot(&allocator);
    let free = BASE + 20 * BLOCK + 3;
    let refused = allocator.hotplug().add_memory_in(hole.clone(), ZoneType::Normal, memory_at(4096, free));
    assert_eq!(refused, Err(RangeError::MetadataInFreeMemory { pfn: free }));
    assert_eq!(snapshot(&allocator), before, "a refused add changes nothing");
    allocator.check_invariants().unwrap();

    let block = allocator.alloc_pages(MAX_ORDER, AllocRequest::KERNEL).unwrap();
    let records = block.pfn() + 5..block.pfn() + 7;
    let memory = memory_at(2 * 4096, records.start);
    assert_eq!(allocator.hotplug().add_memory_in(hole.clone(), ZoneType::Normal, memory).unwrap(), 4 * BLOCK);
    assert_eq!(allocator.zones()[0].state().present_pages(), 32 * BLOCK);
    allocator.check_invariants().unwrap();
    assert_never_handed_out(&allocator, &(block.pfn()..block.pfn() + block.pages()));
}

/// Records of a growth placed in the gap the growth leaves between the old end and the
/// range: the gap's other frames stay holes to add, the records' frames are reserved.
#[cfg(feature = "memory-growth")]
#[test]
fn growth_records_in_the_gap_it_leaves_stay_reserved() {
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, BASE..BASE + 16 * BLOCK);
    let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
    let range = BASE + 32 * BLOCK..BASE + 40 * BLOCK;
    let needed = allocator.hotplug().add_memory_metadata_bytes(range.clone(), ZoneType::Normal).unwrap() as usize;
    let records_at = BASE + 20 * BLOCK;
    let memory = memory_at(needed, records_at);
    let records = memory.frames().unwrap();
    assert!(records.end <= records_at + BLOCK);
    assert_eq!(allocator.hotplug().add_memory_in(range, ZoneType::Normal, memory).unwrap(), 8 * BLOCK);
    let zone = &allocator.zones()[0];
    assert_eq!(zone.spanned_pages(), 40 * BLOCK);
    assert_eq!(zone.state().present_pages(), 24 * BLOCK + (records.end - records.start));
    allocator.check_invariants().unwrap();
    let gap = BASE + 16 * BLOCK..BASE + 32 * BLOCK;
    assert_eq!(
        allocator.hotplug().add_memory(gap.clone(), ZoneType::Normal),
        Err(RangeError::ReservedFrame { pfn: records.start })
    );
    assert_eq!(allocator.hotplug().add_memory(gap.start..records_at, ZoneType::Normal).unwrap(), 4 * BLOCK);
    assert_eq!(allocator.hotplug().add_memory(records_at + BLOCK..gap.end, ZoneType::Normal).unwrap(), 11 * BLOCK);
    allocator.check_invariants().unwrap();
    assert_never_handed_out(&allocator, &records);
}
