//! Range operations: memory offline, online and add_memory, and contiguous runs beyond
//! MAX_ORDER (a 1 GiB run out of fragmented memory). A client owns movable blocks with
//! contents (a tag per block) and moves them when asked; every refused operation leaves
//! the allocator exactly as it was (same /proc/pagetypeinfo, same census), and every
//! completed one keeps the invariant checker green.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use common::refusal_snapshot;
use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::platform::TestPlatform;
use pagealloc::{AllocError, AllocRequest, AllocatorBuilder, Block, PageAllocator, Pfn, RangeError, ZoneType};

const UNIT: u64 = 1 << pagealloc::MAX_ORDER;
const HOLD: AllocRequest = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };

/// Blocks with a tag each (their contents), by head pfn; a move carries the tag along.
#[derive(Default)]
struct Owner {
    blocks: Mutex<HashMap<Pfn, (Block, u64)>>,
    refuse: AtomicBool,
}

impl Owner {
    fn hold(&self, block: Block) {
        let tag = block.pfn().wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.blocks.lock().unwrap().insert(block.pfn(), (block, tag));
    }

    /// The tags, in a map from tag to pages: what moves must preserve.
    fn tags(&self) -> HashMap<u64, u64> {
        self.blocks.lock().unwrap().values().map(|(block, tag)| (*tag, block.pages())).collect()
    }

    fn pfns(&self) -> Vec<Pfn> {
        self.blocks.lock().unwrap().keys().copied().collect()
    }

    fn release(&self, allocator: &PageAllocator<TestPlatform>, pfn: Pfn) {
        let (block, _) = self.blocks.lock().unwrap().remove(&pfn).unwrap();
        allocator.free_pages(block).unwrap();
    }

    fn release_all(&self, allocator: &PageAllocator<TestPlatform>) {
        for (_, (block, _)) in self.blocks.lock().unwrap().drain() {
            allocator.free_pages(block).unwrap();
        }
    }
}

impl Migrate<TestPlatform> for Owner {
    fn migrate(&self, _: &PageAllocator<TestPlatform>, source: MigrateSource, target: Block) -> Result<Block, Block> {
        let mut blocks = self.blocks.lock().unwrap();
        let owned = blocks.get(&source.pfn).is_some_and(|(block, _)| source.is(block));
        if self.refuse.load(Relaxed) || !owned || target.order() != source.order {
            return Err(target);
        }
        let (old, tag) = blocks.remove(&source.pfn).unwrap();
        blocks.insert(target.pfn(), (target, tag));
        Ok(old)
    }
}

fn allocator(builder: AllocatorBuilder, owner: &Arc<Owner>) -> PageAllocator<TestPlatform> {
    let mut allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    allocator.set_migrate(owner.clone());
    allocator
}

/// Holds every other order-0 page of memory (down to the min watermark): movable pages
/// scattered over every pageblock.
fn scatter(allocator: &PageAllocator<TestPlatform>, owner: &Owner) {
    let mut all = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, HOLD) {
        all.push(block);
    }
    all.sort_by_key(Block::pfn);
    for (i, block) in all.into_iter().enumerate() {
        if i % 2 == 0 {
            owner.hold(block);
        } else {
            allocator.free_pages(block).unwrap();
        }
    }
    allocator.pagesets().drain_all();
}

fn first_unit(allocator: &PageAllocator<TestPlatform>) -> Pfn {
    allocator.zones()[0].start_pfn().next_multiple_of(UNIT)
}

#[test]
fn offline_moves_the_movable_pages_out_and_online_brings_the_range_back() {
    let owner = Arc::new(Owner::default());
    let allocator = allocator(AllocatorBuilder::single_zone(ZoneType::Normal, 16 * UNIT), &owner);
    scatter(&allocator, &owner);
    let (tags, managed) = (owner.tags(), allocator.counters().managed_pages());
    let start = first_unit(&allocator);
    let range = start..start + 4 * UNIT;
    assert!(owner.pfns().iter().any(|pfn| range.contains(pfn)), "the range holds pages to move");

    assert_eq!(allocator.hotplug().offline(range.clone()).unwrap(), 4 * UNIT);
    assert_eq!(owner.tags(), tags, "every block moved with its contents");
    assert!(owner.pfns().iter().all(|pfn| !range.contains(pfn)), "nothing left in the range");
    assert_eq!(allocator.counters().managed_pages(), managed - 4 * UNIT);
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.managed_pages, managed - 4 * UNIT);
    // Offline frames are holes: no allocation reaches them, a free of one is refused.
    // SAFETY: the frame is offline, so the free is refused before anything is touched.
    assert!(unsafe { allocator.free_pfn(range.start, 0) }.is_err());
    assert_eq!(allocator.hotplug().offline(range.clone()), Err(RangeError::NotOnline { pfn: range.start }));

    assert_eq!(allocator.hotplug().online(range.clone()).unwrap(), 4 * UNIT);
    assert_eq!(allocator.counters().managed_pages(), managed);
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.hotplug().online(range.clone()), Err(RangeError::NotOffline { pfn: range.start }));
    // The range is usable again: memory can be filled into it.
    let mut got_one = false;
    while let Ok(block) = allocator.alloc_pages(0, HOLD) {
        got_one |= range.contains(&block.pfn());
        owner.hold(block);
    }
    assert!(got_one, "allocations reach the onlined range");
    owner.release_all(&allocator);
    allocator.pagesets().drain_all();
    assert_eq!(allocator.counters().buddy_free_pages(), managed);
}

