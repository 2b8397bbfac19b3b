//! Frees handed to another arena's owner (`DrainBeyondLinux::hand_remote_frees`, the `pagealloc`
//! preset): a CPU freeing into another CPU's arena pushes each buddy-bound batch onto that
//! zone's stack without its zone lock, and the zone's next lock holder releases the batch.

#![cfg(feature = "alloc")]

mod common;

use std::sync::Arc;

use common::*;
use pagealloc::builder::MIN_ARENA_PAGES;
use pagealloc::{AllocRequest, Block};

fn build(hand_remote_frees: bool) -> TestAllocator {
    build_with(hand_remote_frees, None)
}

fn build_with(hand_remote_frees: bool, reclaim: Option<Arc<OldestFirstCache>>) -> TestAllocator {
    let mut policy = preset("pagealloc");
    assert!(policy.pcp.drain.beyond_linux.hand_remote_frees, "the preset hands remote frees over");
    policy.pcp.drain.beyond_linux.hand_remote_frees = hand_remote_frees;
    // Frees into another arena park there unless parking is off: these tests hand them over.
    policy.frag.beyond_linux.parked_frees = false;
    let mut allocator = one_normal_zone(4 * MIN_ARENA_PAGES, policy, 2);
    if let Some(client) = reclaim {
        allocator.set_reclaim(client);
    }
    assert_eq!(allocator.zones().len(), 2, "two arenas");
    allocator
}

/// CPU 0 allocates `pages` pages from its arena (zone 0).
fn allocate_on_cpu0(allocator: &TestAllocator, pages: usize) -> Vec<Block> {
    allocator.platform().set_cpu(0);
    let held: Vec<Block> = (0..pages).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    assert!(held.iter().all(|block| block.zone_index() == 0));
    held
}

/// Pages zone 0 may have pending before a pusher releases them: its low watermark, at least
/// a batch.
fn pending_bound(allocator: &TestAllocator) -> u64 {
    let zone = &allocator.zones()[0];
    let batch = zone.pagesets()[1].inspect(allocator.platform(), |pcp| pcp.batch_pages());
    zone.state().watermarks().low_pages.max(u64::from(batch))
}

/// Pushes (flushes of 8) a pusher makes without reaching the bound.
fn pending_pushes(allocator: &TestAllocator) -> usize {
    (pending_bound(allocator) as usize - 1) / 8
}

#[test]
fn remote_frees_wait_on_the_stack_without_the_owners_lock_until_it_is_taken() {
    let allocator = build(true);
    let pages = 8 * pending_pushes(&allocator);
    assert!(pages >= 8);
    let held = allocate_on_cpu0(&allocator, pages);
    let zone = &allocator.zones()[0];
    let locks_before = zone.lock_stats().acquisitions;
    allocator.platform().set_cpu(1);
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    // A push per flush of 8; neither CPU took zone 0's lock.
    assert_eq!(zone.handed_over_pages() as usize, pages);
    assert_eq!(zone.lock_stats().acquisitions, locks_before, "no zone-0 lock taken by the frees");
    // The owner's next hold (a refill) releases them into the buddy.
    allocator.platform().set_cpu(0);
    let block = allocator.alloc_pages(3, AllocRequest::USER_MOVABLE).unwrap();
    assert_eq!(zone.handed_over_pages(), 0);
    assert!(zone.lock_stats().acquisitions > locks_before);
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.allocated_pages, 8);
    assert_eq!(census.free_pages + census.pcp_pages + 8, allocator.counters().managed_pages());
    allocator.free_pages(block).unwrap();
}

#[test]
fn without_the_switch_each_flush_takes_the_owners_lock() {
    let allocator = build(false);
    let held = allocate_on_cpu0(&allocator, 40);
    let zone = &allocator.zones()[0];
    let locks_before = zone.lock_stats().acquisitions;
    allocator.platform().set_cpu(1);
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    assert_eq!(zone.handed_over_pages(), 0);
    assert_eq!(zone.lock_stats().acquisitions, locks_before + 5, "a hold per flush of 8 (40 frees)");
    allocator.check_invariants().unwrap();
}

