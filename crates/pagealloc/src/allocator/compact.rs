//! Compaction through a client callback. The allocator knows which blocks are allocated
//! movable, but not what they hold or who points at them: moving one is the client's job,
//! through [`Migrate`]. A run (mirrors compact_zone()) walks the migration scanner up from
//! the zone start and the free scanner down from its end, pageblock by pageblock; for each
//! movable block found it takes a target from the free scanner's catch and asks the client
//! to move the block there. The old block then returns to the buddy, where it merges.
//!
//! Who runs it: direct compaction for high-order requests (`direct_compact`, from the slow
//! path), kcompactd for the node after kswapd reclaimed a boost, and proactive compaction by
//! fragmentation score (both in `kcompactd`), and a caller forcing it (`compact_node`).

use super::compact_hold::RunHold;
use super::migrate::{Migrate, MigrateSource};
use super::PageAllocator;
use crate::block::Block;
use crate::compaction::{
    compaction_suitable, fragmentation_score_pct, migrate_candidates, suitable_source, target_block_free, Candidate,
    CompactGoal, CompactMode, CompactResult, CompactRun,
};
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, ZoneType, NR_ORDERS, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};
use crate::zone::Zone;

/// The two scanners' positions in one run: the migration scanner's next pfn, and the start
/// of the free scanner's current pageblock.
struct Scanners {
    migrate_pfn: Pfn,
    free_block: Pfn,
}

