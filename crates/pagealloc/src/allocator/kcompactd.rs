//! Background compaction (mirrors kcompactd()): a node's pass when kswapd woke it for an
//! order after reclaiming a watermark boost (kcompactd_do_work()), and proactive compaction
//! every [`crate::compaction::FRAG_CHECK_INTERVAL_MS`] while the node's fragmentation score is above its high
//! watermark (v5.9, proactive_compact_node()). Both run from the allocator's periodic work,
//! and only with a [`super::Migrate`] client.

use super::PageAllocator;
use crate::compaction::{fragmentation_score_wmarks, CompactGoal, CompactMode, CompactResult};
use crate::platform::Platform;
use crate::request::{AllocFlags, WatermarkLevel};
use crate::types::{MigrateType, ZoneType};
use crate::watermark::{mark_pages, watermark_ok};

impl<P: Platform> PageAllocator<P> {
    /// [`Self::wake_kcompactd`] for the zones up to `highest_zone`: the lowest asked since
    /// the last pass wins, and the largest order (wakeup_kcompactd() keeps the smaller
    /// kcompactd_highest_zoneidx and the larger kcompactd_max_order).
    pub(crate) fn wake_kcompactd_for(&self, node: u16, order: u8, highest_zone: ZoneType) {
        if let Some(state) = self.nodes.get(node as usize) {
            state.kcompactd.wake(order, highest_zone);
        }
    }

    /// kcompactd's due work for `node` at `now_ns`: a pass for the order it was woken for,
    /// and the proactive check when its interval has passed. Returns whether it compacted,
    /// and the pages it drained from pagesets.
    pub(super) fn run_kcompactd(&self, node: u16, now_ns: u64) -> (bool, u64) {
        let Some(state) = self.nodes.get(node as usize) else { return (false, 0) };
        if self.migrate.is_none() {
            return (false, 0);
        }
        let (mut ran, mut drained_pages) = (false, 0);
        if let Some((order, highest_zone)) = state.kcompactd.take_wakeup() {
            let highest_zone = super::zone_limit(highest_zone);
            state.compact.count_daemon_wake();
            drained_pages = self.kcompactd_do_work(node, order, highest_zone);
            ran = true;
        }
        if self.tunables.compaction_proactiveness > 0 && state.kcompactd.claim_proactive_check(now_ns) {
            ran |= self.proactive_check(node);
        }
        (ran, drained_pages)
    }

    /// One pass for `order` over the node's zones up to `highest_zone` that are neither
    /// deferred nor already able to serve it, nor beyond compaction's help. A run that
    /// ends Complete drains the zone's pagesets, whose pages may be what keeps blocks from
    /// merging, and defers the order, as sync direct compaction does; a contended run
    /// does neither. Returns the pages drained.
    fn kcompactd_do_work(&self, node: u16, order: u8, highest_zone: ZoneType) -> u64 {
        let mut drained_pages = 0;
        for zone in self.populated_zones(node).filter(|zone| zone.state().zone_type <= highest_zone) {
            // Each zone against its own lowmem reserve (kcompactd_do_work() passes its index).
            let highest_zone = zone.state().zone_type;
            if zone.state().compact.deferred(order) {
                continue;
            }
            let min = mark_pages(zone.state(), WatermarkLevel::Min);
            let free_pages = zone.mem().free_pages();
            if watermark_ok(zone.watermark_view(), order, min, highest_zone, AllocFlags::PLAIN, free_pages)
                || !self.compaction_suitable(zone, order, highest_zone)
            {
                continue;
            }
            // kcompactd compacts for GFP_KERNEL, so its goal is an unmovable-usable block.
            let goal = CompactGoal::Order { order, migratetype: MigrateType::Unmovable, whole_blocks_only: false };
            match self.compact_zone(zone, goal, CompactMode::Sync, true).0 {
                CompactResult::Success => zone.state().compact.defer_reset(order, false),
                CompactResult::Complete => {
                    drained_pages += self.drain_zone(zone);
                    zone.state().compact.defer(order);
                }
                CompactResult::Skipped | CompactResult::Deferred | CompactResult::Contended => {}
            }
        }
        drained_pages
    }

