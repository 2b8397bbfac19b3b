//! Range operations across per-CPU arenas (the `pagealloc` preset): a node's zone is cut
//! into arenas at max-order boundaries, and a contiguous run or an offline range may cross
//! from one arena into the next. Each arena's part is isolated and emptied, then each is
//! taken; a refused operation undoes every part.

#![cfg(feature = "alloc")]

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use common::*;
use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::builder::MIN_ARENA_PAGES;
use pagealloc::platform::TestPlatform;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, PageAllocator, Pfn, RangeError, ZoneType};

const UNIT: u64 = 1 << pagealloc::MAX_ORDER;
const GIB_PAGES: u64 = 1 << 18;
const HOLD: AllocRequest = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };

/// Movable blocks by head pfn, moved when asked unless told to refuse.
#[derive(Default)]
struct Owner {
    blocks: Mutex<HashMap<Pfn, Block>>,
    refuse: AtomicBool,
}

impl Owner {
    fn pfns(&self) -> Vec<Pfn> {
        self.blocks.lock().unwrap().keys().copied().collect()
    }

    fn release_all(&self, allocator: &TestAllocator) {
        let blocks: Vec<Block> = self.blocks.lock().unwrap().drain().map(|(_, block)| block).collect();
        allocator.free_bulk(blocks).unwrap();
    }
}

impl Migrate<TestPlatform> for Owner {
    fn migrate(&self, _: &TestAllocator, source: MigrateSource, target: Block) -> Result<Block, Block> {
        let mut blocks = self.blocks.lock().unwrap();
        let owned = blocks.get(&source.pfn).is_some_and(|block| source.is(block));
        if self.refuse.load(Relaxed) || !owned || target.order() != source.order {
            return Err(target);
        }
        let old = blocks.remove(&source.pfn).unwrap();
        blocks.insert(target.pfn(), target);
        Ok(old)
    }
}

/// One Normal zone of `pages` under the `pagealloc` preset on `cpus` CPUs, cut into
/// `cpus` arenas, with `owner` as migration client.
fn arenas(pages: u64, cpus: usize, owner: &Arc<Owner>) -> TestAllocator {
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, pages).policy(preset("pagealloc"));
    let mut allocator = PageAllocator::build(builder, TestPlatform::new(cpus)).unwrap();
    allocator.set_migrate(owner.clone());
    assert_eq!(allocator.zones().len(), cpus, "an arena per CPU");
    allocator
}

/// Every CPU holds `per_cpu` movable pages of its own arena, every other one it takes.
fn hold_some(allocator: &TestAllocator, owner: &Owner, per_cpu: usize) {
    for cpu in 0..allocator.zones().len() {
        allocator.platform().set_cpu(cpu);
        for i in 0..2 * per_cpu {
            let block = allocator.alloc_pages(0, HOLD).unwrap();
            if i % 2 == 0 {
                owner.blocks.lock().unwrap().insert(block.pfn(), block);
            } else {
                allocator.free_pages(block).unwrap();
            }
        }
    }
    allocator.platform().set_cpu(0);
    allocator.pagesets().drain_all();
}

/// Holds every other order-0 page of memory (down to the watermarks): movable pages
/// scattered over every pageblock of every arena.
fn scatter(allocator: &TestAllocator, owner: &Owner) {
    let mut all = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, HOLD) {
        all.push(block);
    }
    all.sort_by_key(Block::pfn);
    let mut blocks = owner.blocks.lock().unwrap();
    for (i, block) in all.into_iter().enumerate() {
        if i % 2 == 0 {
            blocks.insert(block.pfn(), block);
        } else {
            allocator.free_pages(block).unwrap();
        }
    }
    allocator.pagesets().drain_all();
}

#[test]
fn a_1_gib_run_spans_arenas_of_256_mib() {
    let owner = Arc::new(Owner::default());
    let allocator = arenas(2 * GIB_PAGES, 8, &owner);
    assert!(allocator.zones().iter().all(|zone| zone.spanned_pages() == GIB_PAGES / 4), "256 MiB arenas");
    hold_some(&allocator, &owner, 64);
    let (held, managed) = (owner.pfns().len(), allocator.counters().managed_pages());

    let run = allocator.alloc_contig(GIB_PAGES, GIB_PAGES, AllocRequest::KERNEL).unwrap();
    assert_eq!((run.pfn() % GIB_PAGES, run.pages()), (0, GIB_PAGES));
    let range = run.pfn()..run.pfn() + run.pages();
    assert_eq!(owner.pfns().len(), held);
    assert!(owner.pfns().iter().all(|pfn| !range.contains(pfn)), "every held page moved out");
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.allocated_pages, GIB_PAGES + held as u64);
    let blocks: Vec<Block> = allocator.contig_blocks(run).collect();
    let zones: std::collections::BTreeSet<u16> = blocks.iter().map(Block::zone_index).collect();
    assert_eq!(zones.len(), 4, "the run's blocks lie in four arenas");
    for block in &blocks {
        let zone = &allocator.zones()[block.zone_index() as usize];
        assert!((zone.start_pfn()..zone.start_pfn() + zone.spanned_pages()).contains(&block.pfn()), "{block:?}");
    }
    allocator.free_bulk(blocks).unwrap();
    owner.release_all(&allocator);
    allocator.pagesets().drain_all();
    assert_eq!(allocator.check_invariants().unwrap().free_pages, managed);
}