impl Scanners {
    fn met(&self) -> bool {
        self.free_block >> PAGEBLOCK_ORDER <= self.migrate_pfn >> PAGEBLOCK_ORDER
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Registers the client compaction asks to move blocks; without one, compaction does
    /// nothing.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let mut allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// use std::sync::Arc;
    /// use pagealloc::allocator::{Migrate, MigrateSource};
    /// use pagealloc::Block;
    /// /// A client that owns nothing it could move (a real one copies and repoints).
    /// struct Pinned;
    /// impl Migrate<TestPlatform> for Pinned {
    ///     fn migrate(&self, _: &PageAllocator<TestPlatform>, _: MigrateSource, target: Block) -> Result<Block, Block> {
    ///         Err(target)
    ///     }
    /// }
    /// allocator.set_migrate(Arc::new(Pinned));
    /// assert_eq!(allocator.background().compact_node(0), 0); // nothing allocated, nothing to move
    /// assert_eq!(allocator.counters().compaction_stats(0).pgmigrate_success, 0);
    /// ```
    #[cfg(feature = "alloc")]
    pub fn set_migrate(&mut self, client: alloc::sync::Arc<dyn Migrate<P>>) {
        self.migrate = Some(crate::client::Client::Shared(client));
    }

    /// [`Self::set_migrate`] for a client that lives as long as the allocator (no `alloc`
    /// feature needed).
    ///
    /// ```
    /// use pagealloc::allocator::{Migrate, MigrateSource};
    /// use pagealloc::platform::TestPlatform;
    /// use pagealloc::{AllocatorBuilder, Block, PageAllocator, ZoneType};
    /// struct Pinned;
    /// impl Migrate<TestPlatform> for Pinned {
    ///     fn migrate(&self, _: &PageAllocator<TestPlatform>, _: MigrateSource, target: Block) -> Result<Block, Block> {
    ///         Err(target)
    ///     }
    /// }
    /// static PINNED: Pinned = Pinned;
    /// let mut allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// allocator.set_migrate_static(&PINNED);
    /// assert_eq!(allocator.background().compact_node(0), 0); // nothing allocated, nothing to move
    /// ```
    pub fn set_migrate_static(&mut self, client: &'static dyn Migrate<P>) {
        self.migrate = Some(crate::client::Client::Static(client));
    }

    /// The zone's free block counts per order, read under its lock.
    pub(super) fn free_blocks_per_order(&self, zone: &Zone<P>) -> [u64; NR_ORDERS] {
        zone.with_free_area(&self.platform, |area| core::array::from_fn(|order| area.blocks_of_order(order)))
    }

    /// Would compaction for `order` help `zone` (mirrors compaction_suit_allocation_order()
    /// after its watermark shortcut)?
    pub(super) fn compaction_suitable(&self, zone: &Zone<P>, order: u8, highest_zone: ZoneType) -> bool {
        let blocks = self.free_blocks_per_order(zone);
        compaction_suitable(zone.watermark_view(), order, highest_zone, self.tunables.extfrag_threshold, &blocks)
    }

    /// Is the goal met?
    fn goal_met(&self, zone: &Zone<P>, goal: CompactGoal, at_block_start: bool) -> bool {
        match goal {
            // Finish the pageblock being emptied before stopping (as __compact_finished()).
            CompactGoal::Order { order, migratetype, whole_blocks_only } => {
                at_block_start && target_block_free(zone.mem(), order, migratetype, whole_blocks_only)
            }
            // Scores need the free counts under the lock: read once per pageblock.
            CompactGoal::Score { low_pct } => {
                at_block_start && fragmentation_score_pct(&self.free_blocks_per_order(zone)) <= low_pct
            }
            CompactGoal::WholeZone => false,
        }
    }

    /// One compaction run over `zone` (mirrors compact_zone()); `daemon` for kcompactd's.
    pub(super) fn compact_zone(
        &self,
        zone: &Zone<P>,
        goal: CompactGoal,
        mode: CompactMode,
        daemon: bool,
    ) -> (CompactResult, CompactRun) {
        let mut run = CompactRun::default();
        let Some(client) = self.migrate.as_deref() else { return (CompactResult::Skipped, run) };
        let mem = zone.mem();
        let cursors = &zone.state().compact;
        let last_block = (mem.end_pfn() - 1) & !(PAGEBLOCK_PAGES - 1);
        let migrate_pfn = cursors.migrate_pfn.load(core::sync::atomic::Ordering::Relaxed);
        let free_block = cursors.free_pfn.load(core::sync::atomic::Ordering::Relaxed);
        let mut scanners = Scanners {
            migrate_pfn: if migrate_pfn == 0 { mem.start_pfn } else { migrate_pfn.clamp(mem.start_pfn, mem.end_pfn()) },
            free_block: if free_block == 0 { last_block } else { free_block.min(last_block) },
        };
        let mut hold = RunHold::new(zone, &self.platform);
        let result = loop {
            // The meeting first, as __compact_finished() tests it: a run whose scanners
            // met is complete, even if its last pageblock met the goal, so the next run
            // starts over instead of at the meeting point.
            if scanners.met() {
                break CompactResult::Complete;
            }
            let at_block_start = scanners.migrate_pfn & (PAGEBLOCK_PAGES - 1) == 0;
            if self.goal_met(zone, goal, at_block_start) {
                break CompactResult::Success;
            }
            let block_end = ((scanners.migrate_pfn | (PAGEBLOCK_PAGES - 1)) + 1).min(mem.end_pfn());
            if !suitable_source(mem.pageblock_type(scanners.migrate_pfn), mode) {
                scanners.migrate_pfn = block_end;
                continue;
            }
            let block_start = (scanners.migrate_pfn & !(PAGEBLOCK_PAGES - 1)).max(mem.start_pfn);
            let candidates = migrate_candidates(mem, scanners.migrate_pfn, block_end);
            run.migrate_scanned_pages += candidates.scanned_pages;
            scanners.migrate_pfn = candidates.next_pfn;
            let targets_found =
                self.migrate_cluster(client, zone, candidates.as_slice(), (&mut hold, &mut scanners), &mut run);
            // Out of free targets with the scanners apart: the free scanner stopped at the
            // min watermark (compaction_alloc() found nothing, so compact_zone() returns
            // COMPACT_CONTENDED). With the scanners met, the next check ends the run.
            if !targets_found && !scanners.met() {
                // The next run resumes at this pageblock, whose candidates left without a
                // target were never offered (the cached position moves a pageblock at a
                // time, as update_cached_migrate() moves it).
                scanners.migrate_pfn = block_start;
                break CompactResult::Contended;
            }
        };
        // Gives the pool back (and anything a client's panic would have left held).
        drop(hold);
        if result == CompactResult::Complete {
            cursors.reset_scanners();
        } else {
            cursors.migrate_pfn.store(scanners.migrate_pfn, core::sync::atomic::Ordering::Relaxed);
            cursors.free_pfn.store(scanners.free_block, core::sync::atomic::Ordering::Relaxed);
        }
        self.nodes[zone.state().node as usize].compact.add_run(&run, daemon);
        (result, run)
    }

    /// Moves each candidate into a target from the pool, then frees the moved-from blocks
    /// under one zone-lock hold. False when the free scanner found no target for a
    /// candidate: it ran into the migration scanner, or stopped at the min watermark.
    fn migrate_cluster(
        &self,
        client: &dyn Migrate<P>,
        zone: &Zone<P>,
        candidates: &[Candidate],
        (hold, scanners): (&mut RunHold<'_, P>, &mut Scanners),
        run: &mut CompactRun,
    ) -> bool {
        let mut remaining_pages: u64 = candidates.iter().map(|candidate| 1u64 << candidate.head.order()).sum();
        run.isolated_pages += remaining_pages;
        let mut targets_found = true;
        for candidate in candidates {
            let order = candidate.head.order();
            let Some(target_pfn) =
                self.compaction_target(zone, order, remaining_pages, (&mut *hold, &mut *scanners), run)
            else {
                targets_found = false;
                break;
            };
            remaining_pages -= 1 << order;
            // Lent before its head changes, so an unwind from here on gives it back.
            hold.lend_target(target_pfn, order);
            let target_head = FrameInfo::new(FrameState::AllocHead, order, MigrateType::Movable);
            zone.mem().frame(target_pfn).hand_out(&[FrameState::Interior], target_head);
            let handed_head = zone.mem().frame(target_pfn).info();
            hold.target_handed_out(handed_head);
            let target = Block::new(target_pfn, zone.state().index, self.id, handed_head);
            let source = MigrateSource {
                pfn: candidate.pfn,
                order,
                zone_index: zone.state().index,
                generation: candidate.head.generation(),
            };
            let moved = client.migrate(self, source, target);
            hold.target_returned(moved.is_ok());
            match moved {
                Ok(old) => match self.claim_returned(zone, old) {
                    Some((pfn, order)) => {
                        run.migrated_pages += 1 << order;
                        hold.push_moved(pfn, order);
                    }
                    // A stale or foreign handle: the free path named the error, and
                    // nothing moved that this run can count.
                    None => run.failed_pages += 1 << order,
                },
                // The target back: it returns to the pool. Another block in its place (a
                // client bug) is freed as any returned block is, and the target stays the
                // client's.
                Err(back) if back.pfn() == target_pfn && back.generation() == handed_head.generation() => {
                    run.failed_pages += 1 << order;
                    if let Some((pfn, order)) = self.claim_returned(zone, back) {
                        hold.pool.put_back(pfn, order);
                    }
                }
                Err(other) => {
                    run.failed_pages += 1 << order;
                    if let Some((pfn, order)) = self.claim_returned(zone, other) {
                        hold.push_moved(pfn, order);
                    }
                }
            }
        }
        hold.free_moved();
        targets_found
    }

    /// Claims a block the client handed back (the moved-from block, or a refused target)
    /// for the run to free or reuse under the zone lock, through the free path's claim. A
    /// block of another zone, or one the claim refuses (a client bug: a stale or foreign
    /// handle), takes the ordinary free path, which names any error; nothing is freed twice.
    fn claim_returned(&self, zone: &Zone<P>, block: Block) -> Option<(Pfn, u8)> {
        let (pfn, order) = (block.pfn(), block.order());
        let ours =
            block.allocator_id() == self.id && block.zone_index() == zone.state().index && zone.mem().contains(pfn);
        if ours && Self::try_claim(zone, pfn, |info| info.matches_allocated(block.expected_head())) {
            return Some((pfn, order));
        }
        let _ = self.free_pages(block);
        None
    }

    /// A free block of `order` from the pool, isolating more from the free scanner's
    /// pageblocks (movable ones only, from the zone end down) until it has one or the
    /// scanners meet (mirrors compaction_alloc() and isolate_freepages()).
    fn compaction_target(
        &self,
        zone: &Zone<P>,
        order: u8,
        wanted_pages: u64,
        (hold, scanners): (&mut RunHold<'_, P>, &mut Scanners),
        run: &mut CompactRun,
    ) -> Option<Pfn> {
        let mem = zone.mem();
        let pool = &mut hold.pool;
        loop {
            if let Some(pfn) = pool.take(order) {
                return Some(pfn);
            }
            if scanners.met() {
                return None;
            }
            let start = scanners.free_block.max(mem.start_pfn);
            let end = (scanners.free_block + PAGEBLOCK_PAGES).min(mem.end_pfn());
            let mut block_done = true;
            if matches!(mem.pageblock_type(start), MigrateType::Movable | MigrateType::Cma) {
                let mut locked = zone.buddy(&self.platform).lock();
                let floor_pages = zone.state().params.watermarks().min_pages;
                let (scanned, isolated, done) =
                    pool.isolate_pageblock(&mut locked, (start, end), (wanted_pages, order), floor_pages);
                drop(locked);
                run.free_scanned_pages += scanned;
                run.isolated_pages += isolated;
                block_done = done;
                if pool.below_floor {
                    // Isolating more would take the zone below its min watermark.
                    return pool.take(order);
                }
            }
            if block_done {
                scanners.free_block -= PAGEBLOCK_PAGES;
            } else if !pool.has_block_of(order) {
                // Full of blocks too small for this order: give them back and move on.
                pool.release(&mut zone.buddy(&self.platform).lock());
                scanners.free_block -= PAGEBLOCK_PAGES;
            }
        }
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Direct compaction for an order-`order` request (mirrors try_to_compact_pages()): each
    /// zone the request may use, skipping deferred zones and those compaction cannot help,
    /// until one holds a free block of the order. Returns the best result over the zones
    /// ([`CompactResult::rank`]). A complete synchronous run defers the order; a contended
    /// one does not.
    pub(super) fn direct_compact(
        &self,
        zonelist: &[u16],
        (order, migratetype, highest_zone): (u8, MigrateType, ZoneType),
        (mode, whole_blocks_only): (CompactMode, bool),
    ) -> CompactResult {
        if self.migrate.is_none() {
            return CompactResult::Skipped;
        }
        let mut best = CompactResult::Skipped;
        for &zone_index in zonelist {
            let zone = &self.zones[zone_index as usize];
            if zone.state().zone_type > highest_zone || !zone.state().is_populated() {
                continue;
            }
            let result = if zone.state().compact.deferred(order) {
                CompactResult::Deferred
            } else if !self.compaction_suitable(zone, order, highest_zone) {
                CompactResult::Skipped
            } else {
                let goal = CompactGoal::Order { order, migratetype, whole_blocks_only };
                let (result, _) = self.compact_zone(zone, goal, mode, false);
                match result {
                    CompactResult::Success => zone.state().compact.defer_reset(order, false),
                    CompactResult::Complete if mode == CompactMode::Sync => zone.state().compact.defer(order),
                    _ => {}
                }
                result
            };
            if result.rank() > best.rank() {
                best = result;
            }
            if result == CompactResult::Success {
                break;
            }
        }
        best
    }
}
