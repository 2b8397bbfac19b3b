//! The fragmentation-avoidance switches against the rules in the facts file (section 5):
//! the 2018 fallback design (steal onto the requester's lists, re-type at half a pageblock,
//! boost per rule), mainline's claim-or-steal, and defrag_mode's fallback only after
//! reclaim has failed.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use std::sync::Arc;

use common::*;
use pagealloc::platform::TestPlatform;
use pagealloc::policy::{BoostRule, FallbackDesign, FragPolicy};
use pagealloc::types::PAGEBLOCK_PAGES;
use pagealloc::{
    AllocRequest, AllocatorBuilder, Block, FallbackKind, MigrateType, PageAllocator, ZoneType, PAGEBLOCK_ORDER,
};

const PAGES: u64 = 8 << 10;

/// One zone, pagesets off, the given fragmentation policy.
fn allocator(frag: FragPolicy) -> (PageAllocator<TestPlatform>, Arc<ExtfragRecorder>) {
    let recorder = Arc::new(ExtfragRecorder::default());
    let mut policy = preset("global-lock");
    policy.frag = frag;
    // No min watermark: a fill takes every page, so the only free memory is what the test
    // frees.
    let tunables = pagealloc::sizing::Tunables { min_free_kbytes: Some(0), ..Default::default() };
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, PAGES)
        .event_sink(Box::new(recorder.clone()))
        .policy(policy)
        .tunables(tunables);
    (build_allocator(builder, 1), recorder)
}

/// Fills memory with movable pages, then frees 100 scattered pages of one wholly allocated
/// pageblock: the only free memory left is there. Returns the pageblock's start.
fn sparse_movable_pageblock(allocator: &PageAllocator<TestPlatform>, recorder: &ExtfragRecorder) -> (u64, Vec<Block>) {
    let held: Vec<Block> = std::iter::from_fn(|| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).ok()).collect();
    assert_eq!(allocator.zones()[0].free_pages(), 0);
    let held_pfns: std::collections::HashSet<u64> = held.iter().map(Block::pfn).collect();
    let base = allocator.zones()[0].start_pfn();
    let full_block = (0..PAGES / PAGEBLOCK_PAGES)
        .map(|i| base + i * PAGEBLOCK_PAGES)
        .find(|start| (*start..start + PAGEBLOCK_PAGES).all(|pfn| held_pfns.contains(&pfn)))
        .expect("a wholly allocated pageblock");
    let to_free: Vec<u64> = (0..100).map(|i| full_block + 4 * i).collect();
    let (freed, kept): (Vec<_>, Vec<_>) = held.into_iter().partition(|block| to_free.contains(&block.pfn()));
    for block in freed {
        allocator.free_pages(block).unwrap();
    }
    recorder.clear();
    (full_block, kept)
}

fn free_list_blocks(allocator: &PageAllocator<TestPlatform>, order: usize, migratetype: MigrateType) -> u64 {
    allocator.zones()[0].with_free_area(allocator.platform(), |area| area.blocks(order, migratetype.index()))
}

#[test]
fn the_2018_design_moves_the_pageblocks_free_pages_to_the_requester_without_retyping() {
    for (boost, boosted) in [(BoostRule::Off, false), (BoostRule::EveryFallback, true)] {
        let (allocator, recorder) = allocator(FragPolicy { boost, ..FragPolicy::LINUX_4_20 });
        let (pageblock, kept) = sparse_movable_pageblock(&allocator, &recorder);
        let block = allocator.alloc_pages(0, AllocRequest::ATOMIC).unwrap();
        assert_eq!(block.pfn() & !(PAGEBLOCK_PAGES - 1), pageblock);
        let events = recorder.events();
        assert_eq!(events.len(), 1);
        // 100 free of 512 and nothing alike: below half a pageblock, so no re-type...
        assert_eq!(events[0].kind, FallbackKind::Steal);
        assert_eq!(allocator.zones()[0].pageblock_counts()[MigrateType::Unmovable.index()], 0);
        // ...but all its free pages now sit on the unmovable lists.
        assert_eq!(free_list_blocks(&allocator, 0, MigrateType::Unmovable), 99);
        assert_eq!(free_list_blocks(&allocator, 0, MigrateType::Movable), 0);
        assert_eq!(allocator.zones()[0].state().boost_pages() > 0, boosted, "{boost:?}");
        allocator.check_invariants().unwrap();
        // Freed, the page returns to its pageblock's type.
        allocator.free_pages(block).unwrap();
        assert_eq!(free_list_blocks(&allocator, 0, MigrateType::Movable), 1);
        allocator.check_invariants().unwrap();
        allocator.free_bulk(kept).unwrap();
        allocator.check_invariants().unwrap();
    }
}

