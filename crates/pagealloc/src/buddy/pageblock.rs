//! Pageblock-wide buddy operations under the zone lock: re-typing pageblocks, scanning one
//! for free and movable pages, and moving its free blocks to another type's lists.

use super::LockedZone;
use crate::frame::FrameState;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, MAX_ORDER, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

impl<P: Platform> LockedZone<'_, P> {
    /// Sets the type of every pageblock in a block of `order` >= pageblock order, or of the
    /// one pageblock holding a smaller block (mirrors change_pageblock_range()).
    pub(crate) fn set_pageblock_range_type(&self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        debug_assert!(order <= MAX_ORDER && self.mem.contains(pfn), "re-typing a block outside the zone");
        let pages = 1u64 << order.max(PAGEBLOCK_ORDER);
        let start = pfn & !(pages - 1);
        let mut block = start;
        while block < start + pages {
            if self.mem.contains(block) || self.mem.contains(block + PAGEBLOCK_PAGES - 1) {
                self.mem.set_pageblock_type(block.max(self.mem.start_pfn), migratetype);
            }
            block += PAGEBLOCK_PAGES;
        }
        debug_assert!(self.mem.pageblock_type(pfn) == migratetype, "pageblock not re-typed");
    }

    /// Bounds of the pageblock holding `pfn` if it lies wholly in the zone (mirrors the
    /// boundary test of prep_move_freepages_block()).
    pub(crate) fn whole_pageblock(&self, pfn: Pfn) -> Option<(Pfn, Pfn)> {
        let start = pfn & !(PAGEBLOCK_PAGES - 1);
        let end = start + PAGEBLOCK_PAGES;
        (start >= self.mem.start_pfn && end <= self.mem.end_pfn()).then_some((start, end))
    }

    /// Counts free pages and pages of allocated movable blocks in a pageblock (mirrors
    /// prep_move_freepages_block()'s scan).
    pub(crate) fn scan_pageblock(&self, start: Pfn, end: Pfn) -> (u64, u64) {
        let mut free_pages = 0;
        let mut movable_pages = 0;
        let mut pfn = start;
        while pfn < end {
            let info = self.mem.frame(pfn).info();
            let block_pages = 1u64 << info.order();
            match info.state() {
                FrameState::FreeHead => {
                    free_pages += block_pages;
                    pfn += block_pages;
                }
                FrameState::AllocHead => {
                    if info.migratetype() == MigrateType::Movable {
                        movable_pages += block_pages.min(end - pfn);
                    }
                    pfn += block_pages;
                }
                FrameState::PcpHead | FrameState::Parked => pfn += block_pages,
                FrameState::Interior | FrameState::Reserved | FrameState::Hole => pfn += 1,
            }
        }
        debug_assert!(free_pages + movable_pages <= PAGEBLOCK_PAGES);
        (free_pages, movable_pages)
    }

    /// Moves every free block in the pageblock `[start, end)` from `from`'s lists to `to`'s
    /// and re-types the pageblock; returns pages moved (mirrors __move_freepages_block()).
    /// Where free lists need not match pageblock types (the 2018 design), blocks on any
    /// list move.
    pub(crate) fn move_pageblock(&mut self, start: Pfn, end: Pfn, from: MigrateType, to: MigrateType) -> u64 {
        debug_assert!(!self.state.free_lists_match_pageblocks || self.mem.pageblock_type(start) == from);
        let moved_pages = self.move_pageblock_free_to(start, end, to);
        self.mem.set_pageblock_type(start, to);
        debug_assert!(self.mem.pageblock_type(end - 1) == to, "pageblock not re-typed");
        moved_pages
    }

    /// Moves every free block in the pageblock `[start, end)` to `to`'s lists, whichever
    /// list each is on, leaving the pageblock's type; returns pages moved (the 2018
    /// move_freepages_block()).
    pub(crate) fn move_pageblock_free_to(&mut self, start: Pfn, end: Pfn, to: MigrateType) -> u64 {
        debug_assert_eq!(end - start, PAGEBLOCK_PAGES);
        debug_assert!(start & (PAGEBLOCK_PAGES - 1) == 0, "pageblock misaligned");
        let mut moved_pages = 0;
        let mut pfn = start;
        while pfn < end {
            let info = self.mem.frame(pfn).info();
            if info.state() == FrameState::FreeHead {
                debug_assert!(info.order() < PAGEBLOCK_ORDER || pfn == start);
                debug_assert!(
                    !self.state.free_lists_match_pageblocks || info.migratetype() == self.mem.pageblock_type(start),
                    "free block on another type's list"
                );
                self.move_free(pfn, info.order(), info.migratetype(), to);
                moved_pages += 1 << info.order();
                pfn += 1 << info.order();
            } else if matches!(info.state(), FrameState::AllocHead | FrameState::PcpHead) {
                pfn += 1 << info.order();
            } else {
                pfn += 1;
            }
        }
        moved_pages
    }
}
