//! Reclaim through the client callback: kswapd balances a node from the client's page cache
//! at its high watermark, direct reclaim serves a caller that may reclaim once the free
//! lists are empty, a client with nothing to give ends a pass after the priority rounds,
//! and no page is lost or handed out twice on the way.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use common::*;
use pagealloc::allocator::{ReclaimReason, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use pagealloc::platform::TestPlatform;
use pagealloc::request::WatermarkLevel;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, PageAllocator, ZoneType};

const PAGES: u64 = 1 << 14;

fn allocator_with(cache: &Arc<OldestFirstCache>) -> PageAllocator<TestPlatform> {
    let mut allocator = build_allocator(AllocatorBuilder::single_zone(ZoneType::Normal, PAGES), 1);
    allocator.set_reclaim(cache.clone());
    allocator
}

/// Reads pages into the cache until an allocation that may neither reclaim nor wake kswapd
/// fails: the zone is down to its min watermark.
fn fill(allocator: &PageAllocator<TestPlatform>, cache: &OldestFirstCache) {
    let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
    while let Ok(page) = allocator.alloc_pages(0, request) {
        cache.read(page);
    }
}

/// As `fill`, then below min for everyone: the reserves an atomic caller may reach, too.
fn fill_reserves(allocator: &PageAllocator<TestPlatform>, cache: &OldestFirstCache) {
    fill(allocator, cache);
    while let Ok(page) = allocator.alloc_pages(0, AllocRequest::ATOMIC) {
        cache.read(page);
    }
}

fn free_pages(allocator: &PageAllocator<TestPlatform>) -> u64 {
    allocator.zone_free_pages_snapshot(0)
}

#[test]
fn kswapd_reclaims_the_page_cache_up_to_the_high_watermark() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = allocator_with(&cache);
    fill(&allocator, &cache);
    allocator.pagesets().drain_all();
    let high = allocator.zones()[0].state().watermarks_with_boost().high_pages;
    assert!(free_pages(&allocator) < high, "filled below the high watermark");
    allocator.background().wake_kswapd(0);
    assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 1);
    assert!(allocator.zone_watermark_ok(0, 0, WatermarkLevel::High, ZoneType::Normal), "balanced");
    let requests = cache.requests.lock().unwrap().clone();
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| r.reason == ReclaimReason::Background && r.pages >= SWAP_CLUSTER_MAX));
    assert_eq!(requests[0].priority, DEF_PRIORITY);
    // The cache gave what each round asked for.
    let stats = allocator.counters().reclaim_stats(0);
    assert_eq!(stats.pgsteal_kswapd, requests.iter().map(|r| r.pages).sum::<u64>());
    assert_eq!(stats.pgsteal_direct, 0);
    // Conservation: every page is free, in a pageset or in the cache.
    let cached = cache.pages.lock().unwrap().len() as u64;
    assert_eq!(
        free_pages(&allocator) + allocator.counters().pcp_pages() + cached,
        allocator.counters().managed_pages()
    );
    allocator.check_invariants().unwrap();
    let vmstat = dump(&allocator);
    assert!(vmstat.contains(&format!("pgsteal_kswapd {}\n", stats.pgsteal_kswapd)), "{vmstat}");
}

