//! Buddy operations on one zone with its lock held: free-list add/remove, split (expand),
//! merge (free_one), smallest-first removal, and moving free blocks between types.

use core::sync::atomic::Ordering::Relaxed;

use crate::frame::{FrameInfo, FrameState};
use crate::free_area::FreeArea;
use crate::list::FrameList;
use crate::platform::{Platform, SharedLine};
use crate::types::{MigrateType, Pfn, MAX_ORDER, NR_ORDERS, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};
use crate::zone::ZoneMem;

/// A zone with its lock held.
pub struct BuddyCtx<'a, P: Platform> {
    pub(crate) mem: &'a ZoneMem,
    pub(crate) area: &'a mut FreeArea,
    pub(crate) platform: &'a P,
    pub(crate) zone_index: u16,
}

/// The lockless free-page mirror is published once per lock hold, not per list operation:
/// other CPUs read it on every allocation (watermark checks), so a store per operation would
/// bounce its cache line on every page of a refill or drain (the reason Linux keeps
/// NR_FREE_PAGES in per-CPU diffs).
impl<P: Platform> Drop for BuddyCtx<'_, P> {
    fn drop(&mut self) {
        // Writers hold the zone lock, so plain stores keep the summary exact; stores only
        // when something changed keep the line shared in the readers' caches.
        let summary = &self.mem.summary;
        let mut wrote = false;
        if summary.free_pages.load(Relaxed) != self.area.free_pages {
            summary.free_pages.store(self.area.free_pages, Relaxed);
            wrote = true;
        }
        if summary.free_highatomic_pages.load(Relaxed) != self.area.free_highatomic_pages {
            summary.free_highatomic_pages.store(self.area.free_highatomic_pages, Relaxed);
            wrote = true;
        }
        for (published, &mask) in summary.nonempty_types.iter().zip(&self.area.nonempty_types) {
            if published.load(Relaxed) != mask {
                published.store(mask, Relaxed);
                wrote = true;
            }
        }
        if wrote {
            self.platform.touch_shared(SharedLine::ZoneCounters(self.zone_index), true);
        }
    }
}

