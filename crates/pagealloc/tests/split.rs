//! Splitting an allocated block (split_page()): the pages free one by one, in any order;
//! the old handle, a stale copy, a freed block and a foreign one are refused and change
//! nothing.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::{AllocRequest, Block, FreeError, ZoneType};

#[test]
fn a_split_block_frees_page_by_page_and_its_old_handle_is_refused() {
    let allocator = single_zone(ZoneType::Normal, 1 << 12);
    let free_before = allocator.zones()[0].free_pages();
    let block = allocator.alloc_pages(3, AllocRequest::USER_MOVABLE).unwrap();
    let raw = block.raw_parts();
    let pages: Vec<Block> = allocator.split(block).unwrap().collect();
    assert_eq!(pages.len(), 8);
    assert!(pages.iter().enumerate().all(|(i, page)| page.pfn() == raw.pfn + i as u64 && page.order() == 0));
    allocator.check_invariants().unwrap();
    // The order-3 handle is stale now: a free of it is the wrong order, and frees nothing.
    // SAFETY: rebuilt only to show the refusal; the pages are freed through `pages`.
    let old = unsafe { Block::from_raw(raw) };
    assert!(matches!(allocator.free_pages(old), Err(FreeError::WrongOrder { freed_order: 3, .. })));
    // Free in a scrambled order: everything merges back.
    let mut pages = pages;
    pages.swap(0, 5);
    pages.swap(2, 7);
    for page in pages {
        allocator.free_pages(page).unwrap();
    }
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.zones()[0].free_pages(), free_before);
}

#[test]
fn splitting_what_one_does_not_own_is_refused_and_changes_nothing() {
    let allocator = single_zone(ZoneType::Normal, 1 << 12);
    let other = single_zone(ZoneType::Normal, 1 << 12);
    let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    let raw = block.raw_parts();
    allocator.free_pages(block).unwrap();
    let before = fingerprint(&allocator);
    // SAFETY: a stale copy, to show it is refused.
    let stale = unsafe { Block::from_raw(raw) };
    assert!(matches!(allocator.split(stale), Err(FreeError::DoubleFree { .. } | FreeError::StaleBlock { .. })));
    let foreign = other.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    let foreign_raw = foreign.raw_parts();
    assert!(matches!(allocator.split(foreign), Err(FreeError::ForeignBlock { .. })));
    assert_eq!(fingerprint(&allocator), before);
    allocator.check_invariants().unwrap();
    // SAFETY: the foreign block was refused, so it is still `other`'s to free.
    other.free_pages(unsafe { Block::from_raw(foreign_raw) }).unwrap();
    // An order-0 block splits into itself.
    let page = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    let mut split = allocator.split(page).unwrap();
    allocator.free_pages(split.next().unwrap()).unwrap();
    assert!(split.next().is_none());
}