#[test]
fn offline_without_a_migration_client_names_the_missing_client() {
    let owner = Owner::default();
    let allocator =
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 16 * UNIT), TestPlatform::new(2)).unwrap();
    scatter(&allocator, &owner);
    let start = first_unit(&allocator);
    let range = start..start + 4 * UNIT;
    let held = owner.pfns().into_iter().filter(|pfn| range.contains(pfn)).min().expect("the range holds pages");
    let before = refusal_snapshot(&allocator);
    assert_eq!(allocator.hotplug().offline(range.clone()), Err(RangeError::NoMigrationClient { pfn: held }));
    assert_eq!(refusal_snapshot(&allocator), before);
    owner.release_all(&allocator);
}

#[test]
fn a_refused_offline_leaves_everything_as_it_was() {
    let owner = Arc::new(Owner::default());
    let allocator = allocator(AllocatorBuilder::single_zone(ZoneType::Normal, 16 * UNIT), &owner);
    scatter(&allocator, &owner);
    let start = first_unit(&allocator);
    let range = start..start + 2 * UNIT;

    // The client refuses every move.
    owner.refuse.store(true, Relaxed);
    let before = refusal_snapshot(&allocator);
    assert!(matches!(allocator.hotplug().offline(range.clone()), Err(RangeError::MigrationFailed { .. })));
    assert_eq!(refusal_snapshot(&allocator), before);
    owner.refuse.store(false, Relaxed);

    // An unmovable block in the range: refused before anything changes.
    let freed = owner.pfns().into_iter().find(|pfn| range.contains(pfn)).unwrap();
    owner.release(&allocator, freed);
    allocator.pagesets().drain_all();
    let kernel = loop {
        let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
        if range.contains(&block.pfn()) {
            break block;
        }
        owner.hold(block); // not movable, but held so that the next take reaches the range
    };
    let before = refusal_snapshot(&allocator);
    assert_eq!(allocator.hotplug().offline(range.clone()), Err(RangeError::Unmovable { pfn: kernel.pfn() }));
    assert_eq!(refusal_snapshot(&allocator), before);

    // Bad ranges.
    assert!(matches!(allocator.hotplug().offline(start + 1..start + UNIT), Err(RangeError::Misaligned { .. })));
    assert!(matches!(allocator.hotplug().offline(start..start), Err(RangeError::Misaligned { .. })));
    assert!(matches!(allocator.hotplug().offline(0..UNIT * 1024 * 1024), Err(RangeError::OutsideZone { .. })));
    assert_eq!(refusal_snapshot(&allocator), before);
    allocator.free_pages(kernel).unwrap();
}