impl<P: Platform> BuddyCtx<'_, P> {
    #[inline]
    fn publish_counts(&mut self, order: u8, migratetype: MigrateType) {
        let bit = 1u8 << migratetype.index();
        let mask = &mut self.area.nonempty_types[order as usize];
        if self.area.lists[order as usize][migratetype.index()].is_empty() {
            *mask &= !bit;
        } else {
            *mask |= bit;
        }
        self.platform.touch_shared(SharedLine::FreeList { zone: self.zone_index, order }, true);
    }

    /// Reports a read or write of a frame's metadata record to the platform.
    #[inline(always)]
    fn touch_frame(&self, index: u32, write: bool) {
        self.platform.touch_shared(SharedLine::frame_meta(self.zone_index, index), write);
    }

    /// Puts a free block on its list and accounts it (mirrors __add_to_free_list()).
    #[inline]
    pub(crate) fn add_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType, to_tail: bool) {
        let index = self.mem.index(pfn);
        self.touch_frame(index, true);
        self.mem.frames[index as usize].set_info(FrameInfo::new(FrameState::FreeHead, order, migratetype));
        let list = &self.area.lists[order as usize][migratetype.index()];
        // Linking in rewrites the link of the block at that end of the list.
        if let Some(end) = if to_tail { list.tail() } else { list.head() } {
            self.touch_frame(end, true);
        }
        let list = &mut self.area.lists[order as usize][migratetype.index()];
        if to_tail {
            list.push_tail(&self.mem.frames, index);
        } else {
            list.push_head(&self.mem.frames, index);
        }
        self.area.nr_free[order as usize][migratetype.index()] += 1;
        self.area.free_pages += 1 << order;
        if migratetype == MigrateType::HighAtomic {
            self.area.free_highatomic_pages += 1 << order;
        }
        self.publish_counts(order, migratetype);
    }

    /// Takes a free block off its list; the caller gives the frame its next state
    /// (mirrors __del_page_from_free_list()).
    #[inline]
    pub(crate) fn del_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        let index = self.mem.index(pfn);
        self.touch_frame(index, true);
        debug_assert!(self.mem.frames[index as usize].info().is_free_head_of_order(order));
        debug_assert_eq!(self.mem.frames[index as usize].info().migratetype(), migratetype);
        for neighbour in FrameList::neighbours(&self.mem.frames, index).into_iter().flatten() {
            self.touch_frame(neighbour, true);
        }
        self.area.lists[order as usize][migratetype.index()].remove(&self.mem.frames, index);
        self.area.nr_free[order as usize][migratetype.index()] -= 1;
        self.area.free_pages -= 1 << order;
        if migratetype == MigrateType::HighAtomic {
            self.area.free_highatomic_pages -= 1 << order;
        }
        self.publish_counts(order, migratetype);
    }

    /// Moves a free block to another type's list, at the tail (mirrors move_to_free_list()).
    pub(crate) fn move_free(&mut self, pfn: Pfn, order: u8, from: MigrateType, to: MigrateType) {
        self.del_free(pfn, order, from);
        self.add_free(pfn, order, to, true);
    }

    /// Splits a block of order `high` at `pfn` down to `low`, returning the upper halves to
    /// the free lists of `migratetype`; returns the pages put back (mirrors expand()).
    #[inline]
    pub(crate) fn expand(&mut self, pfn: Pfn, low: u8, high: u8, migratetype: MigrateType) -> u64 {
        let mut order = high;
        let mut returned_pages = 0;
        while order > low {
            order -= 1;
            let upper_half = pfn + (1 << order);
            self.add_free(upper_half, order, migratetype, false);
            returned_pages += 1 << order;
        }
        returned_pages
    }

    /// Takes the smallest free block of `migratetype` that fits `order`, splits it and
    /// returns the head pfn, not yet marked allocated (mirrors __rmqueue_smallest()).
    #[inline]
    pub(crate) fn take_smallest(&mut self, order: u8, migratetype: MigrateType) -> Option<Pfn> {
        for current in order as usize..NR_ORDERS {
            if let Some(index) = self.area.lists[current][migratetype.index()].head() {
                let pfn = self.mem.pfn(index);
                self.del_free(pfn, current as u8, migratetype);
                self.expand(pfn, order, current as u8, migratetype);
                return Some(pfn);
            }
        }
        None
    }

    /// True if `pfn` heads a free block of exactly `order` (mirrors page_is_buddy()).
    #[inline]
    fn is_free_buddy(&self, pfn: Pfn, order: u8) -> bool {
        if !self.mem.contains(pfn) {
            return false;
        }
        self.touch_frame(self.mem.index(pfn), false);
        self.mem.frame(pfn).info().is_free_head_of_order(order)
    }

    /// Merging is likely to continue if the block's buddy one order up is free: then the
    /// merged block goes to the list tail so it is not reallocated before that merge
    /// (mirrors buddy_merge_likely()).
    fn merge_likely(&self, pfn: Pfn, order: u8) -> bool {
        if order >= MAX_ORDER - 1 {
            return false;
        }
        let higher_pfn = pfn & !((2u64 << order) - 1);
        self.is_free_buddy(higher_pfn ^ (2 << order), order + 1)
    }

    /// Frees a block into the buddy, merging with free buddies of the same order while
    /// allowed, and lists the result under `migratetype`, the type of its pageblock
    /// (mirrors __free_one_page()).
    pub(crate) fn free_one(&mut self, mut pfn: Pfn, mut order: u8, migratetype: MigrateType) {
        debug_assert_eq!(pfn & ((1 << order) - 1), 0, "misaligned block");
        while order < MAX_ORDER {
            let buddy_pfn = pfn ^ (1 << order);
            if !self.is_free_buddy(buddy_pfn, order) {
                break;
            }
            let buddy_type = self.mem.frame(buddy_pfn).info().migratetype();
            if order >= PAGEBLOCK_ORDER
                && buddy_type != migratetype
                && (!migratetype.is_mergeable() || !buddy_type.is_mergeable())
            {
                break;
            }
            self.del_free(buddy_pfn, order, buddy_type);
            if buddy_type != migratetype {
                // Only whole pageblocks differ here; re-type them so the merged block's
                // pageblocks all match the list it goes on.
                self.set_pageblock_range_type(buddy_pfn, order, migratetype);
            }
            self.mem.frame(buddy_pfn).set_info(FrameInfo::INTERIOR);
            self.mem.frame(pfn).set_info(FrameInfo::INTERIOR);
            pfn &= buddy_pfn;
            order += 1;
        }
        let to_tail = self.merge_likely(pfn, order);
        self.add_free(pfn, order, migratetype, to_tail);
    }

    /// Sets the type of every pageblock in a block of `order` >= pageblock order, or of the
    /// one pageblock holding a smaller block (mirrors change_pageblock_range()).
    pub(crate) fn set_pageblock_range_type(&self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        let pages = 1u64 << order.max(PAGEBLOCK_ORDER);
        let start = pfn & !(pages - 1);
        let mut block = start;
        while block < start + pages {
            if self.mem.contains(block) || self.mem.contains(block + PAGEBLOCK_PAGES - 1) {
                self.mem.set_pageblock_type(block.max(self.mem.start_pfn), migratetype);
            }
            block += PAGEBLOCK_PAGES;
        }
    }

    /// Bounds of the pageblock holding `pfn` if it lies wholly in the zone (mirrors the
    /// boundary test of prep_move_freepages_block()).
    pub(crate) fn whole_pageblock(&self, pfn: Pfn) -> Option<(Pfn, Pfn)> {
        let start = pfn & !(PAGEBLOCK_PAGES - 1);
        let end = start + PAGEBLOCK_PAGES;
        (start >= self.mem.start_pfn && end <= self.mem.end_pfn).then_some((start, end))
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
                FrameState::PcpHead => pfn += block_pages,
                FrameState::Interior | FrameState::Reserved => pfn += 1,
            }
        }
        (free_pages, movable_pages)
    }

    /// Moves every free block in the pageblock `[start, end)` from `from`'s lists to `to`'s
    /// and re-types the pageblock; returns pages moved (mirrors __move_freepages_block()).
    pub(crate) fn move_pageblock(&mut self, start: Pfn, end: Pfn, from: MigrateType, to: MigrateType) -> u64 {
        let mut moved_pages = 0;
        let mut pfn = start;
        while pfn < end {
            let info = self.mem.frame(pfn).info();
            if info.state() == FrameState::FreeHead {
                debug_assert!(info.order() < PAGEBLOCK_ORDER || pfn == start);
                debug_assert_eq!(info.migratetype(), from);
                self.move_free(pfn, info.order(), from, to);
                moved_pages += 1 << info.order();
                pfn += 1 << info.order();
            } else if matches!(info.state(), FrameState::AllocHead | FrameState::PcpHead) {
                pfn += 1 << info.order();
            } else {
                pfn += 1;
            }
        }
        self.mem.set_pageblock_type(start, to);
        moved_pages
    }
}