    /// Proactive compaction if the score is above the high watermark and kswapd is not
    /// running (should_proactive_compact_node()); a pass that fails to lower the score
    /// defers the next 2^6 checks that find it above the mark. Checks below the mark do
    /// not count down the deferral, as kcompactd() counts only when it would compact.
    fn proactive_check(&self, node: u16) -> bool {
        let state = &self.nodes[node as usize];
        let (low_pct, high_pct) = fragmentation_score_wmarks(self.tunables.compaction_proactiveness);
        if state.kswapd.is_pending() {
            return false;
        }
        let score = self.counters().fragmentation_score(node);
        if score <= high_pct {
            return false;
        }
        if state.kcompactd.skip_deferred_check() {
            return false;
        }
        for zone in self.populated_zones(node) {
            state.compact.count_proactive_run();
            self.compact_zone(zone, CompactGoal::Score { low_pct }, CompactMode::Sync, true);
        }
        state.kcompactd.proactive_pass_done(self.counters().fragmentation_score(node) < score);
        true
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;
    use crate::allocator::{Migrate, MigrateSource};
    use crate::block::Block;
    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;
    use crate::request::AllocRequest;
    use crate::sizing::Tunables;
    use crate::types::PAGEBLOCK_ORDER;

    /// A client that owns nothing it could move.
    struct Pinned;

    impl Migrate<TestPlatform> for Pinned {
        fn migrate(&self, _: &PageAllocator<TestPlatform>, _: MigrateSource, target: Block) -> Result<Block, Block> {
            Err(target)
        }
    }

    static PINNED: Pinned = Pinned;

    /// DMA and DMA32 (64 MiB, PC layout), pagesets off, min watermark 0, every other page
    /// of both zones held movable: fragmented, half free.
    fn fragmented_pc() -> (PageAllocator<TestPlatform>, Vec<Block>) {
        let policy = crate::presets::find("global-lock").unwrap().policy;
        let tunables = Tunables { min_free_kbytes: Some(0), ..Tunables::default() };
        let builder = AllocatorBuilder::pc_layout(64).policy(policy).tunables(tunables);
        let mut allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
        allocator.set_migrate_static(&PINNED);
        let mut held = Vec::new();
        for highest_zone in [ZoneType::Dma32, ZoneType::Dma] {
            let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE };
            while let Ok(block) = allocator.alloc_pages(0, request.with_highest_zone(highest_zone)) {
                held.push(block);
            }
        }
        let (odd, even): (Vec<Block>, Vec<Block>) = held.into_iter().partition(|block| block.pfn() % 2 == 1);
        allocator.free_bulk(odd).unwrap();
        (allocator, even)
    }

    /// kcompactd_do_work() compacts the zones up to the one it was woken for.
    #[test]
    fn kcompactd_compacts_only_the_zones_up_to_the_one_it_was_woken_for() {
        let (allocator, held) = fragmented_pc();
        let shifts = |allocator: &PageAllocator<TestPlatform>| -> Vec<u32> {
            allocator.zones().iter().map(|zone| zone.state().compact.defer_shift()).collect()
        };
        assert_eq!(allocator.zones().len(), 2);
        // Woken for DMA, then for every zone: the lower limit stands until the pass.
        allocator.wake_kcompactd_for(0, PAGEBLOCK_ORDER, ZoneType::Dma);
        allocator.background().wake_kcompactd(0, PAGEBLOCK_ORDER);
        assert!(allocator.run_kcompactd(0, 0).0);
        assert_eq!(shifts(&allocator), [1, 0], "only DMA ran (and, moving nothing, deferred)");
        allocator.background().wake_kcompactd(0, PAGEBLOCK_ORDER);
        assert!(allocator.run_kcompactd(0, 0).0);
        assert_eq!(shifts(&allocator), [1, 1], "DMA deferred this time; DMA32 ran");
        allocator.free_bulk(held).unwrap();
        allocator.check_invariants().unwrap();
    }

    /// kcompactd() counts the proactive deferral down only on checks that find the score
    /// above the high mark (should_proactive_compact_node() first).
    #[test]
    fn proactive_deferral_counts_only_checks_that_would_compact() {
        let (allocator, held) = fragmented_pc();
        let state = &allocator.nodes()[0];
        state.kcompactd.set_proactive_defer(3);
        let (_, high_pct) = fragmentation_score_wmarks(allocator.tunables.compaction_proactiveness);
        assert!(allocator.counters().fragmentation_score(0) > high_pct, "fragmented");
        assert!(!allocator.proactive_check(0));
        assert_eq!(state.kcompactd.proactive_defer(), 2, "a check above the mark counts");
        allocator.free_bulk(held).unwrap();
        assert!(allocator.counters().fragmentation_score(0) <= high_pct, "all free");
        assert!(!allocator.proactive_check(0));
        assert_eq!(state.kcompactd.proactive_defer(), 2, "a check below the mark does not");
    }
}
