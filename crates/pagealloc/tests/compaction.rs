//! Compaction through the client callback: a client whose pages hold contents (a checksum
//! per page, kept beside the allocator) has its movable blocks moved, with contents and
//! references following them; whole pageblocks come free; direct compaction serves a huge
//! request that would fail without it; proactive compaction lowers the fragmentation score;
//! unmovable blocks never move; and refusing or broken clients corrupt nothing.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::compaction::fragmentation_score_pct;
use pagealloc::platform::TestPlatform;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, MigrateType, PageAllocator, Pfn, ZoneType, PAGEBLOCK_ORDER};

const PAGES: u64 = 1 << 14;

/// One held block: its handle and the contents written into it.
struct Held {
    block: Block,
    contents: Vec<u64>,
}

/// A client that owns blocks with contents, indexed by head pfn; `handles` maps each block's
/// logical id to its current pfn, the reference a move must update.
#[derive(Default)]
struct Contents {
    blocks: Mutex<HashMap<Pfn, Held>>,
    /// Logical id -> current pfn (the references).
    handles: Mutex<Vec<Pfn>>,
    refuse: AtomicBool,
    moves: AtomicU64,
    unmovable_asked: AtomicBool,
}

fn checksum_of(id: u64, page: u64) -> u64 {
    id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (page + 1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

impl Contents {
    fn hold(&self, block: Block) {
        let mut handles = self.handles.lock().unwrap();
        let id = handles.len() as u64;
        let contents = (0..block.pages()).map(|page| checksum_of(id, page)).collect();
        handles.push(block.pfn());
        self.blocks.lock().unwrap().insert(block.pfn(), Held { block, contents });
    }

    /// Frees every other block (by id), leaving memory fragmented at order 0.
    fn free_every_other(&self, allocator: &PageAllocator<TestPlatform>) {
        let mut handles = self.handles.lock().unwrap();
        let mut blocks = self.blocks.lock().unwrap();
        for pfn in handles.iter_mut().skip(1).step_by(2) {
            let held = blocks.remove(pfn).unwrap();
            allocator.free_pages(held.block).unwrap();
            *pfn = Pfn::MAX;
        }
    }

    /// Every live reference finds its block, with the contents written for its id.
    fn verify(&self) {
        let handles = self.handles.lock().unwrap();
        let blocks = self.blocks.lock().unwrap();
        let live = handles.iter().filter(|&&pfn| pfn != Pfn::MAX).count();
        assert_eq!(live, blocks.len(), "a reference per held block");
        for (id, &pfn) in handles.iter().enumerate().filter(|(_, &pfn)| pfn != Pfn::MAX) {
            let held = blocks.get(&pfn).unwrap_or_else(|| panic!("reference {id} to {pfn:#x} dangles"));
            assert_eq!(held.block.pfn(), pfn);
            for (page, &word) in held.contents.iter().enumerate() {
                assert_eq!(word, checksum_of(id as u64, page as u64), "block {id} page {page} corrupted");
            }
        }
    }

    fn free_all(&self, allocator: &PageAllocator<TestPlatform>) {
        for (_, held) in self.blocks.lock().unwrap().drain() {
            allocator.free_pages(held.block).unwrap();
        }
    }
}

impl Migrate<TestPlatform> for Contents {
    fn migrate(
        &self,
        _allocator: &PageAllocator<TestPlatform>,
        source: MigrateSource,
        target: Block,
    ) -> Result<Block, Block> {
        if self.refuse.load(Relaxed) {
            return Err(target);
        }
        let mut blocks = self.blocks.lock().unwrap();
        let Some(held) = blocks.get(&source.pfn) else { return Err(target) };
        if !source.is(&held.block) {
            return Err(target);
        }
        if held.block.pfn() != source.pfn || target.order() != source.order {
            return Err(target);
        }
        let held = blocks.remove(&source.pfn).unwrap();
        // Copy the contents, then repoint the reference.
        let mut handles = self.handles.lock().unwrap();
        let id = handles.iter().position(|&pfn| pfn == source.pfn).expect("a held block has a reference");
        handles[id] = target.pfn();
        let target_pfn = target.pfn();
        blocks.insert(target_pfn, Held { block: target, contents: held.contents.clone() });
        self.moves.fetch_add(1, Relaxed);
        Ok(held.block)
    }
}

fn allocator(client: &Arc<Contents>) -> PageAllocator<TestPlatform> {
    let mut allocator =
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, PAGES), TestPlatform::new(1)).unwrap();
    allocator.set_migrate(client.clone());
    allocator
}