#[test]
fn an_idle_owner_strands_less_than_its_low_watermark() {
    let allocator = build(true);
    let bound = pending_bound(&allocator);
    let held = allocate_on_cpu0(&allocator, 4 * bound as usize);
    let zone = &allocator.zones()[0];
    allocator.platform().set_cpu(1);
    let mut most_pending = 0;
    for block in held {
        allocator.free_pages(block).unwrap();
        most_pending = most_pending.max(u64::from(zone.handed_over_pages()));
    }
    assert!(most_pending < bound, "a pusher finding the bound pending releases it: {most_pending} >= {bound}");
    assert!(most_pending >= bound - 8, "pages wait up to the bound: {most_pending} of {bound}");
    assert!(zone.lock_stats().acquisitions > 0);
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.allocated_pages, 0);
}

#[test]
fn the_vmstat_pass_and_drain_all_release_what_is_pending() {
    for release in ["vmstat", "drain_all"] {
        let allocator = build(true);
        let held = allocate_on_cpu0(&allocator, 8);
        allocator.platform().set_cpu(1);
        for block in held {
            allocator.free_pages(block).unwrap();
        }
        let zone = &allocator.zones()[0];
        assert_eq!(zone.handed_over_pages(), 8);
        match release {
            "vmstat" => {
                allocator.background().vmstat_tick(1);
            }
            _ => {
                allocator.pagesets().drain_all();
            }
        }
        assert_eq!(zone.handed_over_pages(), 0, "{release}");
        allocator.check_invariants().unwrap();
    }
}

/// Both CPUs allocate and free at random, half the frees into the other arena, against the
/// invariant checker and conservation (which count the stacks in place).
#[test]
fn random_cross_arena_traffic_loses_and_doubles_nothing() {
    let allocator = build(true);
    let managed = allocator.counters().managed_pages();
    let mut rng = Rng(0x4a11);
    let mut held: Vec<Block> = Vec::new();
    let mut handed = 0u32;
    for round in 0..10 {
        for _ in 0..3_000 {
            allocator.platform().set_cpu(rng.below(2) as usize);
            if held.is_empty() || rng.below(2) == 0 {
                let order = [0, 0, 0, 2, 9][rng.below(5) as usize];
                if let Ok(block) = allocator.alloc_pages(order, AllocRequest::USER_MOVABLE) {
                    held.push(block);
                }
            } else {
                let victim = rng.below(held.len() as u64) as usize;
                allocator.free_pages(held.swap_remove(victim)).unwrap();
            }
            handed = handed.max(allocator.zones().iter().map(|zone| zone.handed_over_pages()).sum());
        }
        let census = allocator.check_invariants().unwrap_or_else(|v| panic!("round {round}: {v}"));
        let held_pages: u64 = held.iter().map(|block| block.pages()).sum();
        assert_eq!(census.allocated_pages, held_pages, "round {round}");
        assert_eq!(census.free_pages + census.pcp_pages + held_pages, managed, "round {round}");
    }
    assert!(handed > 0, "the traffic handed frees over");
    allocator.free_bulk(held).unwrap();
    allocator.pagesets().drain_all();
    assert_eq!(allocator.check_invariants().unwrap().free_pages, managed);
}

/// CPU 1 frees `blocks` (CPU 0's arena) in flushes of 8, short of the pending bound: all of
/// them wait on zone 0's stack.
fn hand_over_from_cpu1(allocator: &TestAllocator, blocks: Vec<Block>) {
    assert!(blocks.len().is_multiple_of(8) && (blocks.len() as u64) < pending_bound(allocator));
    let pages = blocks.len() as u32;
    allocator.platform().set_cpu(1);
    for block in blocks {
        allocator.free_pages(block).unwrap();
    }
    assert_eq!(allocator.zones()[0].handed_over_pages(), pages, "every free waits on the stack");
}

