//! How a compaction run ends, and what it leaves for the next one: a run that runs out of
//! free targets before the scanners meet is contended (no reset, no deferral); a run whose
//! scanners meet ends Complete and starts the next one over, even when its last pageblock
//! met the goal; a client that panics gets every page back to the allocator.

// The invariant checker needs the alloc feature.
#![cfg(feature = "alloc")]

mod common;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::platform::TestPlatform;
use pagealloc::sizing::Tunables;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, PageAllocator, Pfn, ZoneType, PAGEBLOCK_ORDER};

const PAGEBLOCK_PAGES: u64 = 1 << PAGEBLOCK_ORDER;
/// Eight pageblocks.
const PAGES: u64 = 8 * PAGEBLOCK_PAGES;

/// A client holding order-0 movable pages by pfn. It moves a page when `accepts` says so,
/// and panics on its `panic_on`-th call (0: never).
struct Pages {
    held: Mutex<HashMap<Pfn, Block>>,
    accepts: Box<dyn Fn(Pfn) -> bool + Send + Sync>,
    calls: AtomicU64,
    panic_on: AtomicU64,
}

impl Pages {
    fn new(accepts: impl Fn(Pfn) -> bool + Send + Sync + 'static) -> Pages {
        Pages {
            held: Mutex::default(),
            accepts: Box::new(accepts),
            calls: AtomicU64::new(0),
            panic_on: AtomicU64::new(0),
        }
    }

    /// Frees the held pages `which` picks.
    fn free_where(&self, allocator: &PageAllocator<TestPlatform>, which: impl Fn(Pfn) -> bool) {
        let mut held = self.held.lock().unwrap();
        let picked: Vec<Pfn> = held.keys().copied().filter(|&pfn| which(pfn)).collect();
        for pfn in picked {
            allocator.free_pages(held.remove(&pfn).unwrap()).unwrap();
        }
    }
}

impl Migrate<TestPlatform> for Pages {
    fn migrate(&self, _: &PageAllocator<TestPlatform>, source: MigrateSource, target: Block) -> Result<Block, Block> {
        let call = self.calls.fetch_add(1, Relaxed) + 1;
        if call == self.panic_on.load(Relaxed) {
            panic!("client panics on call {call}");
        }
        let mut held = self.held.lock().unwrap();
        if !(self.accepts)(source.pfn) || !held.get(&source.pfn).is_some_and(|block| source.is(block)) {
            return Err(target);
        }
        let old = held.remove(&source.pfn).unwrap();
        held.insert(target.pfn(), target);
        Ok(old)
    }
}

/// One Normal zone of eight pageblocks, pagesets off, min watermark 0 (so a test can take
/// every page and then free exactly the layout it wants), `client` registered.
fn allocator(client: &Arc<Pages>) -> PageAllocator<TestPlatform> {
    let tunables = Tunables { min_free_kbytes: Some(0), ..Tunables::default() };
    let builder =
        AllocatorBuilder::single_zone(ZoneType::Normal, PAGES).policy(common::preset("global-lock")).tunables(tunables);
    let mut allocator = common::build_allocator(builder, 1);
    allocator.set_migrate(client.clone());
    allocator
}

/// Takes every page of the zone as an order-0 movable page held by `client`.
fn fill(allocator: &PageAllocator<TestPlatform>, client: &Pages) {
    let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
    while let Ok(block) = allocator.alloc_pages(0, request) {
        client.held.lock().unwrap().insert(block.pfn(), block);
    }
    assert_eq!(allocator.zone_free_pages_snapshot(0), 0, "every page taken");
}

fn offset(allocator: &PageAllocator<TestPlatform>, pfn: Pfn) -> u64 {
    pfn - allocator.zones()[0].start_pfn()
}

fn tear_down(allocator: &PageAllocator<TestPlatform>, client: &Pages) {
    client.free_where(allocator, |_| true);
    allocator.pagesets().drain_all();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.zone_free_pages_snapshot(0), PAGES, "every page back");
}