#[test]
fn direct_reclaim_serves_a_caller_that_may_reclaim() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = allocator_with(&cache);
    fill_reserves(&allocator, &cache);
    let no_reclaim = AllocRequest { may_reclaim: false, ..AllocRequest::KERNEL };
    assert!(allocator.alloc_pages(0, no_reclaim).is_err());
    let page = allocator.alloc_pages(0, AllocRequest::KERNEL).expect("direct reclaim freed pages");
    // Each round frees a cluster into this CPU's pageset, which the watermark check does
    // not count: rounds repeat until a pageset drain brings the zone back over min.
    let stats = allocator.counters().reclaim_stats(0);
    let requests = cache.requests.lock().unwrap().clone();
    assert!((1..=16).contains(&stats.allocstall), "{stats:?}");
    assert_eq!(requests.len() as u64, stats.allocstall, "one cluster per round: {requests:?}");
    assert!(requests
        .iter()
        .all(|r| (r.reason, r.pages, r.priority) == (ReclaimReason::Direct, SWAP_CLUSTER_MAX, DEF_PRIORITY)));
    assert_eq!(stats.pgsteal_direct, SWAP_CLUSTER_MAX * stats.allocstall);
    allocator.free_pages(page).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn an_order_above_the_cluster_asks_for_its_size() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = allocator_with(&cache);
    fill_reserves(&allocator, &cache);
    // Pages come back in the order they were read in, so an order-6 block can form only if
    // the freed run is aligned; the request's size is what is asked either way.
    let _ = allocator.alloc_pages(6, AllocRequest::KERNEL);
    let requests = cache.requests.lock().unwrap().clone();
    assert_eq!(requests[0].pages, 64);
    assert!(allocator.counters().reclaim_stats(0).pgsteal_direct >= 64);
    allocator.check_invariants().unwrap();
}

/// A costly order reclaims for compaction: a stall goes on past the request's size while no
/// zone could serve it or compact for it (should_continue_reclaim()), so it asks the client
/// more than once.
#[test]
fn a_costly_order_reclaims_until_compaction_could_run() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = allocator_with(&cache);
    fill_reserves(&allocator, &cache);
    let _ = allocator.alloc_pages(9, AllocRequest::KERNEL);
    let requests = cache.requests.lock().unwrap().clone();
    let stalls = allocator.counters().reclaim_stats(0).allocstall;
    assert!(stalls >= 1);
    assert_eq!(requests[0].pages, 512, "the first round asks the request's size");
    assert!(requests.len() as u64 > stalls, "a stall went on past its first round: {requests:?}");
    allocator.check_invariants().unwrap();
}

#[test]
fn a_client_with_nothing_to_give_ends_the_pass_after_the_priority_rounds() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = allocator_with(&cache);
    fill(&allocator, &cache);
    let held: Vec<Block> = cache.pages.lock().unwrap().drain(..).collect();
    allocator.background().wake_kswapd(0);
    assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 1);
    let requests = cache.requests.lock().unwrap().clone();
    let priorities: Vec<u8> = requests.iter().map(|r| r.priority).collect();
    assert_eq!(priorities, (1..=DEF_PRIORITY).rev().collect::<Vec<u8>>(), "one round per priority, then it gives up");
    assert_eq!(allocator.counters().reclaim_stats(0).pgsteal_kswapd, 0);
    for page in held {
        allocator.free_pages(page).unwrap();
    }
    allocator.check_invariants().unwrap();
}

