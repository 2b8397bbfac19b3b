//! Bulk frees (`free_bulk`, `free_pfns_bulk`): each block is freed exactly as a
//! single free would free it, in the order given, whatever the batch's length against the
//! look-ahead; a refused block is refused with the single free's error and changes nothing,
//! and the rest of the batch is still freed.

#![cfg(feature = "alloc")]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use pagealloc::{
    AllocRequest, AllocatorBuilder, Block, BulkFreeError, EventSink, ExtfragEvent, FreeError, PageEvent,
    FREE_LOOKAHEAD_BLOCKS,
};

/// The frees the allocator saw, in order.
#[derive(Default)]
struct Frees(Mutex<Vec<(u64, u8)>>);

impl EventSink for Frees {
    fn extfrag(&self, _event: &ExtfragEvent) {}
    fn page(&self, event: &PageEvent) {
        if let PageEvent::Free { pfn, order } = *event {
            self.0.lock().unwrap().push((pfn, order));
        }
    }
}

fn build(preset_name: &str) -> (TestAllocator, Arc<Frees>) {
    let frees = Arc::new(Frees::default());
    let builder = AllocatorBuilder::pc_layout(256).policy(preset(preset_name)).event_sink(Box::new(frees.clone()));
    (build_allocator(builder, 2), frees)
}

/// `count` blocks of orders 0-3 in a seeded random order, on both CPUs.
fn allocate_shuffled(allocator: &TestAllocator, count: usize, seed: u64) -> Vec<Block> {
    let mut rng = Rng(seed);
    let mut held: Vec<Block> = (0..count)
        .map(|at| {
            allocator.platform().set_cpu(at % 2);
            allocator.alloc_pages(rng.below(4) as u8, AllocRequest::USER_MOVABLE).unwrap()
        })
        .collect();
    for at in (1..held.len()).rev() {
        held.swap(at, rng.below(at as u64 + 1) as usize);
    }
    held
}

/// Lengths around the look-ahead: empty, shorter, equal, one more, twice (the ring wraps
/// once, exactly), many times over.
fn lengths() -> [usize; 6] {
    [
        0,
        FREE_LOOKAHEAD_BLOCKS / 2,
        FREE_LOOKAHEAD_BLOCKS,
        FREE_LOOKAHEAD_BLOCKS + 1,
        2 * FREE_LOOKAHEAD_BLOCKS,
        25 * FREE_LOOKAHEAD_BLOCKS + 3,
    ]
}

#[test]
fn a_bulk_free_of_blocks_ends_as_single_frees_in_the_same_order_do() {
    for preset_name in ["pagealloc", "mainline"] {
        for count in lengths() {
            let (one_by_one, seen_single) = build(preset_name);
            let (bulk, seen_bulk) = build(preset_name);
            let (single_blocks, bulk_blocks) =
                (allocate_shuffled(&one_by_one, count, 7), allocate_shuffled(&bulk, count, 7));
            for block in single_blocks {
                one_by_one.free_pages(block).unwrap();
            }
            assert_eq!(bulk.free_bulk(bulk_blocks), Ok(count), "{preset_name}, {count} blocks");
            assert_eq!(
                *seen_bulk.0.lock().unwrap(),
                *seen_single.0.lock().unwrap(),
                "the same frees in the same order"
            );
            assert_eq!(fingerprint(&bulk), fingerprint(&one_by_one), "{preset_name}, {count} blocks");
            assert_eq!(bulk.counters().pcp_pages(), one_by_one.counters().pcp_pages());
        }
    }
}

#[test]
fn a_bulk_free_by_frame_number_ends_as_single_frees_do() {
    for count in lengths() {
        let (one_by_one, seen_single) = build("pagealloc");
        let (bulk, seen_bulk) = build("pagealloc");
        let order = 2;
        let take = |allocator: &TestAllocator| -> Vec<u64> {
            (0..count)
                .map(|_| allocator.alloc_pages(order, AllocRequest::USER_MOVABLE).unwrap().into_raw().pfn)
                .collect()
        };
        let (single_pfns, bulk_pfns) = (take(&one_by_one), take(&bulk));
        assert_eq!(single_pfns, bulk_pfns);
        for &pfn in single_pfns.iter().rev() {
            free_unowned(&one_by_one, pfn, order).unwrap();
        }
        let reversed: Vec<u64> = bulk_pfns.iter().rev().copied().collect();
        // SAFETY: every frame heads a block this test allocated at `order` and gave up.
        assert_eq!(unsafe { bulk.free_pfns_bulk(&reversed, order) }, Ok(count));
        assert_eq!(*seen_bulk.0.lock().unwrap(), *seen_single.0.lock().unwrap());
        assert_eq!(fingerprint(&bulk), fingerprint(&one_by_one), "{count} blocks");
    }
}