/// Six free pages, no two of them buddies, and a client that moves only even pages (whose
/// buddies it keeps): kcompactd's run for order 1 runs out of free targets at the floor
/// long before the scanners meet. Linux calls that contended (compact_zone() returns
/// COMPACT_CONTENDED when migrate_pages() fails with the scanners apart): the cached
/// positions stay, and no order is deferred, so that compaction can go on once reclaim
/// frees memory.
#[test]
fn running_out_of_free_targets_is_contended_not_complete() {
    let client = Arc::new(Pages::new(|pfn| pfn % 2 == 0));
    let allocator = allocator(&client);
    fill(&allocator, &client);
    let last_block = PAGES - PAGEBLOCK_PAGES;
    client.free_where(&allocator, |pfn| {
        let at = offset(&allocator, pfn);
        at >= last_block && at.is_multiple_of(2) && at < last_block + 12
    });
    allocator.check_invariants().unwrap();
    allocator.background().wake_kcompactd(0, 1);
    assert_eq!(allocator.background().run_due_work(0, 0).kcompactd_passes, 1);
    assert_eq!(allocator.zones()[0].free_pages(), 6, "no pair came free");
    let cursors = allocator.zones()[0].state().compact_cursors();
    let stats = allocator.counters().compaction_stats(0);
    assert!(stats.pgmigrate_success > 0, "the run moved pages: {stats:?}");
    assert_eq!(cursors.defer_shift(), 0, "a contended run defers nothing");
    let start = allocator.zones()[0].start_pfn();
    assert_eq!(cursors.cached_migrate_pfn(), start, "it resumes at the pageblock it stopped in");
    assert_eq!(cursors.cached_free_pfn(), start + last_block, "and the free scanner where it was");
    assert_counters_balance(&allocator);
    allocator.check_invariants().unwrap();
    tear_down(&allocator, &client);
}

/// The migration scanner passes six pageblocks whose pages the client will not move, then
/// empties the seventh into the eighth: the goal (a free pageblock) is met in the same
/// step as the scanners meet. __compact_finished() tests the meeting first: the run is
/// Complete and the cached positions are reset, so the next run scans the zone again
/// instead of ending at once and deferring the order for nothing.
#[test]
fn a_run_whose_scanners_meet_starts_the_next_one_over() {
    let moving_from = Arc::new(AtomicU64::new(Pfn::MAX));
    let from = moving_from.clone();
    let client = Arc::new(Pages::new(move |pfn| pfn >= from.load(Relaxed)));
    let allocator = allocator(&client);
    let start_pfn = allocator.zones()[0].start_pfn();
    moving_from.store(start_pfn + 6 * PAGEBLOCK_PAGES, Relaxed);
    fill(&allocator, &client);
    // Every other page free, and the last pageblock free but for one page: room for every
    // page of the seventh, so the free scanner stays in the eighth.
    client.free_where(&allocator, |pfn| {
        let at = offset(&allocator, pfn);
        at % 2 == 1 || (at >= PAGES - PAGEBLOCK_PAGES && at != PAGES - 2)
    });
    allocator.check_invariants().unwrap();

    let huge = allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::TRANSHUGE).expect("compaction freed a pageblock");
    assert_eq!(offset(&allocator, huge.pfn()), 6 * PAGEBLOCK_PAGES, "the seventh pageblock");
    let cursors = allocator.zones()[0].state().compact_cursors();
    assert_eq!((cursors.cached_migrate_pfn(), cursors.cached_free_pfn()), (0, 0), "the scanners met: reset");
    allocator.check_invariants().unwrap();

    // Every page may move now: a second huge page needs the first pageblock emptied.
    moving_from.store(start_pfn, Relaxed);
    let second = allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::TRANSHUGE).expect("the next run scans again");
    assert_eq!(cursors.defer_shift(), 0);
    assert_counters_balance(&allocator);
    allocator.check_invariants().unwrap();
    allocator.free_pages(huge).unwrap();
    allocator.free_pages(second).unwrap();
    tear_down(&allocator, &client);
}