#[test]
fn add_memory_fills_holes_of_the_span_and_refuses_what_it_cannot_add() {
    let owner = Arc::new(Owner::default());
    let builder = AllocatorBuilder::new()
        .zone(0, ZoneType::Dma32, 0..8 * UNIT)
        .zone(0, ZoneType::Normal, 8 * UNIT..32 * UNIT)
        .hole(16 * UNIT..32 * UNIT);
    let allocator = allocator(builder, &owner);
    let managed = allocator.counters().managed_pages();
    let before = refusal_snapshot(&allocator);
    let hole = 16 * UNIT..20 * UNIT;
    assert_eq!(
        allocator.hotplug().add_memory(hole.clone(), ZoneType::Dma32),
        Err(RangeError::OutsideZone { pfn: hole.start })
    );
    assert_eq!(
        allocator.hotplug().online(hole.clone()),
        Err(RangeError::NotOffline { pfn: hole.start }),
        "never added"
    );
    assert_eq!(
        allocator.hotplug().add_memory(8 * UNIT..17 * UNIT, ZoneType::Normal),
        Err(RangeError::NotOffline { pfn: 8 * UNIT })
    );
    // Past the span: a growth, which only the memory-growth feature makes (tests/grow.rs).
    #[cfg(not(feature = "memory-growth"))]
    {
        let disabled = |result| matches!(result, Err(RangeError::Grow { reason: pagealloc::GrowError::Disabled, .. }));
        assert!(disabled(allocator.hotplug().add_memory(16 * UNIT..40 * UNIT, ZoneType::Normal)));
        assert!(disabled(allocator.hotplug().add_memory_metadata_bytes(32 * UNIT..40 * UNIT, ZoneType::Normal)));
    }
    assert_eq!(refusal_snapshot(&allocator), before);

    assert_eq!(allocator.hotplug().add_memory(hole.clone(), ZoneType::Normal).unwrap(), 4 * UNIT);
    assert_eq!(allocator.counters().managed_pages(), managed + 4 * UNIT);
    assert_eq!(allocator.zones()[1].state().present_pages(), 12 * UNIT);
    allocator.check_invariants().unwrap();
    let block = allocator.alloc_pages(pagealloc::MAX_ORDER, HOLD).unwrap();
    allocator.free_pages(block).unwrap();
    assert_eq!(allocator.hotplug().add_memory(hole, ZoneType::Normal), Err(RangeError::NotOffline { pfn: 16 * UNIT }));
}

#[test]
fn a_1_gib_run_comes_out_of_fragmented_memory_and_goes_back() {
    const GIB_PAGES: u64 = 1 << 18;
    let owner = Arc::new(Owner::default());
    let allocator = allocator(AllocatorBuilder::single_zone(ZoneType::Normal, 2 * GIB_PAGES + 16 * UNIT), &owner);
    scatter(&allocator, &owner);
    let (tags, managed) = (owner.tags(), allocator.counters().managed_pages());
    // Half of memory is free, none of it in blocks of more than one page.
    assert!(allocator.counters().buddy_free_pages() > GIB_PAGES / 2);

    let run = allocator.alloc_contig(GIB_PAGES, GIB_PAGES, AllocRequest::KERNEL).unwrap();
    assert_eq!((run.pfn() % GIB_PAGES, run.pages()), (0, GIB_PAGES));
    let range = run.pfn()..run.pfn() + run.pages();
    assert_eq!(owner.tags(), tags, "every block moved out with its contents");
    assert!(owner.pfns().iter().all(|pfn| !range.contains(pfn)));
    let census = allocator.check_invariants().unwrap();
    assert!(census.allocated_pages >= GIB_PAGES + tags.len() as u64);

    // A second run of 1 GiB does not fit beside the first and the held pages.
    let before = refusal_snapshot(&allocator);
    assert_eq!(
        allocator.alloc_contig(GIB_PAGES, GIB_PAGES, AllocRequest::KERNEL),
        Err(AllocError::ContigUnavailable { pages: GIB_PAGES })
    );
    assert_eq!(refusal_snapshot(&allocator), before);

    allocator.free_contig(run).unwrap();
    owner.release_all(&allocator);
    allocator.pagesets().drain_all();
    assert_eq!(allocator.counters().buddy_free_pages(), managed);
    allocator.check_invariants().unwrap();
}