#[test]
fn bad_frames_in_a_bulk_free_are_refused_and_the_rest_are_freed() {
    let (allocator, _) = build("pagealloc");
    let live: Vec<u64> =
        (0..20).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap().into_raw().pfn).collect();
    let pair = allocator.alloc_pages(1, AllocRequest::USER_MOVABLE).unwrap();
    let freed = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap().into_raw().pfn;
    free_unowned(&allocator, freed, 0).unwrap();
    let before = allocator.check_invariants().unwrap();
    let beyond = allocator.zones().iter().map(|zone| zone.start_pfn() + zone.spanned_pages()).max().unwrap() + 64;
    // Three bad frames among the good: already free, past every zone, an order-1 head at order 0.
    let mut batch = live.clone();
    batch.insert(0, freed);
    batch.insert(9, beyond);
    batch.insert(15, pair.pfn());
    // SAFETY: the good frames head blocks this test gave up at order 0; the three bad ones
    // are outside the contract on purpose, and their frames show it.
    let result = unsafe { allocator.free_pfns_bulk(&batch, 0) };
    let error = result.expect_err("three frames are bad");
    assert_eq!((error.freed_blocks, error.failed_blocks), (20, 3));
    // Each refusal is the single free's: the state is unchanged, so a single free of the
    // same frame now refuses it the same way.
    assert_eq!(Err(error.first_error), free_unowned(&allocator, freed, 0), "the first bad frame's error");
    assert_eq!(free_unowned(&allocator, beyond, 0), Err(FreeError::OutOfRange { pfn: beyond }));
    assert_eq!(
        free_unowned(&allocator, pair.pfn(), 0),
        Err(FreeError::WrongOrder { pfn: pair.pfn(), allocated_order: 1, freed_order: 0 })
    );
    let after = allocator.check_invariants().unwrap();
    assert_eq!(after.allocated_pages, before.allocated_pages - 20, "the 20 good pages were freed, the pair kept");
    allocator.free_pages(pair).expect("the order-1 block is still allocated and whole");
    assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 0);
}

/// A stale copy (rebuilt with `Block::from_raw`, its frame freed and handed out again) is
/// caught by the frame generations, which the `generations` feature keeps.
#[cfg(feature = "generations")]
#[test]
fn stale_blocks_in_a_bulk_free_are_refused() {
    let (allocator, _) = build("mainline");
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let raw = block.into_raw();
    // SAFETY: turned back once; `stale` below is the deliberate second copy.
    let (block, stale) = unsafe { (Block::from_raw(raw), Block::from_raw(raw)) };
    allocator.free_pages(block).unwrap();
    let again = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let good: Vec<Block> = (0..10).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let stale_pfn = stale.pfn();
    let error: BulkFreeError = allocator.free_bulk(good.into_iter().chain([stale])).expect_err("a stale block");
    assert_eq!((error.freed_blocks, error.failed_blocks), (10, 1));
    assert!(matches!(error.first_error, FreeError::StaleBlock { pfn, .. } if pfn == stale_pfn), "{error}");
    assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 1, "only the block handed out again stays");
    allocator.free_pages(again).unwrap();
}

#[test]
fn foreign_blocks_in_a_bulk_free_are_refused() {
    let (allocator, _) = build("mainline");
    let (other, _) = build("mainline");
    let good: Vec<Block> = (0..10).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let foreign: Vec<Block> = (0..2).map(|_| other.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let first_foreign = foreign[0].pfn();
    let mut batch = good;
    batch.insert(3, foreign.into_iter().next().unwrap());
    let error: BulkFreeError = allocator.free_bulk(batch).expect_err("a foreign block");
    assert_eq!(
        (error.freed_blocks, error.failed_blocks, error.first_error),
        (10, 1, FreeError::ForeignBlock { pfn: first_foreign }),
        "refused as a single free refuses it"
    );
    assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 0);
    assert_eq!(other.check_invariants().unwrap().allocated_pages, 2, "the other allocator's blocks untouched");
}

/// The CPU each block of a bulk free is freed on, when the iterator moves the thread to
/// `cpu_of(j)` as it yields block `j`: block `i` is freed when block `i + look-ahead` is
/// drawn, and the last look-ahead's worth after the last is drawn.
fn freeing_cpu(i: usize, count: usize, cpu_of: impl Fn(usize) -> usize) -> usize {
    cpu_of((i + FREE_LOOKAHEAD_BLOCKS).min(count - 1))
}

#[test]
fn a_bulk_free_that_changes_cpus_uses_each_cpus_pageset_as_single_frees_do() {
    // Runs of 5 blocks per CPU.
    let cpu_of = |j: usize| (j / 5) % 2;
    for preset_name in ["pagealloc", "mainline"] {
        let count = 20 * FREE_LOOKAHEAD_BLOCKS + 3;
        let (one_by_one, seen_single) = build(preset_name);
        let (bulk, seen_bulk) = build(preset_name);
        let (single_blocks, bulk_blocks) =
            (allocate_shuffled(&one_by_one, count, 11), allocate_shuffled(&bulk, count, 11));
        for (i, block) in single_blocks.into_iter().enumerate() {
            one_by_one.platform().set_cpu(freeing_cpu(i, count, cpu_of));
            one_by_one.free_pages(block).unwrap();
        }
        let moving = bulk_blocks.into_iter().enumerate().map(|(j, block)| {
            bulk.platform().set_cpu(cpu_of(j));
            block
        });
        assert_eq!(bulk.free_bulk(moving), Ok(count));
        assert_eq!(*seen_bulk.0.lock().unwrap(), *seen_single.0.lock().unwrap());
        assert_eq!(fingerprint(&bulk), fingerprint(&one_by_one), "{preset_name}");
        let per_cpu = |allocator: &TestAllocator| -> Vec<u32> {
            let zones = allocator.zones().iter();
            zones
                .flat_map(|zone| {
                    zone.pagesets().iter().map(|slot| {
                        slot.inspect(allocator.platform(), |pcp| pcp.count_pages() + pcp.buddy_bound_pages())
                    })
                })
                .collect()
        };
        assert_eq!(per_cpu(&bulk), per_cpu(&one_by_one), "{preset_name}: each CPU's pageset as single frees leave it");
    }
}