/// Fills memory with order-0 movable blocks down to the min watermark, frees every other
/// one, and drains the pagesets: half of memory free, none of it above order 0.
fn fragment(allocator: &PageAllocator<TestPlatform>, client: &Contents) {
    let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
    while let Ok(block) = allocator.alloc_pages(0, request) {
        client.hold(block);
    }
    client.free_every_other(allocator);
    allocator.pagesets().drain_all();
}

fn blocks_per_order(allocator: &PageAllocator<TestPlatform>) -> [u64; pagealloc::MAX_ORDER as usize + 1] {
    let zone = &allocator.zones()[0];
    zone.with_free_area(allocator.platform(), |area| std::array::from_fn(|order| area.blocks_of_order(order)))
}

fn huge_free_pages(allocator: &PageAllocator<TestPlatform>) -> u64 {
    let blocks = blocks_per_order(allocator);
    (PAGEBLOCK_ORDER as usize..blocks.len()).map(|order| blocks[order] << order).sum()
}

#[test]
fn compacting_a_node_frees_whole_pageblocks_and_keeps_contents() {
    let client = Arc::new(Contents::default());
    let allocator = allocator(&client);
    fragment(&allocator, &client);
    let free_before = allocator.zones()[0].free_pages();
    assert_eq!(huge_free_pages(&allocator), 0, "fragmented: no free pageblock");
    assert_eq!(fragmentation_score_pct(&blocks_per_order(&allocator)), 100);

    let migrated = allocator.background().compact_node(0);
    allocator.check_invariants().unwrap();
    client.verify();
    assert_eq!(allocator.zones()[0].free_pages(), free_before, "moves neither create nor lose pages");
    let stats = allocator.counters().compaction_stats(0);
    assert_eq!(stats.pgmigrate_success, migrated);
    assert_eq!(client.moves.load(Relaxed), migrated);
    assert!(stats.compact_migrate_scanned > 0 && stats.compact_free_scanned > 0);
    let mut vmstat = String::new();
    pagealloc::views::write_vmstat(&mut vmstat, &allocator).unwrap();
    assert!(vmstat.contains(&format!("pgmigrate_success {migrated}\n")), "{vmstat}");
    // The scanners meet in the middle: all but the pageblocks around the meeting point
    // come out whole.
    let huge = huge_free_pages(&allocator);
    assert!(huge * 100 >= free_before * 95, "{huge} of {free_before} free pages in whole pageblocks");

    client.free_all(&allocator);
    allocator.pagesets().drain_all();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.zones()[0].free_pages(), allocator.zones()[0].state().managed_pages());
}

#[test]
fn direct_compaction_serves_a_huge_request_that_fails_without_it() {
    let without = Arc::new(Contents::default());
    let plain =
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, PAGES), TestPlatform::new(1)).unwrap();
    fragment(&plain, &without);
    assert!(plain.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::TRANSHUGE).is_err(), "no client: no huge page");
    assert_eq!(plain.counters().compaction_stats(0).compact_stall, 0);

    let client = Arc::new(Contents::default());
    let allocator = allocator(&client);
    fragment(&allocator, &client);
    // Without MADV_HUGEPAGE the fault does not compact.
    assert!(allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::TRANSHUGE_LIGHT).is_err());
    assert_eq!(allocator.counters().compaction_stats(0).compact_stall, 0);
    let huge = allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::TRANSHUGE).expect("compaction made a pageblock");
    let stats = allocator.counters().compaction_stats(0);
    assert_eq!((stats.compact_stall, stats.compact_success, stats.compact_fail), (1, 1, 0));
    assert!(stats.pgmigrate_success >= 256, "at least half a pageblock moved: {stats:?}");
    allocator.check_invariants().unwrap();
    client.verify();
    allocator.free_pages(huge).unwrap();
    client.free_all(&allocator);
    without.free_all(&plain);
}

#[test]
fn proactive_compaction_lowers_the_score_to_its_low_watermark() {
    let client = Arc::new(Contents::default());
    let allocator = allocator(&client);
    fragment(&allocator, &client);
    assert_eq!(allocator.counters().fragmentation_score(0), 99, "100% weighted by present/(present+1)");
    // Default proactiveness 20: compact above 90 down to 80, checked every 500 ms.
    assert_eq!(allocator.background().run_due_work(0, 499_000_000).kcompactd_passes, 0);
    assert_eq!(allocator.background().run_due_work(0, 500_000_000).kcompactd_passes, 1);
    let score = fragmentation_score_pct(&blocks_per_order(&allocator));
    assert!(score <= 80, "zone score {score} after a proactive pass");
    assert!(score > 0, "it stops near the low watermark, not at zero: {score}");
    let stats = allocator.counters().compaction_stats(0);
    assert_eq!(stats.compact_proactive_runs, 1);
    assert_eq!(stats.compact_daemon_migrate_scanned, stats.compact_migrate_scanned);
    assert_eq!(
        allocator.background().run_due_work(0, 1_000_000_000).kcompactd_passes,
        0,
        "below the high watermark now"
    );
    allocator.check_invariants().unwrap();
    client.verify();
    client.free_all(&allocator);
}