#[test]
fn mainline_steals_one_block_and_boosts_only_on_the_claim_attempt() {
    let (allocator, recorder) = allocator(FragPolicy::MAINLINE);
    let (_, kept) = sparse_movable_pageblock(&allocator, &recorder);
    let block = allocator.alloc_pages(0, AllocRequest::ATOMIC).unwrap();
    assert_eq!(recorder.events()[0].kind, FallbackKind::Steal);
    assert_eq!(free_list_blocks(&allocator, 0, MigrateType::Unmovable), 0, "free lists match pageblocks");
    assert_eq!(free_list_blocks(&allocator, 0, MigrateType::Movable), 99);
    assert!(allocator.zones()[0].state().boost_pages() >= PAGEBLOCK_PAGES, "the failed claim boosted");
    allocator.free_pages(block).unwrap();
    allocator.free_bulk(kept).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn the_2018_design_retypes_a_pageblock_half_free() {
    let (allocator, recorder) = allocator(FragPolicy::LINUX_4_20);
    let (pageblock, kept) = sparse_movable_pageblock(&allocator, &recorder);
    // Free the rest of the pageblock's first half too: 100 + 128 - 25 ... at least 256 free.
    let (freed, kept): (Vec<_>, Vec<_>) =
        kept.into_iter().partition(|block| block.pfn() >= pageblock && block.pfn() < pageblock + PAGEBLOCK_PAGES / 2);
    allocator.free_bulk(freed).unwrap();
    recorder.clear();
    let block = allocator.alloc_pages(0, AllocRequest::ATOMIC).unwrap();
    assert_eq!(recorder.events()[0].kind, FallbackKind::Claim);
    assert_eq!(allocator.zones()[0].pageblock_counts()[MigrateType::Unmovable.index()], 1);
    allocator.check_invariants().unwrap();
    allocator.free_pages(block).unwrap();
    allocator.free_bulk(kept).unwrap();
    allocator.check_invariants().unwrap();
}

/// Memory full of page cache read in address order; then an unmovable request. Mainline
/// fragments a movable pageblock at once; defrag_mode reclaims first, until a whole
/// pageblock is free, and claims it whole: no fallback below pageblock order.
#[test]
fn defrag_mode_reclaims_a_whole_pageblock_instead_of_fragmenting() {
    for (frag, fragmenting_events) in
        [(FragPolicy::MAINLINE, 1), (FragPolicy { defrag_mode: true, ..FragPolicy::MAINLINE }, 0)]
    {
        let (mut allocator, recorder) = allocator(frag);
        let cache = Arc::new(OldestFirstCache::default());
        allocator.set_reclaim(cache.clone());
        let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
        while let Ok(page) = allocator.alloc_pages(0, request) {
            cache.read(page);
        }
        cache.pages.lock().unwrap().make_contiguous().sort_by_key(Block::pfn);
        recorder.clear();
        let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
        let events = recorder.events();
        let below_pageblock = events.iter().filter(|event| event.fallback_order < PAGEBLOCK_ORDER).count();
        assert_eq!(below_pageblock, fragmenting_events, "{frag:?}: {events:?}");
        if frag.defrag_mode {
            assert!(allocator.counters().reclaim_stats(0).pgsteal_direct >= PAGEBLOCK_PAGES);
        }
        allocator.check_invariants().unwrap();
        allocator.free_pages(block).unwrap();
        let pages: Vec<Block> = cache.pages.lock().unwrap().drain(..).collect();
        allocator.free_bulk(pages).unwrap();
    }
    assert_eq!(FragPolicy::MAINLINE.fallback, FallbackDesign::ClaimOrSteal);
}

/// A fallback boosts the zone; then enough is freed that the node is balanced even at the
/// boosted watermarks. kswapd still reclaims the boost's worth (balance_pgdat()'s boost
/// reclaim), leaving slab alone under the 2018 rule (may_shrinkslab off, v5.0-v5.2) and
/// not under mainline's; then the boost is gone.
#[test]
fn a_balanced_boosted_node_reclaims_the_boost() {
    let boost_2018 =
        FragPolicy { boost: BoostRule::EveryFallback, boost_reclaim_shrinks_slab: false, ..FragPolicy::LINUX_4_20 };
    for (frag, shrink_slab) in [(boost_2018, false), (FragPolicy::MAINLINE, true)] {
        let (mut allocator, recorder) = allocator(frag);
        let (_, mut kept) = sparse_movable_pageblock(&allocator, &recorder);
        let block = allocator.alloc_pages(0, AllocRequest::ATOMIC).unwrap();
        let boost = allocator.zones()[0].state().boost_pages();
        assert!(boost >= PAGEBLOCK_PAGES, "{frag:?}: the fallback boosted");
        // Free memory well above the boosted high watermark.
        let high = allocator.zones()[0].state().watermarks_with_boost().high_pages;
        let freed: Vec<Block> = kept.drain(..(2 * high) as usize).collect();
        allocator.free_bulk(freed).unwrap();
        assert!(allocator.zone_watermark_ok(0, 0, pagealloc::request::WatermarkLevel::High, ZoneType::Normal));
        let cache = Arc::new(OldestFirstCache::default());
        cache.pages.lock().unwrap().extend(kept.drain(..(2 * boost) as usize));
        allocator.set_reclaim(cache.clone());
        allocator.background().wake_kswapd(0);
        assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 1);
        let requests = cache.requests.lock().unwrap().clone();
        assert_eq!(requests.len(), 1, "{frag:?}: one round frees the whole boost: {requests:?}");
        assert!(requests[0].boost_only);
        assert_eq!(requests[0].pages, boost);
        assert_eq!(requests[0].shrink_slab, shrink_slab, "{frag:?}");
        assert_eq!(allocator.counters().reclaim_stats(0).pgsteal_kswapd, boost);
        assert_eq!(allocator.zones()[0].state().boost_pages(), 0, "the pass answered for the boost");
        allocator.check_invariants().unwrap();
        allocator.free_pages(block).unwrap();
        let pages: Vec<Block> = cache.pages.lock().unwrap().drain(..).collect();
        allocator.free_bulk(pages).unwrap();
        allocator.free_bulk(kept).unwrap();
        allocator.check_invariants().unwrap();
    }
}