#[test]
fn a_run_across_arenas_frees_with_free_contig() {
    let owner = Arc::new(Owner::default());
    let allocator = arenas(4 * MIN_ARENA_PAGES, 2, &owner);
    let boundary = allocator.zones()[1].start_pfn();
    // More than an arena holds.
    let pages = allocator.zones()[0].spanned_pages() + UNIT;
    let run = allocator.alloc_contig(pages, UNIT, AllocRequest::KERNEL).unwrap();
    assert!(run.pfn() < boundary && run.pfn() + pages > boundary, "the run crosses the boundary");
    allocator.check_invariants().unwrap();
    allocator.free_contig(run).unwrap();
    allocator.pagesets().drain_all();
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.free_pages, allocator.counters().managed_pages());
}

#[test]
fn offline_and_online_cross_an_arena_boundary() {
    let owner = Arc::new(Owner::default());
    let allocator = arenas(4 * MIN_ARENA_PAGES, 2, &owner);
    scatter(&allocator, &owner);
    let managed = allocator.counters().managed_pages();
    let zone_managed: Vec<u64> = allocator.zones().iter().map(|zone| zone.state().managed_pages()).collect();
    let boundary = allocator.zones()[1].start_pfn();
    let range = boundary - 2 * UNIT..boundary + 2 * UNIT;

    assert_eq!(allocator.hotplug().offline(range.clone()), Ok(4 * UNIT));
    assert!(owner.pfns().iter().all(|pfn| !range.contains(pfn)), "nothing left in the range");
    assert_eq!(allocator.counters().managed_pages(), managed - 4 * UNIT);
    for (zone, before) in allocator.zones().iter().zip(&zone_managed) {
        assert_eq!(zone.state().managed_pages(), before - 2 * UNIT, "each arena gave its part");
    }
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.hotplug().offline(range.clone()), Err(RangeError::NotOnline { pfn: range.start }));

    assert_eq!(allocator.hotplug().online(range.clone()), Ok(4 * UNIT));
    assert_eq!(allocator.counters().managed_pages(), managed);
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.hotplug().online(range), Err(RangeError::NotOffline { pfn: boundary - 2 * UNIT }));
    owner.release_all(&allocator);
}

#[test]
fn a_refused_offline_across_arenas_undoes_every_part() {
    let owner = Arc::new(Owner::default());
    let allocator = arenas(4 * MIN_ARENA_PAGES, 2, &owner);
    scatter(&allocator, &owner);
    let boundary = allocator.zones()[1].start_pfn();
    let range = boundary - 2 * UNIT..boundary + 2 * UNIT;
    for part in [range.start..boundary, boundary..range.end] {
        assert!(owner.pfns().iter().any(|pfn| part.contains(pfn)), "each part holds pages to move");
    }

    owner.refuse.store(true, Relaxed);
    let before = refusal_snapshot(&allocator);
    assert!(matches!(allocator.hotplug().offline(range.clone()), Err(RangeError::MigrationFailed { .. })));
    assert_eq!(refusal_snapshot(&allocator), before, "both parts' isolation undone");
    owner.refuse.store(false, Relaxed);
    owner.release_all(&allocator);
}

/// Arenas of different zone types, or of different nodes, do not make one range.
#[test]
fn a_range_over_two_zone_types_stays_outside_one_zone() {
    let four_gib = 1 << 20;
    let dma32 = four_gib - 2 * MIN_ARENA_PAGES..four_gib;
    let normal = four_gib..four_gib + 2 * MIN_ARENA_PAGES;
    let builder = AllocatorBuilder::new()
        .node(2)
        .zone(0, ZoneType::Dma32, dma32)
        .zone(0, ZoneType::Normal, normal)
        .policy(preset("pagealloc"));
    let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    assert_eq!(allocator.zones().len(), 4, "two arenas of each zone");
    let before = refusal_snapshot(&allocator);
    let range = four_gib - UNIT..four_gib + UNIT;
    assert_eq!(allocator.hotplug().offline(range), Err(RangeError::OutsideZone { pfn: four_gib }));
    assert_eq!(refusal_snapshot(&allocator), before);
}
