//! Runs that are not a power of two (alloc_pages_exact(), free_pages_exact()): exactly the
//! pages asked for, the rest of the block back at once, any sub-run freed in any number of
//! calls, and a run that is not wholly allocated refused with nothing freed.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::{AllocError, AllocRequest, Block, FreeError, ZoneType};

#[test]
fn an_exact_run_holds_the_pages_asked_for_and_returns_the_rest() {
    let allocator = single_zone(ZoneType::Normal, 1 << 12);
    let free_before = allocator.zones()[0].free_pages() + allocator.counters().pcp_pages();
    let run: Vec<Block> = allocator.alloc_pages_exact(5, AllocRequest::USER_MOVABLE).unwrap().collect();
    assert_eq!(run.len(), 5);
    let first = run[0].pfn();
    assert_eq!(first % 8, 0, "the run starts at its block's alignment");
    assert!(run.iter().enumerate().all(|(i, page)| page.pfn() == first + i as u64 && page.order() == 0));
    assert_eq!(allocator.zones()[0].free_pages() + allocator.counters().pcp_pages(), free_before - 5);
    allocator.check_invariants().unwrap();
    allocator.free_bulk(run).unwrap();
    allocator.pagesets().drain_all();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.zones()[0].free_pages(), free_before);
}

#[test]
fn impossible_runs_are_refused() {
    let allocator = single_zone(ZoneType::Normal, 1 << 12);
    assert!(matches!(allocator.alloc_pages_exact(0, AllocRequest::KERNEL), Err(AllocError::EmptyRun)));
    for pages in [(1 << 10) + 1, u64::MAX] {
        let result = allocator.alloc_pages_exact(pages, AllocRequest::KERNEL);
        assert!(matches!(result, Err(AllocError::RunTooLarge { .. })), "{pages} pages");
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn any_sub_run_frees_in_any_order_and_a_bad_run_frees_nothing() {
    let allocator = single_zone(ZoneType::Normal, 1 << 12);
    allocator.pagesets().drain_all();
    let free_before = allocator.zones()[0].free_pages();
    let run: Vec<Block> = allocator.alloc_pages_exact(11, AllocRequest::KERNEL).unwrap().collect();
    let first = run[0].pfn();
    let run_raw: Vec<_> = run.into_iter().map(Block::into_raw).collect();
    assert_eq!(run_raw.len(), 11);
    // SAFETY: this test owns the run's pages; each is freed exactly once below.
    unsafe {
        allocator.free_pages_exact(first + 3, 4).unwrap();
        // Pages 3..7 are free now: a run over them is a double free, and frees nothing.
        let error = allocator.free_pages_exact(first + 2, 3).unwrap_err();
        assert_eq!(error, FreeError::DoubleFree { pfn: first + 3 });
        allocator.check_invariants().unwrap();
        // Page 2 is still allocated: it frees alone.
        allocator.free_pages_exact(first + 2, 1).unwrap();
        // Past the run (pages 11..16 went back when it was made): refused whole.
        assert!(allocator.free_pages_exact(first + 9, 4).is_err());
        allocator.free_pages_exact(first + 7, 4).unwrap();
        allocator.free_pages_exact(first, 2).unwrap();
        // An empty run frees nothing and is no error.
        allocator.free_pages_exact(first, 0).unwrap();
    }
    allocator.pagesets().drain_all();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.zones()[0].free_pages(), free_before);
}