/// A client that panics mid-run (on its n-th call, for several n): the isolated free
/// pages, the target it was handed, and the pages already moved from all return to the
/// allocator as the panic unwinds, and the allocator stays consistent and usable.
#[test]
fn a_panicking_client_gets_every_page_back() {
    for panic_on in [1, 2, 5, 17, 40] {
        let client = Arc::new(Pages::new(|_| true));
        let allocator = allocator(&client);
        fill(&allocator, &client);
        client.free_where(&allocator, |pfn| offset(&allocator, pfn) % 2 == 1);
        client.panic_on.store(panic_on, Relaxed);
        let unwound = catch_unwind(AssertUnwindSafe(|| allocator.background().compact_node(0)));
        assert!(unwound.is_err(), "the client panicked on call {panic_on}");
        allocator.check_invariants().unwrap();
        let held = client.held.lock().unwrap().len() as u64;
        assert_eq!(
            allocator.zone_free_pages_snapshot(0) + held,
            PAGES,
            "panic on call {panic_on}: free plus held is every page"
        );
        // Compaction still works afterwards.
        client.panic_on.store(0, Relaxed);
        allocator.background().compact_node(0);
        allocator.check_invariants().unwrap();
        tear_down(&allocator, &client);
    }
}

/// Pages in use by the allocator's count (handed out less returned to the zone) are the
/// pages not free: compaction's targets count as handed out, as its moved-from blocks
/// count as returned, so the two counters move together.
fn assert_counters_balance(allocator: &PageAllocator<TestPlatform>) {
    let counters = allocator.counters().zone_counters();
    let in_use = PAGES - allocator.zone_free_pages_snapshot(0);
    assert_eq!(counters.alloc_zone_pages - counters.freed_to_zone_pages, in_use, "{counters:?}");
}

/// The free scanner takes a free block only while the zone keeps more than its min
/// watermark plus that block (__isolate_free_page()'s zone_watermark_ok(min + 2^order)):
/// with 3 pages free, an order-1 block may go (3 > 0 + 2), leaving the single page, which
/// may not (1 > 0 + 1 fails).
#[test]
fn the_free_scanner_keeps_the_min_watermark_plus_the_block() {
    let client = Arc::new(Pages::new(|_| true));
    let allocator = allocator(&client);
    fill(&allocator, &client);
    let start = allocator.zones()[0].start_pfn();
    let counters_before = allocator.counters().zone_counters();
    // An order-1 block at the start of the last pageblock, a single page further on.
    let last_block = start + PAGES - PAGEBLOCK_PAGES;
    client.free_where(&allocator, |pfn| [last_block, last_block + 1, last_block + 8].contains(&pfn));
    assert_eq!(allocator.zone_free_pages_snapshot(0), 3);
    allocator.background().compact_node(0);
    assert_eq!(allocator.counters().compaction_stats(0).pgmigrate_success, 2, "two pages moved into the order-1 block");
    assert_eq!(allocator.zone_free_pages_snapshot(0), 3, "moves neither create nor lose pages");
    let counters = allocator.counters().zone_counters();
    assert_eq!(counters.alloc_zone_pages - counters_before.alloc_zone_pages, 2, "the targets count as handed out");
    assert_counters_balance(&allocator);
    allocator.check_invariants().unwrap();
    tear_down(&allocator, &client);
}

