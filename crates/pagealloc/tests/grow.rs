//! Memory added past every zone's span (feature `memory-growth`): the zone starting nearest
//! below the range grows to take it, its new frames serve allocations at once (through
//! the pagesets too), merge with the old ones into MAX_ORDER blocks, go offline and online
//! like built memory, and the invariant checker stays green throughout. Every refusal (type
//! limit, another zone in the way, no zone below, growths used up, too little metadata
//! memory) leaves the allocator as it was.

#![cfg(all(feature = "alloc", feature = "memory-growth"))]

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use pagealloc::growable::MAX_GROWTHS;
use pagealloc::platform::{StdPlatform, TestPlatform};
use pagealloc::views::{write_buddyinfo, write_pagetypeinfo};
use pagealloc::{
    AllocRequest, AllocatorBuilder, Block, GrowError, PageAllocator, Pfn, RangeError, ZoneType, MAX_ORDER,
};

const UNIT: u64 = 1 << MAX_ORDER;
const HOLD: AllocRequest = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
/// Normal memory starts at 4 GiB on a PC.
const BASE: Pfn = 1 << 20;

fn normal(pages: u64, policy: Option<&str>) -> PageAllocator<TestPlatform> {
    let mut builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, BASE..BASE + pages);
    if let Some(name) = policy {
        builder = builder.policy(pagealloc::presets::find(name).expect("a preset").policy);
    }
    PageAllocator::build(builder, TestPlatform::new(2)).unwrap()
}

/// What a refused operation must leave unchanged.
fn snapshot(allocator: &PageAllocator<TestPlatform>) -> (String, u64, u64) {
    let mut text = String::new();
    write_buddyinfo(&mut text, allocator).unwrap();
    write_pagetypeinfo(&mut text, allocator).unwrap();
    (text, allocator.counters().managed_pages(), allocator.zones()[0].spanned_pages())
}

/// Allocates order-`order` blocks until the zone is out, then frees them; returns them.
fn drain_and_refill(allocator: &PageAllocator<TestPlatform>, order: u8) -> Vec<Pfn> {
    let mut blocks: Vec<Block> = Vec::new();
    while let Ok(block) = allocator.alloc_pages(order, HOLD) {
        blocks.push(block);
    }
    let pfns = blocks.iter().map(Block::pfn).collect();
    for block in blocks {
        allocator.free_pages(block).unwrap();
    }
    allocator.pagesets().drain_all();
    pfns
}

#[test]
fn a_zone_grows_past_its_end_and_serves_the_new_memory() {
    for preset in [None, Some("mainline+fullest-first")] {
        let allocator = normal(8 * UNIT, preset);
        // 8 MiB past the end stays a hole between the old end and the added range.
        let added = BASE + 10 * UNIT..BASE + 16 * UNIT;
        assert_eq!(allocator.hotplug().add_memory(added.clone(), ZoneType::Normal).unwrap(), 6 * UNIT);
        let zone = &allocator.zones()[0];
        assert_eq!((zone.spanned_pages(), allocator.counters().managed_pages()), (16 * UNIT, 14 * UNIT));
        allocator.check_invariants().unwrap();
        // Allocations without reclaim stop between the low and high watermarks: all the
        // rest, the added range included, is handed out.
        let kept_back = |order: u8| zone.state().params().watermarks.high_pages + (2 << order);
        for order in [0, 3, 9, MAX_ORDER] {
            let pfns = drain_and_refill(&allocator, order);
            let in_added = pfns.iter().filter(|pfn| added.contains(pfn)).count() as u64;
            assert!(
                (pfns.len() as u64) << order >= allocator.counters().managed_pages() - kept_back(order),
                "order {order}: {} blocks",
                pfns.len()
            );
            assert!(in_added << order >= 6 * UNIT - kept_back(order), "order {order}: {in_added} added blocks");
            allocator.check_invariants().unwrap();
        }
        // The hole between fills later through the span, and merges across the old end.
        assert_eq!(
            allocator.hotplug().add_memory(BASE + 8 * UNIT..BASE + 10 * UNIT, ZoneType::Normal).unwrap(),
            2 * UNIT
        );
        let whole = zone.with_free_area(allocator.platform(), |area| area.blocks_of_order(MAX_ORDER as usize));
        assert_eq!(whole, 16, "{preset:?}: all memory free as MAX_ORDER blocks");
        allocator.check_invariants().unwrap();
    }
}

