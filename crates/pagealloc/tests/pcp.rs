//! Per-CPU pageset behaviour: refill, LIFO reuse, drains, trylock fallback, remote drains,
//! free_high per seed stage, decay, THP lists.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::pcp::{pcp_flags, DrainCause};
use pagealloc::platform::TestPlatform;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, LastLevelCache, PageAllocator, ZoneType, PAGEBLOCK_ORDER};

/// 1 GiB Normal zone on `cpus` CPUs under a preset: batch 63.
fn normal_zone(preset_name: &str, cpus: usize) -> TestAllocator {
    one_normal_zone(1 << 18, preset(preset_name), cpus)
}

fn pageset_count(allocator: &TestAllocator, cpu: usize) -> u32 {
    allocator.zones()[0].pagesets()[cpu].inspect(allocator.platform(), |p| p.count_pages())
}

#[test]
fn first_allocation_refills_a_batch_and_later_ones_hit_the_pageset() {
    let allocator = normal_zone("base", 1);
    let managed = allocator.counters().managed_pages();
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    assert_eq!(allocator.zones()[0].free_pages(), managed - 63, "one batch left the buddy");
    assert_eq!(pageset_count(&allocator, 0), 62);
    let locks_before = allocator.counters().zone_lock_stats().acquisitions;
    let more: Vec<Block> = (0..62).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    assert_eq!(allocator.counters().zone_lock_stats().acquisitions, locks_before, "62 hits, no zone lock");
    let counters = allocator.counters().pcp_counters();
    assert_eq!((counters.refills, counters.alloc_hits), (1, 62));
    for b in more.into_iter().chain([block]) {
        allocator.free_pages(b).unwrap();
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn a_freed_page_is_the_next_one_allocated_lifo() {
    let allocator = normal_zone("mainline", 1);
    let first = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let pfn = first.pfn();
    allocator.free_pages(first).unwrap();
    let again = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    assert_eq!(again.pfn(), pfn, "cache-hot reuse");
    allocator.free_pages(again).unwrap();
}

#[test]
fn frees_drain_to_the_buddy_when_count_reaches_high() {
    let allocator = normal_zone("base", 1);
    let high = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.high_pages());
    let blocks: Vec<Block> =
        (0..4 * high).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    for block in blocks {
        allocator.free_pages(block).unwrap();
        assert!(pageset_count(&allocator, 0) < high, "count stays below high after each free");
    }
    assert!(allocator.counters().pcp_counters().drained_pages[DrainCause::High as usize] > 0);
    allocator.check_invariants().unwrap();
}

#[test]
fn busy_pageset_lock_falls_back_to_the_buddy() {
    let allocator = normal_zone("mainline", 1);
    let warm = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let cached = pageset_count(&allocator, 0);
    // Another user holds this CPU's pageset (a migrated thread): the trylock fails.
    let (block, count_inside) = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |pageset| {
        (allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap(), pageset.count_pages())
    });
    assert_eq!(count_inside, cached, "served by the buddy, pageset untouched");
    allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |_| allocator.free_pages(block).unwrap());
    assert_eq!(pageset_count(&allocator, 0), cached, "freed straight to the buddy as well");
    allocator.free_pages(warm).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn remote_drain_and_cpu_offline_empty_other_cpus_pagesets() {
    let allocator = normal_zone("mainline", 3);
    for cpu in [1, 2] {
        allocator.platform().set_cpu(cpu);
        let b = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
        allocator.free_pages(b).unwrap();
        assert!(pageset_count(&allocator, cpu) > 0);
    }
    allocator.platform().set_cpu(0);
    let offline = allocator.hotplug().cpu_offline(2);
    assert!(offline > 0);
    assert_eq!(pageset_count(&allocator, 2), 0);
    let drained = allocator.pagesets().drain_all();
    assert!(drained > 0);
    assert_eq!(allocator.counters().pcp_pages(), 0);
    let counters = allocator.counters().pcp_counters();
    assert_eq!(counters.drained_pages[DrainCause::CpuOffline as usize], offline);
    assert_eq!(counters.drained_pages[DrainCause::Explicit as usize], drained);
    assert_eq!(allocator.check_invariants().unwrap().free_pages, allocator.counters().managed_pages());
}

/// A process exit: many order-0 frees (more than high, so the pageset drains), then one
/// order-1 page-table free.
fn exit_burst(allocator: &TestAllocator) -> u64 {
    let pages: Vec<Block> = (0..3000).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let table = allocator.alloc_pages(1, AllocRequest::KERNEL).unwrap();
    for page in pages {
        allocator.free_pages(page).unwrap();
    }
    let before = allocator.counters().pcp_counters().free_high_events;
    allocator.free_pages(table).unwrap();
    allocator.counters().pcp_counters().free_high_events - before
}

