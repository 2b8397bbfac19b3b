//! `FragBeyondLinux::parked_frees` (the `pagealloc` preset): a free below pageblock order
//! parks its block in its pageblock; the park that leaves a pageblock holding nothing but
//! free and parked pages merges it whole; the rest come back when memory is wanted. The
//! typed errors of a free hold for parked blocks as for any other.

#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::{AllocRequest, Block, FreeError, PAGEBLOCK_ORDER};

const PAGES: u64 = 1 << 14;

fn allocator() -> TestAllocator {
    let policy = preset("pagealloc");
    assert!(policy.frag.beyond_linux.parked_frees, "the preset parks its frees");
    one_normal_zone(PAGES, policy, 1)
}

fn alloc_all(allocator: &TestAllocator) -> Vec<Block> {
    std::iter::from_fn(|| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).ok()).collect()
}

#[test]
fn a_freed_page_parks_and_counts_as_freed() {
    let allocator = allocator();
    let blocks: Vec<Block> = (0..8).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let freed_before = allocator.counters().pgfree_pages();
    for block in blocks {
        allocator.free_pages(block).unwrap();
    }
    assert_eq!(allocator.counters().parked_pages(), 8);
    assert_eq!(allocator.counters().pgfree_pages(), freed_before + 8);
    let census = allocator.check_invariants().unwrap();
    assert_eq!((census.parked_pages, census.allocated_pages), (8, 0));
}

#[test]
fn freeing_every_page_merges_every_pageblock_whole() {
    let allocator = allocator();
    let initial = buddyinfo(&allocator);
    let mut held = alloc_all(&allocator);
    let mut rng = Rng(3);
    while !held.is_empty() {
        let victim = rng.below(held.len() as u64) as usize;
        allocator.free_pages(held.swap_remove(victim)).unwrap();
    }
    let census = allocator.check_invariants().unwrap();
    let huge = |info: &[[u64; pagealloc::types::NR_ORDERS]]| -> u64 {
        info[0][PAGEBLOCK_ORDER as usize..].iter().enumerate().map(|(above, blocks)| blocks << above).sum()
    };
    // Pages the pagesets still hold keep their pageblocks from merging; every other
    // pageblock is whole.
    let held_pageblocks = census.pcp_pages - census.parked_pages;
    assert!(
        huge(&buddyinfo(&allocator)) + held_pageblocks >= huge(&initial),
        "{census:?}: {:?} against {:?}",
        buddyinfo(&allocator),
        initial
    );
    allocator.pagesets().drain_all();
    let census = allocator.check_invariants().unwrap();
    assert_eq!(
        (census.parked_pages, census.pcp_pages, census.free_pages),
        (0, 0, allocator.counters().managed_pages())
    );
    assert_eq!(buddyinfo(&allocator), initial, "everything merges back");
}

#[test]
fn parked_pages_come_back_when_memory_runs_out() {
    let allocator = allocator();
    let mut held = alloc_all(&allocator);
    let count = held.len();
    // Every other page: no pageblock is ever whole, so every freed page stays parked.
    let odd: Vec<Block> = (0..held.len()).rev().step_by(2).map(|at| held.swap_remove(at)).collect();
    let freed = odd.len() as u64;
    for block in odd {
        allocator.free_pages(block).unwrap();
    }
    assert_eq!(allocator.counters().parked_pages(), freed);
    let again = alloc_all(&allocator);
    assert_eq!(again.len() as u64, freed, "every parked page was handed out again");
    assert_eq!(held.len() + again.len(), count);
    allocator.check_invariants().unwrap();
}

#[test]
fn a_parked_block_refuses_a_second_free_and_a_wrong_order() {
    let allocator = allocator();
    let block = allocator.alloc_pages(2, AllocRequest::USER_MOVABLE).unwrap();
    let copy = unsafe { Block::from_raw(block.raw_parts()) };
    let (pfn, order) = (block.pfn(), block.order());
    allocator.free_pages(block).unwrap();
    assert_eq!(allocator.counters().parked_pages(), 4);
    assert!(matches!(allocator.free_pages(copy), Err(FreeError::DoubleFree { .. } | FreeError::StaleBlock { .. })));
    let by_pfn = unsafe { allocator.free_pfn(pfn, order) };
    assert!(matches!(by_pfn, Err(FreeError::DoubleFree { .. })), "{by_pfn:?}");
    let wrong = unsafe { allocator.free_pfn(pfn, order + 1) };
    assert!(wrong.is_err(), "{wrong:?}");
    let interior = unsafe { allocator.free_pfn(pfn + 1, 0) };
    assert!(matches!(interior, Err(FreeError::NotAllocated { .. })), "{interior:?}");
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.parked_pages, 4, "the refused frees changed nothing");
}

#[test]
fn a_pageblock_freed_whole_stays_parked_for_the_next_pageblock_order_take() {
    let allocator = allocator();
    let blocks: Vec<Block> =
        (0..4).map(|_| allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let mut freed: Vec<u64> = blocks.iter().map(|block| block.pfn()).collect();
    let free_before = allocator.counters().buddy_free_pages();
    for block in blocks {
        allocator.free_pages(block).unwrap();
    }
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.parked_pages, 4 << PAGEBLOCK_ORDER, "{census:?}");
    assert_eq!(allocator.counters().buddy_free_pages(), free_before, "no merge into the buddy");
    let again: Vec<Block> =
        (0..4).map(|_| allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let mut taken: Vec<u64> = again.iter().map(|block| block.pfn()).collect();
    freed.sort_unstable();
    taken.sort_unstable();
    assert_eq!(taken, freed, "the parked pageblocks were handed out again");
    assert_eq!(allocator.check_invariants().unwrap().parked_pages, 0);
    // A wrong order or a second free of a parked pageblock is refused.
    let block = again.into_iter().next().unwrap();
    let (pfn, order) = (block.pfn(), block.order());
    allocator.free_pages(block).unwrap();
    assert!(matches!(unsafe { allocator.free_pfn(pfn, order) }, Err(FreeError::DoubleFree { .. })));
    assert!(unsafe { allocator.free_pfn(pfn, 0) }.is_err());
    allocator.pagesets().drain_all();
    assert_eq!(allocator.check_invariants().unwrap().parked_pages, 0, "a drain collects it");
}
