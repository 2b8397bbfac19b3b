//! `DrainBeyondLinux::coalesce_runs`: drains and buddy-bound flushes give runs of contiguous
//! blocks to the buddy as aligned blocks. Merging does not depend on the order of frees, so
//! every free pattern must leave the same state with coalescing as without it.

#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::policy::FreeHighRule;
use pagealloc::{AllocRequest, Block, MigrateType, Policy, PAGEBLOCK_ORDER};

const CPUS: usize = 2;

fn allocator(coalesce_runs: bool) -> TestAllocator {
    let mut policy: Policy = preset("pagealloc");
    policy.pcp.drain.beyond_linux.coalesce_runs = coalesce_runs;
    // Frees that park reach the buddy without a drain: these runs are the pagesets'.
    policy.frag.beyond_linux.parked_frees = false;
    // 64 MiB: small enough for a quick test, larger than a pageset so drains happen.
    one_normal_zone(1 << 14, policy, CPUS)
}

fn drained_pages(allocator: &TestAllocator) -> u64 {
    let pagesets = allocator.zones()[0].pagesets();
    pagesets.iter().map(|s| s.inspect(allocator.platform(), |p| p.counters().drained_pages.iter().sum::<u64>())).sum()
}

/// Allocates with `alloc` until memory runs out, then frees in the order `arrange` leaves
/// the blocks, each on the CPU `cpu_of` names; returns the state after the frees.
fn run(
    coalesce_runs: bool,
    alloc: impl Fn(&TestAllocator, usize) -> Option<Block>,
    arrange: impl Fn(&mut Vec<Block>),
    cpu_of: impl Fn(usize) -> usize,
) -> StateFingerprint {
    let allocator = allocator(coalesce_runs);
    let mut held: Vec<Block> = Vec::new();
    while let Some(block) = alloc(&allocator, held.len()) {
        held.push(block);
    }
    held.sort_by_key(|block| block.pfn());
    arrange(&mut held);
    let before = drained_pages(&allocator);
    for (at, block) in held.into_iter().enumerate() {
        allocator.platform().set_cpu(cpu_of(at));
        allocator.free_pages(block).unwrap();
    }
    assert!(drained_pages(&allocator) > before, "the frees reached the buddy through the pagesets");
    fingerprint(&allocator)
}

fn same_state_either_way(
    alloc: impl Fn(&TestAllocator, usize) -> Option<Block> + Copy,
    arrange: impl Fn(&mut Vec<Block>) + Copy,
    cpu_of: impl Fn(usize) -> usize + Copy,
) {
    assert_eq!(run(true, alloc, arrange, cpu_of), run(false, alloc, arrange, cpu_of));
}

fn movable_pages(allocator: &TestAllocator, _: usize) -> Option<Block> {
    allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).ok()
}

#[test]
fn ascending_frees_leave_the_same_buddy() {
    same_state_either_way(movable_pages, |_| {}, |_| 0);
}

#[test]
fn descending_frees_leave_the_same_buddy() {
    same_state_either_way(movable_pages, |held| held.reverse(), |_| 0);
}

#[test]
fn frees_split_between_cpus_and_random_frees_leave_the_same_buddy() {
    // Runs broken every few pages by the other CPU.
    same_state_either_way(movable_pages, |_| {}, |at| (at / 5) % CPUS);
    let shuffle = |held: &mut Vec<Block>| {
        let mut rng = Rng(11);
        for i in (1..held.len()).rev() {
            held.swap(i, rng.below(i as u64 + 1) as usize);
        }
    };
    same_state_either_way(movable_pages, shuffle, |at| at % CPUS);
}

#[test]
fn runs_of_mixed_orders_leave_the_same_buddy() {
    // Orders 0-3 in turn, so a run mixes block sizes and needs several aligned blocks.
    let mixed = |allocator: &TestAllocator, at: usize| {
        let order = (at % 4) as u8;
        allocator
            .alloc_pages(order, AllocRequest::USER_MOVABLE)
            .or_else(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE))
            .ok()
    };
    same_state_either_way(mixed, |_| {}, |_| 0);
    same_state_either_way(mixed, |held| held.reverse(), |_| 1);
}

#[test]
fn runs_of_pageblocks_leave_the_same_buddy() {
    // Neighbouring pageblocks of one type go to the buddy as one block of the order above.
    let huge =
        |allocator: &TestAllocator, _: usize| allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::USER_MOVABLE).ok();
    same_state_either_way(huge, |_| {}, |_| 0);
    same_state_either_way(huge, |held| held.reverse(), |at| at % CPUS);
}