/// kswapd run by a task of its own: the periodic work leaves it alone, and the task's
/// rounds ask for at most a cluster each until the node is balanced, then the pass ends
/// and kswapd sleeps until woken again.
#[test]
fn kswapd_as_a_task_reclaims_a_cluster_per_round() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = allocator_with(&cache);
    fill(&allocator, &cache);
    allocator.pagesets().drain_all();
    allocator.background().set_kswapd_task(0, true);
    allocator.background().wake_kswapd(0);
    assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 0, "left to the task");
    let mut rounds = 0;
    while allocator.background().kswapd_round(0) {
        rounds += 1;
        assert!(rounds < 1000, "the pass ends");
    }
    let requests = cache.requests.lock().unwrap().clone();
    // The last round found the node balanced and asked nothing.
    assert_eq!(requests.len(), rounds - 1);
    assert!(requests.iter().all(|r| r.pages <= SWAP_CLUSTER_MAX && r.priority == DEF_PRIORITY), "{requests:?}");
    assert!(allocator.zone_watermark_ok(0, 0, WatermarkLevel::High, ZoneType::Normal), "balanced");
    assert_eq!(allocator.nodes()[0].kswapd_runs(), 1);
    assert_eq!(allocator.counters().reclaim_stats(0).pgsteal_kswapd, requests.iter().map(|r| r.pages).sum::<u64>());
    // Asleep until woken.
    assert!(!allocator.background().kswapd_round(0));
    // Filled again: a round leaves the pass open, and a whole pass finishes it.
    fill(&allocator, &cache);
    allocator.pagesets().drain_all();
    allocator.background().wake_kswapd(0);
    assert!(allocator.background().kswapd_round(0));
    assert!(!allocator.zone_watermark_ok(0, 0, WatermarkLevel::High, ZoneType::Normal), "one cluster is not enough");
    assert!(allocator.background().run_kswapd(0));
    assert!(allocator.zone_watermark_ok(0, 0, WatermarkLevel::High, ZoneType::Normal), "balanced");
    assert!(!allocator.background().kswapd_round(0));
    assert_eq!(allocator.nodes()[0].kswapd_runs(), 2);
    allocator.check_invariants().unwrap();
}

#[test]
fn without_a_client_reclaim_frees_nothing_and_counts_nothing() {
    let allocator = build_allocator(AllocatorBuilder::single_zone(ZoneType::Normal, PAGES), 1);
    let mut held = Vec::new();
    while let Ok(page) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
        held.push(page);
    }
    allocator.background().run_due_work(0, 0);
    assert_eq!(allocator.counters().reclaim_stats(0), Default::default());
    for page in held {
        allocator.free_pages(page).unwrap();
    }
}

fn dump(allocator: &PageAllocator<TestPlatform>) -> String {
    let mut out = String::new();
    pagealloc::views::write_vmstat(&mut out, allocator).unwrap();
    out
}

/// kswapd run in capped rounds, with a client that frees less than it is asked while
/// allocations take back every page it frees, so the node never balances: once the rounds
/// have asked a whole round's worth and fallen short, the priority steps down
/// (balance_pgdat()'s raise_priority), and the pass ends after DEF_PRIORITY such steps
/// instead of staying open, with its boosts and pressure thresholds, for as long as the
/// allocations go on.
#[test]
fn capped_kswapd_rounds_that_fall_short_lower_the_priority_and_end_the_pass() {
    let cache = Arc::new(OldestFirstCache::default());
    cache.most_per_request.store(4, Relaxed);
    let allocator = allocator_with(&cache);
    allocator.background().set_kswapd_task(0, true);
    fill(&allocator, &cache);
    allocator.pagesets().drain_all();
    allocator.background().wake_kswapd(0);
    let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
    let mut rounds = 0u64;
    while allocator.background().kswapd_round(0) {
        rounds += 1;
        assert!(rounds < 10_000, "the pass is still open after {rounds} rounds");
        // The allocating tasks take back what the round freed.
        while let Ok(page) = allocator.alloc_pages(0, request) {
            cache.read(page);
        }
    }
    let requests = cache.requests.lock().unwrap();
    assert!(requests.iter().all(|request| request.pages <= SWAP_CLUSTER_MAX));
    let priorities: Vec<u8> = requests.iter().map(|request| request.priority).collect();
    assert_eq!(priorities.first(), Some(&DEF_PRIORITY));
    // Each priority is used for a whole round's worth of asks, several capped rounds.
    let at_first = priorities.iter().filter(|&&priority| priority == DEF_PRIORITY).count();
    assert!(at_first > 1, "{at_first} rounds at the first priority");
    assert_eq!(priorities.last(), Some(&1), "every priority down to 1 was used");
    assert!(priorities.windows(2).all(|pair| pair[1] <= pair[0]), "the priority only steps down");
    drop(requests);
    assert_eq!(allocator.nodes()[0].kswapd_runs(), 1);
    allocator.check_invariants().unwrap();
}