#[test]
fn grown_memory_goes_offline_and_online_like_built_memory() {
    let allocator = normal(4 * UNIT, None);
    let added = BASE + 4 * UNIT..BASE + 8 * UNIT;
    allocator.hotplug().add_memory(added.clone(), ZoneType::Normal).unwrap();
    assert_eq!(allocator.hotplug().offline(added.clone()).unwrap(), 4 * UNIT);
    assert_eq!(allocator.counters().managed_pages(), 4 * UNIT);
    allocator.check_invariants().unwrap();
    assert!(matches!(allocator.hotplug().add_memory(added.clone(), ZoneType::Normal), Ok(pages) if pages == 4 * UNIT));
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.counters().managed_pages(), 8 * UNIT);
}

#[test]
fn refused_growths_leave_the_allocator_as_it_was() {
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Dma32, 0x80000..0x80000 + 4 * UNIT).zone(
        0,
        ZoneType::Normal,
        BASE + 16 * UNIT..BASE + 20 * UNIT,
    );
    let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    let before = snapshot(&allocator);
    let refusal = |range: std::ops::Range<Pfn>, zone_type| match allocator.hotplug().add_memory(range, zone_type) {
        Err(RangeError::Grow { reason, .. }) => reason,
        other => panic!("expected a refused growth, got {other:?}"),
    };
    // DMA32 ends at 4 GiB.
    assert_eq!(refusal(BASE - UNIT..BASE + UNIT, ZoneType::Dma32), GrowError::AboveLimit { limit_pfn: BASE });
    // No Normal zone starts at or below 4 GiB.
    assert_eq!(refusal(BASE..BASE + UNIT, ZoneType::Normal), GrowError::NoZone);
    // No Movable zone at all; DMA32 grows, leaving a 4 MiB hole.
    let dma32_end = 0x80000 + 4 * UNIT;
    assert_eq!(refusal(BASE - UNIT..BASE, ZoneType::Movable), GrowError::NoZone);
    assert_eq!(snapshot(&allocator), before);
    assert_eq!(allocator.hotplug().add_memory(dma32_end + UNIT..dma32_end + 2 * UNIT, ZoneType::Dma32).unwrap(), UNIT);
    allocator.check_invariants().unwrap();
    // Too little metadata memory: nothing changes.
    let grown = snapshot(&allocator);
    let range = BASE + 20 * UNIT..BASE + 24 * UNIT;
    let needed = allocator.hotplug().add_memory_metadata_bytes(range.clone(), ZoneType::Normal).unwrap();
    assert!(needed >= 4 * UNIT * 8, "{needed} bytes for 4096 frames");
    let small = heap_memory(needed as usize / 2);
    assert!(matches!(
        allocator.hotplug().add_memory_in(range.clone(), ZoneType::Normal, small),
        Err(RangeError::Grow { reason: GrowError::Metadata(_), .. })
    ));
    assert_eq!(snapshot(&allocator), grown);
    let enough = heap_memory(needed as usize);
    // Records placed inside the range they describe: refused, nothing changes.
    let inside = vec![MaybeUninit::uninit(); needed as usize].leak();
    let memory = pagealloc::MetadataMemory::at(inside, pagealloc::PhysAddr::of_pfn(range.start + 8));
    assert_eq!(
        allocator.hotplug().add_memory_in(range.clone(), ZoneType::Normal, memory),
        Err(RangeError::MetadataInRange { pfn: range.start + 8 })
    );
    assert_eq!(snapshot(&allocator), grown);
    assert_eq!(allocator.hotplug().add_memory_in(range, ZoneType::Normal, enough).unwrap(), 4 * UNIT);
    allocator.check_invariants().unwrap();
}

/// Caller memory for a growth's records, from the heap here (no frame the allocator manages).
fn heap_memory(bytes: usize) -> pagealloc::MetadataMemory {
    let heap = vec![MaybeUninit::uninit(); bytes].leak();
    // SAFETY: heap memory is no frame of any zone.
    unsafe { pagealloc::MetadataMemory::outside_managed_memory(heap) }
}