/// A THP fault (costly, __GFP_NORETRY) whose compaction could not start: mainline gives up
/// at once (v5.4 on); the 2018 kernels went on to direct reclaim, which here frees enough
/// for the fault to succeed.
#[test]
fn a_thp_fault_whose_compaction_was_skipped_reclaims_only_before_v5_4() {
    for (frag, reclaims) in [(FragPolicy::MAINLINE, false), (FragPolicy::LINUX_4_20, true)] {
        assert_eq!(frag.noretry_gives_up_when_skipped, !reclaims);
        let (mut allocator, _) = allocator(frag);
        let cache = Arc::new(OldestFirstCache::default());
        allocator.set_reclaim(cache.clone());
        let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
        while let Ok(page) = allocator.alloc_pages(0, request) {
            cache.read(page);
        }
        cache.pages.lock().unwrap().make_contiguous().sort_by_key(Block::pfn);
        // No migration client: compaction is skipped.
        let huge = allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::TRANSHUGE);
        assert_eq!(huge.is_ok(), reclaims, "{frag:?}");
        assert_eq!(allocator.counters().reclaim_stats(0).allocstall > 0, reclaims, "{frag:?}");
        if let Ok(block) = huge {
            allocator.free_pages(block).unwrap();
        }
        let pages: Vec<Block> = cache.pages.lock().unwrap().drain(..).collect();
        allocator.free_bulk(pages).unwrap();
        allocator.check_invariants().unwrap();
    }
}