#[test]
fn contiguous_runs_skip_unmovable_memory_and_refuse_bad_requests() {
    let owner = Arc::new(Owner::default());
    let allocator = allocator(AllocatorBuilder::single_zone(ZoneType::Normal, 8 * UNIT), &owner);
    assert_eq!(allocator.alloc_contig(0, 1, AllocRequest::KERNEL), Err(AllocError::EmptyRun));
    assert_eq!(allocator.alloc_contig(4, 3, AllocRequest::KERNEL), Err(AllocError::ContigUnavailable { pages: 4 }));
    // An unmovable page in every unit: no run of two units exists, and nothing changes.
    let mut kernel = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
        kernel.push(block);
    }
    kernel.sort_by_key(Block::pfn);
    let mut pinned = Vec::new();
    for block in kernel {
        if pinned.last().is_none_or(|last: &Block| last.pfn() / UNIT != block.pfn() / UNIT) {
            pinned.push(block);
        } else {
            allocator.free_pages(block).unwrap();
        }
    }
    let before = refusal_snapshot(&allocator);
    assert!(allocator.alloc_contig(UNIT + 1, 1, AllocRequest::KERNEL).is_err());
    assert_eq!(refusal_snapshot(&allocator), before);
    // A run within one unit, beside its pinned page, still works.
    let run = allocator.alloc_contig(UNIT / 2, UNIT / 2, AllocRequest::KERNEL).unwrap();
    assert!(pinned.iter().all(|block| !(run.pfn()..run.pfn() + run.pages()).contains(&block.pfn())));
    allocator.free_contig(run).unwrap();
    for block in pinned {
        allocator.free_pages(block).unwrap();
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn offline_and_online_race_allocating_threads_safely() {
    let owner = Arc::new(Owner::default());
    let allocator = allocator(AllocatorBuilder::single_zone(ZoneType::Normal, 16 * UNIT), &owner);
    let start = first_unit(&allocator);
    let managed = allocator.counters().managed_pages();
    let stop = AtomicBool::new(false);
    let (offlined, refused) = std::thread::scope(|scope| {
        for worker in 0..2u64 {
            let (allocator, owner, stop) = (&allocator, &owner, &stop);
            scope.spawn(move || {
                let mut step = worker;
                while !stop.load(Relaxed) {
                    step = step.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let pfns = if step >> 62 == 0 { owner.pfns() } else { Vec::new() };
                    if !pfns.is_empty() {
                        let pfn = pfns[(step >> 33) as usize % pfns.len()];
                        let held = owner.blocks.lock().unwrap().remove(&pfn);
                        if let Some((block, _)) = held {
                            allocator.free_pages(block).unwrap();
                        }
                    } else if let Ok(block) = allocator.alloc_pages(0, HOLD) {
                        owner.hold(block);
                    }
                }
            });
        }
        let (mut offlined, mut refused) = (0, 0);
        for round in 0..200u64 {
            let range = start + (round % 8) * UNIT..start + (round % 8 + 1) * UNIT;
            match allocator.hotplug().offline(range.clone()) {
                Ok(_) => {
                    offlined += 1;
                    allocator.hotplug().online(range).unwrap();
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, Relaxed);
        (offlined, refused)
    });
    eprintln!("offlined {offlined}, refused {refused}");
    assert!(offlined > 0, "offlined {offlined}, refused {refused}");
    allocator.check_invariants().unwrap();
    owner.release_all(&allocator);
    allocator.pagesets().drain_all();
    assert_eq!((allocator.counters().managed_pages(), allocator.counters().buddy_free_pages()), (managed, managed));
}

/// A block larger than a pageblock across a range's edge keeps the range from being
/// isolated: its free would put pages on both sides on one list (found by `pagelab
/// torture`: an offline that raced an order-10 allocation left 512 frames outside any block).
#[test]
fn a_block_across_the_range_edge_makes_it_busy_and_changes_nothing() {
    let owner = Arc::new(Owner::default());
    let allocator = allocator(AllocatorBuilder::single_zone(ZoneType::Normal, 16 * UNIT), &owner);
    for _ in 0..3 {
        owner.hold(allocator.alloc_pages(pagealloc::MAX_ORDER, HOLD).unwrap());
    }
    let head = owner.pfns().into_iter().min().unwrap();
    let before = refusal_snapshot(&allocator);
    let half = UNIT / 2;
    assert_eq!(allocator.hotplug().offline(head..head + half), Err(RangeError::Busy { pfn: head }));
    assert_eq!(allocator.hotplug().offline(head + half..head + UNIT + half), Err(RangeError::Busy { pfn: head }));
    assert!(allocator.alloc_contig(half, half, AllocRequest::KERNEL).is_ok_and(|run| {
        let outside = run.pfn() + run.pages() <= head || run.pfn() >= head + UNIT;
        allocator.free_contig(run).unwrap();
        outside
    }));
    assert_eq!(refusal_snapshot(&allocator), before);
    owner.release_all(&allocator);
    allocator.check_invariants().unwrap();
}

/// (batch, high_min, high_max, high) of every pageset of the allocator's first zone.
fn pageset_bounds(allocator: &PageAllocator<TestPlatform>) -> Vec<(u32, u32, u32, u32)> {
    let zone = &allocator.zones()[0];
    zone.pagesets()
        .iter()
        .map(|slot| {
            slot.inspect(allocator.platform(), |pcp| {
                (pcp.batch_pages(), pcp.high_min_pages(), pcp.high_max_pages(), pcp.high_pages())
            })
        })
        .collect()
}

#[test]
fn memory_offline_and_online_re_derive_watermarks_reserves_and_pageset_bounds() {
    let allocator =
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18), TestPlatform::new(4)).unwrap();
    let zone = &allocator.zones()[0];
    let (params_before, bounds_before) = (zone.state().params(), pageset_bounds(&allocator));
    let start = zone.start_pfn().next_multiple_of(UNIT);
    let half = 1 << 17;
    assert_eq!(allocator.hotplug().offline(start..start + half).unwrap(), half);
    // As a machine built with that much memory: the same derivation, from the pages now.
    let smaller = PageAllocator::build(
        AllocatorBuilder::single_zone(ZoneType::Normal, zone.state().managed_pages()),
        TestPlatform::new(4),
    )
    .unwrap();
    assert_eq!(smaller.counters().managed_pages(), allocator.counters().managed_pages());
    assert_eq!(zone.state().params(), smaller.zones()[0].state().params());
    assert!(
        zone.state().params().watermarks.min_pages < params_before.watermarks.min_pages,
        "{:?}",
        zone.state().params()
    );
    let shrunk = pageset_bounds(&allocator);
    let fresh = pageset_bounds(&smaller);
    for (ours, built) in shrunk.iter().zip(&fresh) {
        assert_eq!(ours.0..=ours.2, built.0..=built.2, "batch, high_min, high_max as built");
        assert!((ours.1..=ours.2).contains(&ours.3), "high within its new bounds: {ours:?}");
    }
    assert!(shrunk[0].2 < bounds_before[0].2, "high_max follows the zone down");
    let mut text = String::new();
    pagealloc::views::write_zoneinfo_zones(
        &mut text,
        &pagealloc::views::ZoneinfoZone::from_allocator(&allocator),
        pagealloc::sizing::LinuxVersion::MAINLINE,
    )
    .unwrap();
    assert!(text.contains(&format!("managed  {}", zone.state().managed_pages())), "{text}");
    assert!(text.contains(&format!("min      {}", zone.state().params().watermarks.min_pages)), "{text}");
    allocator.check_invariants().unwrap();
    allocator.hotplug().online(start..start + half).unwrap();
    assert_eq!(zone.state().params(), params_before, "back online: every parameter as built");
    let restored = pageset_bounds(&allocator);
    for (now, built) in restored.iter().zip(&bounds_before) {
        assert_eq!((now.0, now.1, now.2), (built.0, built.1, built.2));
    }
    allocator.check_invariants().unwrap();
}

/// Memory added to a zone that had none at build is used as soon as it is online (Linux
/// rebuilds its zonelists when a zone becomes populated; ours list every zone and move
/// where walks start), through the zone's pagesets; taking it all offline again sends
/// allocations back to the zone below.
#[test]
fn a_zone_empty_at_build_serves_memory_added_later_and_stops_when_it_goes() {
    let normal = 0x10_0000..0x10_4000;
    let builder = AllocatorBuilder::new()
        .zone(0, ZoneType::Dma32, 0x1000..0x2000)
        .zone(0, ZoneType::Normal, normal.clone())
        .hole(normal.clone());
    let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    let from_normal = |block: &Block| normal.contains(&block.pfn());
    let before = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    assert!(!from_normal(&before), "nothing in Normal yet");
    allocator.free_pages(before).unwrap();

    assert_eq!(allocator.hotplug().add_memory(normal.clone(), ZoneType::Normal).unwrap(), 1 << 14);
    let first = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    assert!(from_normal(&first), "the added memory is the preferred zone now: {:#x}", first.pfn());
    allocator.free_pages(first).unwrap();
    let normal_zone = &allocator.zones()[1];
    let cached: u32 =
        normal_zone.pagesets().iter().map(|slot| slot.inspect(allocator.platform(), |pcp| pcp.count_pages())).sum();
    assert!(cached > 0, "the free went to the new zone's pageset");
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE) {
        held.push(block);
    }
    let taken_from_normal = held.iter().filter(|block| from_normal(block)).count() as u64;
    assert!(taken_from_normal > normal_zone.state().managed_pages() * 9 / 10, "{taken_from_normal} pages from Normal");
    allocator.free_bulk(held).unwrap();
    allocator.check_invariants().unwrap();

    assert_eq!(allocator.hotplug().offline(normal.clone()).unwrap(), 1 << 14);
    let after = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    assert!(!from_normal(&after), "Normal is empty again");
    allocator.free_pages(after).unwrap();
    allocator.check_invariants().unwrap();
}