#[test]
fn another_zone_in_the_way_stops_a_growth() {
    let builder = AllocatorBuilder::new().node(1).node(1).zone(0, ZoneType::Normal, BASE..BASE + 4 * UNIT).zone(
        1,
        ZoneType::Normal,
        BASE + 8 * UNIT..BASE + 12 * UNIT,
    );
    let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    let before = snapshot(&allocator);
    // From node 0's zone, reaching into node 1's.
    match allocator.hotplug().add_memory(BASE + 6 * UNIT..BASE + 9 * UNIT, ZoneType::Normal) {
        Err(RangeError::Grow { reason: GrowError::Overlap { other_start }, .. }) => {
            assert_eq!(other_start, BASE + 8 * UNIT)
        }
        other => panic!("expected an overlap, got {other:?}"),
    }
    assert_eq!(snapshot(&allocator), before);
    // Below node 1's zone, node 0's grows; above it, node 1's.
    allocator.hotplug().add_memory(BASE + 6 * UNIT..BASE + 8 * UNIT, ZoneType::Normal).unwrap();
    allocator.hotplug().add_memory(BASE + 12 * UNIT..BASE + 13 * UNIT, ZoneType::Normal).unwrap();
    let spans: Vec<u64> = allocator.zones().iter().map(|zone| zone.spanned_pages()).collect();
    assert_eq!(spans, [8 * UNIT, 5 * UNIT]);
    allocator.check_invariants().unwrap();
}

#[test]
fn growths_run_out_cleanly() {
    let allocator = normal(UNIT, None);
    for step in 1..=MAX_GROWTHS as u64 {
        allocator.hotplug().add_memory(BASE + step * UNIT..BASE + (step + 1) * UNIT, ZoneType::Normal).unwrap();
    }
    let before = snapshot(&allocator);
    let next = BASE + (MAX_GROWTHS as u64 + 1) * UNIT;
    assert!(matches!(
        allocator.hotplug().add_memory(next..next + UNIT, ZoneType::Normal),
        Err(RangeError::Grow { reason: GrowError::Exhausted, .. })
    ));
    assert_eq!(snapshot(&allocator), before);
    let pfns = drain_and_refill(&allocator, 0);
    let high_pages = allocator.zones()[0].state().params().watermarks.high_pages;
    assert!(pfns.len() as u64 + high_pages + 2 >= (MAX_GROWTHS as u64 + 1) * UNIT);
    assert!(pfns.iter().any(|&pfn| pfn >= next - UNIT), "the last growth's memory is handed out");
    allocator.check_invariants().unwrap();
}

/// Growths while other threads allocate and free: the new records are published before
/// any pfn in them can be handed out, and the old ones never move.
#[test]
fn growing_while_other_cpus_allocate_and_free() {
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, BASE..BASE + 4 * UNIT);
    let allocator = Arc::new(PageAllocator::build(builder, StdPlatform::with_cpus(4)).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (allocator, stop) = (Arc::clone(&allocator), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut held: Vec<Block> = Vec::new();
                let mut round = 0u64;
                while !stop.load(Relaxed) {
                    round += 1;
                    let order = (round % 4) as u8 * 3;
                    if let Ok(block) = allocator.alloc_pages(order, HOLD) {
                        held.push(block);
                    }
                    if held.len() > 64 || round.is_multiple_of(7) {
                        if let Some(block) = held.pop() {
                            allocator.free_pages(block).unwrap();
                        }
                    }
                }
                for block in held {
                    allocator.free_pages(block).unwrap();
                }
            })
        })
        .collect();
    for step in 0..MAX_GROWTHS as u64 {
        let start = BASE + (4 + 2 * step) * UNIT;
        allocator.hotplug().add_memory(start..start + 2 * UNIT, ZoneType::Normal).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    stop.store(true, Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    allocator.pagesets().drain_all();
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.free_pages, (4 + 2 * MAX_GROWTHS as u64) * UNIT);
}