#[test]
fn exit_burst_drains_everything_in_v6_6_but_not_after_patch1() {
    let base = normal_zone("base", 1);
    assert_eq!(exit_burst(&base), 1, "v6.6: one order-1 free after frees is free_high");
    assert_eq!(pageset_count(&base, 0), 0, "and empties the pageset");
    let patched = normal_zone("patch1", 1);
    assert_eq!(exit_burst(&patched), 0, "patch 1 needs two consecutive high-order frees");
    assert!(pageset_count(&patched, 0) > 0);
}

#[test]
fn consecutive_high_order_frees_drain_only_a_capped_amount_from_patch4() {
    for (preset_name, capped) in [("patch3", false), ("patch4", true)] {
        let allocator = normal_zone(preset_name, 1);
        let blocks: Vec<Block> = (0..400).map(|_| allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap()).collect();
        for block in blocks {
            allocator.free_pages(block).unwrap();
        }
        let counters = allocator.counters().pcp_counters();
        assert!(counters.free_high_events > 0, "{preset_name}");
        let drained = counters.drained_pages[DrainCause::FreeHigh as usize];
        assert!(drained > 0, "{preset_name}");
        if capped {
            assert!(pageset_count(&allocator, 0) <= 63 << 5);
        }
        allocator.check_invariants().unwrap();
    }
}

#[test]
fn large_cache_slice_caches_a_batch_before_free_high() {
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18)
        .policy(preset("patch3"))
        .last_level_cache(LastLevelCache { size_bytes: 32 << 20, shared_by_cpus: 16 });
    let allocator = build_allocator(builder, 1);
    let flags = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.flags());
    assert_ne!(flags & pcp_flags::FREE_HIGH_BATCH, 0, "2 MiB slice > 3 * 63 pages");
    let small = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18)
        .policy(preset("patch3"))
        .last_level_cache(LastLevelCache { size_bytes: 8 << 20, shared_by_cpus: 16 });
    let allocator = build_allocator(small, 1);
    let flags = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.flags());
    assert_eq!(flags & pcp_flags::FREE_HIGH_BATCH, 0, "512 KiB slice < 756 KiB");
}

#[test]
fn autotuned_high_grows_with_refills_and_decays_when_idle() {
    let allocator = normal_zone("mainline", 1);
    let high_min = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.high_min_pages());
    let blocks: Vec<Block> = (0..3000).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    for block in blocks {
        allocator.free_pages(block).unwrap();
    }
    let (high, count) =
        allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| (p.high_pages(), p.count_pages()));
    assert!(high > high_min, "refills raised high ({high} > {high_min})");
    assert!(count > high_min, "and the pageset keeps more than high_min ({count})");
    for _ in 0..60 {
        allocator.background().vmstat_tick(0);
    }
    let (high, count) =
        allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| (p.high_pages(), p.count_pages()));
    assert_eq!(high, high_min, "decayed to high_min");
    assert!(count <= high_min);
    assert!(allocator.counters().pcp_counters().drained_pages[DrainCause::Decay as usize] > 0);
    allocator.check_invariants().unwrap();

    let fixed = normal_zone("base", 1);
    let high = fixed.zones()[0].pagesets()[0].inspect(fixed.platform(), |p| p.high_pages());
    let blocks: Vec<Block> = (0..3000).map(|_| fixed.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    for block in blocks {
        fixed.free_pages(block).unwrap();
    }
    assert_eq!(
        fixed.zones()[0].pagesets()[0].inspect(fixed.platform(), |p| p.high_pages()),
        high,
        "v6.6 high is fixed"
    );
}

#[test]
fn orders_cached_per_preset() {
    let revert = normal_zone("revert-highpcp", 1);
    let b = revert.alloc_pages(1, AllocRequest::KERNEL).unwrap();
    revert.free_pages(b).unwrap();
    assert_eq!(pageset_count(&revert, 0), 0, "order 1 bypasses the pageset");
    let mainline = normal_zone("mainline", 1);
    let thp = mainline.alloc_pages(9, AllocRequest::USER_MOVABLE).unwrap();
    assert_eq!(pageset_count(&mainline, 0), 512, "a THP refill takes at least 2 blocks");
    mainline.free_pages(thp).unwrap();
    assert_eq!(pageset_count(&mainline, 0), 1024, "a freed THP block is cached on its list");
    let costly = mainline.alloc_pages(4, AllocRequest::KERNEL).unwrap();
    let before = pageset_count(&mainline, 0);
    mainline.free_pages(costly).unwrap();
    assert_eq!(pageset_count(&mainline, 0), before, "order 4 is never cached");
    let off = normal_zone("global-lock", 1);
    assert!(off.zones()[0].pagesets().is_empty());
    mainline.check_invariants().unwrap();
}

#[test]
fn pagesets_cut_zone_lock_acquisitions() {
    let run = |preset_name: &str| {
        let allocator = normal_zone(preset_name, 1);
        let at_boot = allocator.counters().zone_lock_stats().acquisitions;
        for _ in 0..5000 {
            let b = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
            allocator.free_pages(b).unwrap();
        }
        allocator.counters().zone_lock_stats().acquisitions - at_boot
    };
    assert_eq!(run("global-lock"), 10_000, "every alloc and free locks the zone");
    assert_eq!(run("mainline"), 1, "one refill serves all pairs");
}