#[test]
fn pending_frees_count_with_the_pagesets_at_rest() {
    let allocator = build(true);
    let pages = 8 * pending_pushes(&allocator);
    let mut held = allocate_on_cpu0(&allocator, pages + 8);
    hand_over_from_cpu1(&allocator, held.split_off(8));
    let counters = allocator.counters();
    assert_eq!(counters.handed_over_pages(), pages as u64);
    assert_eq!(
        counters.buddy_free_pages() + counters.pcp_pages(),
        counters.managed_pages() - 8,
        "buddy plus pageset pages (handed-over ones included) are all that is not allocated"
    );
    let stats = allocator.stats();
    assert_eq!(stats.free_pages, stats.managed_pages - 8);
    allocator.free_bulk(held).unwrap();
}

/// Every request that may not reclaim fails in both arenas; a no-reclaim request that only
/// the frees pending on zone 0's stack can serve succeeds.
#[test]
fn a_no_reclaim_request_releases_pending_frees_before_it_fails() {
    let allocator = build(true);
    let request = AllocRequest::NOWAIT.with_migratetype(pagealloc::MigrateType::Movable);
    let mut held = Vec::new();
    for cpu in [0, 1] {
        allocator.platform().set_cpu(cpu);
        while let Ok(block) = allocator.alloc_pages(0, request) {
            held.push(block);
        }
    }
    allocator.platform().set_cpu(1);
    assert!(allocator.alloc_pages(0, request).is_err(), "both arenas are at their watermark");
    let pages = 8 * pending_pushes(&allocator);
    let in_zone_0: Vec<usize> = (0..held.len()).filter(|&i| held[i].zone_index() == 0).rev().take(pages).collect();
    let handed: Vec<Block> = in_zone_0.into_iter().map(|i| held.swap_remove(i)).collect();
    hand_over_from_cpu1(&allocator, handed);
    let block = allocator.alloc_pages(0, request).expect("the pending frees serve the request");
    assert_eq!(block.zone_index(), 0);
    assert_eq!(allocator.zones()[0].handed_over_pages(), 0, "released into the buddy");
    held.push(block);
    allocator.check_invariants().unwrap();
    allocator.free_bulk(held).unwrap();
}

#[test]
fn the_checker_counts_pending_frees_and_leaves_them_pending() {
    let allocator = build(true);
    let held = allocate_on_cpu0(&allocator, 16);
    hand_over_from_cpu1(&allocator, held);
    let census = allocator.check_invariants().unwrap();
    assert_eq!(allocator.zones()[0].handed_over_pages(), 16, "the checker changes nothing");
    assert_eq!(census.handed_over_pages, 16);
    assert!(census.pcp_pages >= 16, "handed-over pages count with the pagesets'");
    assert_eq!(census.free_pages + census.pcp_pages, allocator.counters().managed_pages());
}

/// Zone 0 is short of its high watermark only by the frees pending on its stack: kswapd
/// releases them and finds the node balanced, asking the reclaim client for nothing.
#[test]
fn kswapd_releases_pending_frees_before_it_judges_the_balance() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = build_with(true, Some(cache.clone()));
    let zone = &allocator.zones()[0];
    let high_pages = zone.state().watermarks().high_pages;
    allocator.platform().set_cpu(0);
    let mut held = Vec::new();
    while zone.free_pages() >= high_pages {
        let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
        assert_eq!(block.zone_index(), 0);
        held.push(block);
    }
    let pages = 8 * pending_pushes(&allocator);
    assert!(zone.free_pages() + pages as u64 > high_pages, "the pending frees make up the shortfall");
    let handed = held.split_off(held.len() - pages);
    hand_over_from_cpu1(&allocator, handed);
    allocator.background().wake_kswapd(zone.state().node());
    assert!(allocator.background().run_kswapd(zone.state().node()));
    assert_eq!(cache.requests.lock().unwrap().len(), 0, "kswapd asked for pages the stack held");
    assert_eq!(zone.handed_over_pages(), 0);
    allocator.free_bulk(held).unwrap();
}