#[test]
fn unmovable_blocks_and_unmovable_pageblocks_stay_put() {
    struct Watch(Contents);
    impl Migrate<TestPlatform> for Watch {
        fn migrate(
            &self,
            allocator: &PageAllocator<TestPlatform>,
            source: MigrateSource,
            target: Block,
        ) -> Result<Block, Block> {
            let held = self.0.blocks.lock().unwrap().get(&source.pfn).map(|held| held.block.pfn());
            if held.is_none() {
                self.0.unmovable_asked.store(true, Relaxed);
            }
            self.0.migrate(allocator, source, target)
        }
    }
    let watch = Arc::new(Watch(Contents::default()));
    let mut allocator =
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, PAGES), TestPlatform::new(1)).unwrap();
    allocator.set_migrate(watch.clone());
    // Unmovable kernel blocks, not the client's: the scanner must never offer them.
    let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::KERNEL };
    let mut kernel = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, request) {
        kernel.push(block);
    }
    let pfns: Vec<Pfn> = kernel.iter().map(Block::pfn).collect();
    let mut kept = Vec::new();
    for (index, block) in kernel.into_iter().enumerate() {
        if index % 2 == 0 {
            kept.push(block);
        } else {
            allocator.free_pages(block).unwrap();
        }
    }
    allocator.pagesets().drain_all();
    assert_eq!(allocator.background().compact_node(0), 0, "nothing movable");
    assert!(!watch.0.unmovable_asked.load(Relaxed));
    for (block, pfn) in kept.iter().zip(pfns.iter().step_by(2)) {
        assert_eq!(block.pfn(), *pfn);
    }
    assert_eq!(allocator.zones()[0].pageblock_counts()[MigrateType::Movable.index()], 0);
    allocator.check_invariants().unwrap();
    for block in kept {
        allocator.free_pages(block).unwrap();
    }
}

#[test]
fn a_refusing_client_moves_nothing_and_loses_nothing() {
    let client = Arc::new(Contents::default());
    let allocator = allocator(&client);
    fragment(&allocator, &client);
    let free_before = allocator.zones()[0].free_pages();
    client.refuse.store(true, Relaxed);
    assert_eq!(allocator.background().compact_node(0), 0);
    let stats = allocator.counters().compaction_stats(0);
    assert!(stats.pgmigrate_fail > 0 && stats.pgmigrate_success == 0);
    allocator.check_invariants().unwrap();
    client.verify();
    assert_eq!(allocator.zones()[0].free_pages(), free_before);
    assert_eq!(huge_free_pages(&allocator), 0);
    client.free_all(&allocator);
}

/// A client that answers with the wrong handles: the source it was offered instead of its
/// own handle (a copy it could only make unsafely is not needed: it hands back a block of
/// its own that is not the source), or keeps the target and returns another block.
#[test]
fn a_client_returning_the_wrong_blocks_corrupts_nothing() {
    struct Confused {
        spare: Mutex<Vec<Block>>,
        kept: Mutex<Vec<Block>>,
    }
    impl Migrate<TestPlatform> for Confused {
        fn migrate(
            &self,
            _: &PageAllocator<TestPlatform>,
            _source: MigrateSource,
            target: Block,
        ) -> Result<Block, Block> {
            // Claims a move but hands back an unrelated block it owned, and keeps the target.
            match self.spare.lock().unwrap().pop() {
                Some(spare) => {
                    self.kept.lock().unwrap().push(target);
                    Ok(spare)
                }
                None => Err(target),
            }
        }
    }
    let confused = Arc::new(Confused { spare: Mutex::new(Vec::new()), kept: Mutex::new(Vec::new()) });
    let mut allocator =
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, PAGES), TestPlatform::new(1)).unwrap();
    allocator.set_migrate(confused.clone());
    let held = Arc::new(Contents::default());
    fragment(&allocator, &held);
    for _ in 0..8 {
        let spare = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
        confused.spare.lock().unwrap().push(spare);
    }
    allocator.background().compact_node(0);
    allocator.check_invariants().unwrap();
    held.verify();
    // Every block anyone holds is still allocated and frees exactly once.
    for block in confused.kept.lock().unwrap().drain(..) {
        allocator.free_pages(block).unwrap();
    }
    held.free_all(&allocator);
    allocator.pagesets().drain_all();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.zones()[0].free_pages(), allocator.zones()[0].state().managed_pages());
}