#[test]
fn double_free_into_a_pageset_is_rejected() {
    let allocator = normal_zone("mainline", 1);
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let pfn = block.pfn();
    allocator.free_pages(block).unwrap();
    let before = fingerprint(&allocator);
    assert_eq!(free_unowned(&allocator, pfn, 0), Err(pagealloc::FreeError::DoubleFree { pfn }));
    assert_eq!(fingerprint(&allocator), before);
}

#[test]
fn batch_and_high_overrides_apply() {
    let mut policy = preset("base");
    policy.pcp.batch_override = Some(310);
    policy.pcp.high_override = Some(1860);
    let allocator = one_normal_zone(1 << 18, policy, 1);
    let (batch, high) =
        allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| (p.batch_pages(), p.high_pages()));
    assert_eq!((batch, high), (310, 1860));
}

#[test]
fn allocation_drains_other_cpus_pagesets_before_failing() {
    let allocator = normal_zone("mainline", 2);
    // CPU 1 caches a few hundred pages.
    allocator.platform().set_cpu(1);
    let cached: Vec<Block> = (0..300).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    allocator.free_bulk(cached).unwrap();
    assert!(pageset_count(&allocator, 1) > 0);
    // CPU 0 exhausts the zone: before reporting out-of-memory it drains CPU 1's pageset.
    allocator.platform().set_cpu(0);
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
        held.push(block);
    }
    assert_eq!(pageset_count(&allocator, 1), 0, "the failing request drained CPU 1");
    assert!(allocator.counters().pcp_counters().drained_pages[DrainCause::Explicit as usize] > 0);
    allocator.free_bulk(held).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn out_of_range_policy_switches_are_rejected() {
    for (tweak, what) in [
        (
            Box::new(|p: &mut pagealloc::Policy| p.pcp.max_cached_order = 4) as Box<dyn Fn(&mut pagealloc::Policy)>,
            "order",
        ),
        (Box::new(|p: &mut pagealloc::Policy| p.pcp.thp_lists = 3), "thp"),
        (Box::new(|p: &mut pagealloc::Policy| p.pcp.batch_scale_max = Some(7)), "scale"),
        (Box::new(|p: &mut pagealloc::Policy| p.pcp.batch_override = Some(0)), "batch"),
    ] {
        let mut policy = preset("mainline");
        tweak(&mut policy);
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4096).policy(policy);
        let result = PageAllocator::build(builder, TestPlatform::new(1));
        assert!(matches!(result, Err(pagealloc::BuildError::InvalidPolicy(_))), "{what}");
    }
}

#[test]
fn pagealloc_holds_small_orders_to_high_min_but_lets_thp_blocks_use_linux_high() {
    // One CPU frees 40 pageblock-order blocks, each followed by 75 of 3000 order-0 pages.
    let allocator = normal_zone("pagealloc", 1);
    let slot = &allocator.zones()[0].pagesets()[0];
    let high_min = slot.inspect(allocator.platform(), |p| p.high_min_pages());
    let thp = |a: &TestAllocator| a.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::USER_MOVABLE).unwrap();
    let small: Vec<Block> = (0..3000).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let huge: Vec<Block> = (0..40).map(|_| thp(&allocator)).collect();
    let mut small = small.into_iter();
    let mut max_thp_pages = 0;
    for block in huge {
        allocator.free_pages(block).unwrap();
        for block in small.by_ref().take(75) {
            allocator.free_pages(block).unwrap();
            let (small_pages, thp_pages) =
                slot.inspect(allocator.platform(), |p| (p.small_order_pages(), p.thp_pages()));
            assert!(small_pages < high_min, "{small_pages} small-order pages, high_min {high_min}");
            assert_eq!(small_pages + thp_pages, pageset_count(&allocator, 0));
            max_thp_pages = max_thp_pages.max(thp_pages);
        }
    }
    // Auto-tuning raised high above high_min (the refills of the 3000 pages), and the
    // pageblock-order blocks may use that room.
    let high = slot.inspect(allocator.platform(), |p| p.high_pages());
    assert!(
        max_thp_pages > 2 * high_min,
        "the pageset held at most {max_thp_pages} pages in pageblock-order blocks (high {high}, high_min {high_min})"
    );
    allocator.check_invariants().unwrap();

    // mainline bounds them all by one high: the small-order pages share it.
    let mainline = normal_zone("mainline", 1);
    let blocks: Vec<Block> = (0..3000).map(|_| mainline.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    for block in blocks {
        mainline.free_pages(block).unwrap();
    }
    let small_pages = mainline.zones()[0].pagesets()[0].inspect(mainline.platform(), |p| p.small_order_pages());
    assert!(small_pages > high_min, "mainline keeps {small_pages} order-0 pages, above high_min {high_min}");
    mainline.check_invariants().unwrap();
}