/// A client that keeps its target and hands back a block of another allocator: the claim
/// refuses it (the free path reports it foreign), and the run counts a failure, not a
/// migration.
#[test]
fn a_move_whose_returned_block_is_refused_is_not_counted_migrated() {
    struct Foreign {
        other: PageAllocator<TestPlatform>,
        kept: Mutex<Vec<Block>>,
    }
    impl Migrate<TestPlatform> for Foreign {
        fn migrate(&self, _: &PageAllocator<TestPlatform>, _: MigrateSource, target: Block) -> Result<Block, Block> {
            let Ok(foreign) = self.other.alloc_pages(target.order(), AllocRequest::KERNEL) else { return Err(target) };
            self.kept.lock().unwrap().push(target);
            Ok(foreign)
        }
    }
    let other = common::build_allocator(AllocatorBuilder::single_zone(ZoneType::Normal, PAGES), 1);
    let foreign = Arc::new(Foreign { other, kept: Mutex::default() });
    let client = Arc::new(Pages::new(|_| false));
    let mut allocator = allocator(&client);
    allocator.set_migrate(foreign.clone());
    fill(&allocator, &client);
    client.free_where(&allocator, |pfn| offset(&allocator, pfn) % 2 == 1);
    allocator.background().compact_node(0);
    let stats = allocator.counters().compaction_stats(0);
    assert_eq!(stats.pgmigrate_success, 0, "{stats:?}");
    assert_eq!(stats.pgmigrate_fail, foreign.kept.lock().unwrap().len() as u64);
    assert!(stats.pgmigrate_fail > 0);
    assert_counters_balance(&allocator);
    allocator.check_invariants().unwrap();
    for block in foreign.kept.lock().unwrap().drain(..) {
        allocator.free_pages(block).unwrap();
    }
    tear_down(&allocator, &client);
}

/// kcompactd's run that ends Complete drains the zone's pagesets (drain_all_pages(zone)
/// in kcompactd_do_work()): pages stranded there may be what keeps blocks from merging.
#[test]
fn kcompactd_drains_the_pagesets_after_a_complete_run() {
    let client = Arc::new(Pages::new(|_| false));
    let tunables = Tunables { min_free_kbytes: Some(0), ..Tunables::default() };
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, PAGES).tunables(tunables);
    let mut allocator = common::build_allocator(builder, 1);
    allocator.set_migrate(client.clone());
    fill(&allocator, &client);
    // Every other page freed: the first ones stay in CPU 0's pageset.
    client.free_where(&allocator, |pfn| offset(&allocator, pfn) % 2 == 1);
    assert!(allocator.counters().pcp_pages() > 0);
    allocator.background().wake_kcompactd(0, PAGEBLOCK_ORDER);
    assert_eq!(allocator.background().run_due_work(0, 0).kcompactd_passes, 1);
    assert_eq!(allocator.counters().compaction_stats(0).compact_daemon_wake, 1);
    assert_eq!(allocator.counters().pcp_pages(), 0, "the complete run drained the pagesets");
    assert_eq!(allocator.zones()[0].state().compact_cursors().defer_shift(), 1, "and deferred the order");
    allocator.check_invariants().unwrap();
    tear_down(&allocator, &client);
}

/// A client that panics while a contiguous allocation moves blocks out of its range: the
/// range's isolation is undone and the target it was lent comes back, so no pageblock
/// stays isolated and no page is lost.
#[test]
fn a_client_panicking_inside_a_range_operation_leaves_no_isolation_or_leak() {
    let client = Arc::new(Pages::new(|_| true));
    let allocator = allocator(&client);
    fill(&allocator, &client);
    // One page held at the start of each pageblock: every candidate range has blocks to move.
    client.free_where(&allocator, |pfn| !offset(&allocator, pfn).is_multiple_of(PAGEBLOCK_PAGES));
    let held = PAGES / PAGEBLOCK_PAGES;
    client.panic_on.store(1, Relaxed);
    let unwound = catch_unwind(AssertUnwindSafe(|| allocator.alloc_contig(PAGES / 2, PAGES / 2, AllocRequest::KERNEL)));
    assert!(unwound.is_err(), "the client panicked");
    let zone = &allocator.zones()[0];
    assert_eq!(zone.pageblock_counts()[pagealloc::MigrateType::Isolate.index()], 0, "no pageblock left isolated");
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.zone_free_pages_snapshot(0) + held, PAGES, "free plus held is every page");
    // The range lock was released: the next range operation runs.
    client.panic_on.store(0, Relaxed);
    let run = allocator.alloc_contig(PAGES / 2, PAGES / 2, AllocRequest::KERNEL).expect("the blocks move out now");
    allocator.free_contig(run).unwrap();
    tear_down(&allocator, &client);
}