/// A zone type with no memory at boot (as every Linux node has its ZONE_MOVABLE, empty until
/// memory is onlined to it): declared as one pageblock of hole, it takes memory added
/// anywhere above, and allocations that may use it are served from it.
#[test]
fn a_zone_declared_empty_takes_memory_added_anywhere_above_it() {
    let movable_start = BASE + 64 * UNIT;
    let builder = AllocatorBuilder::new()
        .zone(0, ZoneType::Normal, BASE..BASE + 4 * UNIT)
        .zone(0, ZoneType::Movable, movable_start..movable_start + UNIT / 2)
        .hole(movable_start..movable_start + UNIT / 2);
    let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    assert_eq!(allocator.zones()[1].state().managed_pages(), 0);
    let far = movable_start + 1024 * UNIT..movable_start + 1280 * UNIT; // 1 GiB, 4 GiB above
    assert_eq!(allocator.hotplug().add_memory(far.clone(), ZoneType::Movable).unwrap(), 256 * UNIT);
    assert_eq!(allocator.zones()[1].spanned_pages(), 1280 * UNIT);
    let block = allocator.alloc_pages(MAX_ORDER, HOLD).unwrap();
    assert!(far.contains(&block.pfn()), "movable requests take the added zone first");
    let kernel = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    assert!(kernel.pfn() < BASE + 4 * UNIT, "kernel requests stay out of ZONE_MOVABLE");
    allocator.free_pages(block).unwrap();
    allocator.free_pages(kernel).unwrap();
    allocator.check_invariants().unwrap();
}

/// With fullest-first, the growth also places the bucket tables' directories: the bytes
/// said are enough, also after an attempt with too little memory made part of them.
#[test]
fn the_metadata_bytes_said_suffice_with_fullest_first_and_after_a_failed_attempt() {
    let allocator = normal(4 * UNIT, Some("mainline+fullest-first"));
    let range = BASE + 4 * UNIT..BASE + 6 * UNIT;
    let before = allocator.hotplug().add_memory_metadata_bytes(range.clone(), ZoneType::Normal).unwrap();
    // Enough for the first directories, not for the frames.
    let small = heap_memory(4096);
    assert!(matches!(
        allocator.hotplug().add_memory_in(range.clone(), ZoneType::Normal, small),
        Err(RangeError::Grow { reason: GrowError::Metadata(_), .. })
    ));
    let after = allocator.hotplug().add_memory_metadata_bytes(range.clone(), ZoneType::Normal).unwrap();
    assert!(after <= before, "{after} bytes after the failed attempt, {before} before");
    let exact = heap_memory(after as usize);
    assert_eq!(allocator.hotplug().add_memory_in(range, ZoneType::Normal, exact).unwrap(), 2 * UNIT);
    allocator.check_invariants().unwrap();
    // The next growth needs no directories: fewer bytes per frame.
    let next = BASE + 6 * UNIT..BASE + 8 * UNIT;
    assert!(allocator.hotplug().add_memory_metadata_bytes(next, ZoneType::Normal).unwrap() < before);
}

/// A range reaching from inside the span past it: its inner part must be holes, and when
/// it is not, the zone does not grow for an add that fails.
#[test]
fn a_range_across_the_end_grows_the_zone_only_if_its_inner_part_is_holes() {
    let allocator = normal(4 * UNIT, None);
    let before = snapshot(&allocator);
    assert_eq!(
        allocator.hotplug().add_memory(BASE + 2 * UNIT..BASE + 6 * UNIT, ZoneType::Normal),
        Err(RangeError::NotOffline { pfn: BASE + 2 * UNIT })
    );
    assert_eq!(snapshot(&allocator), before, "no growth for an add that failed");
    allocator.hotplug().offline(BASE + 3 * UNIT..BASE + 4 * UNIT).unwrap();
    assert_eq!(allocator.hotplug().add_memory(BASE + 3 * UNIT..BASE + 6 * UNIT, ZoneType::Normal).unwrap(), 3 * UNIT);
    assert_eq!((allocator.zones()[0].spanned_pages(), allocator.counters().managed_pages()), (6 * UNIT, 6 * UNIT));
    allocator.check_invariants().unwrap();
}