#[test]
fn runs_across_pageblocks_of_different_types_keep_each_pageblock_on_its_own_lists() {
    // Unmovable and movable requests in turn claim pageblocks of both types side by side;
    // ascending frees then make runs that cross from one type's pageblock into the other's.
    let alternating = |allocator: &TestAllocator, at: usize| {
        let request = if (at / 700).is_multiple_of(2) { AllocRequest::KERNEL } else { AllocRequest::USER_MOVABLE };
        allocator.alloc_pages(0, request).ok()
    };
    same_state_either_way(alternating, |_| {}, |_| 0);
    let allocator = allocator(true);
    let mut held: Vec<Block> = Vec::new();
    while let Some(block) = alternating(&allocator, held.len()) {
        held.push(block);
    }
    held.sort_by_key(|block| block.pfn());
    let kinds = allocator.zones()[0].pageblock_counts();
    assert!(kinds[MigrateType::Unmovable.index()] > 0 && kinds[MigrateType::Movable.index()] > 0);
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    // The checker holds every free block to its pageblock's type.
    allocator.check_invariants().unwrap();
}

/// A run may cover whole pageblocks of different types (a pageset drained at once, with a
/// high of thousands of pages): it is released in blocks of at most a pageblock, so that
/// each pageblock's pages are listed under its own type.
#[test]
fn a_run_over_two_pageblocks_of_different_types_is_released_a_pageblock_at_a_time() {
    let run = |coalesce_runs: bool| {
        let mut policy = preset("mainline");
        policy.pcp.drain.beyond_linux.coalesce_runs = coalesce_runs;
        // Frees that park reach the buddy without a drain: these runs are the pagesets'.
        policy.frag.beyond_linux.parked_frees = false;
        // The frees stay in the pageset (no free_high drains), and an explicit drain empties
        // it in one hold.
        (policy.pcp.free_high, policy.pcp.free_high_capped) = (FreeHighRule::Off, false);
        policy.pcp.batch_scale_max = None;
        let allocator = one_normal_zone(1 << 16, policy, CPUS);
        allocator.platform().set_cpu(0);
        let pageblock = |block: &Block| block.pfn() >> PAGEBLOCK_ORDER;
        // Every pageblock allocated whole and movable; then the even ones freed, so that an
        // unmovable request claims a single pageblock.
        let huge = || allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::USER_MOVABLE).ok();
        let mut held: Vec<Block> = std::iter::from_fn(huge).collect();
        // Pageblocks left cached in the pageset, allocated too.
        while allocator.pagesets().drain_all() > 0 {
            held.extend(std::iter::from_fn(huge));
        }
        let (even, mut odd): (Vec<Block>, Vec<Block>) = held.into_iter().partition(|block| pageblock(block) % 2 == 0);
        even.into_iter().for_each(|block| allocator.free_pages(block).unwrap());
        allocator.pagesets().drain_all();
        // Free memory left over from the fill (below the watermarks) taken too, so that the
        // largest free blocks are the single even pageblocks.
        let leftover: Vec<Block> =
            std::iter::from_fn(|| allocator.alloc_pages(PAGEBLOCK_ORDER + 1, AllocRequest::ATOMIC).ok()).collect();
        let pages_of = |request| -> Vec<Block> {
            let mut pages: Vec<Block> =
                (0..1 << PAGEBLOCK_ORDER).map(|_| allocator.alloc_pages(0, request).unwrap()).collect();
            pages.sort_by_key(|block| block.pfn());
            assert_eq!(pageblock(&pages[0]), pageblock(pages.last().unwrap()), "one pageblock, page by page");
            pages
        };
        let unmovable = pages_of(AllocRequest::KERNEL);
        // Its odd neighbour, re-allocated as movable pages.
        let at = odd.iter().position(|block| pageblock(block) == pageblock(&unmovable[0]) + 1).unwrap();
        allocator.free_pages(odd.swap_remove(at)).unwrap();
        allocator.pagesets().drain_all();
        let movable = pages_of(AllocRequest::USER_MOVABLE);
        let zone = &allocator.zones()[0];
        assert_eq!(pageblock(&unmovable[0]) + 1, pageblock(&movable[0]));
        assert_ne!(zone.pageblock_type(movable[0].pfn()), zone.pageblock_type(unmovable[0].pfn()));
        // Ascending frees; the drain releases the unmovable (lower) pageblock's pages, then
        // the movable one's: one run of two pageblocks.
        leftover.into_iter().for_each(|block| allocator.free_pages(block).unwrap());
        allocator.pagesets().drain_all();
        let high = allocator.pagesets().set_pageset_high(0, 0, u64::MAX).unwrap();
        assert!(high > 2 << PAGEBLOCK_ORDER, "high {high} holds two pageblocks");
        for block in unmovable.into_iter().chain(movable) {
            allocator.free_pages(block).unwrap();
        }
        assert_eq!(allocator.counters().pcp_pages(), 2 << PAGEBLOCK_ORDER, "all in the pageset until the drain");
        allocator.pagesets().drain_all();
        fingerprint(&allocator)
    };
    assert_eq!(run(true), run(false));
}
