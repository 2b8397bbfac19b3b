//! Merging on free: the buddy test, the merge loop and the one path by which any block
//! returns to the buddy.

use super::LockedZone;
use crate::frame::{FrameInfo, FrameState};
use crate::list::RecordCost;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, MAX_ORDER, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

impl<P: Platform> LockedZone<'_, P> {
    /// True if `pfn` heads a free block of exactly `order` (mirrors page_is_buddy()).
    #[inline]
    fn is_free_buddy(&self, pfn: Pfn, order: u8) -> bool {
        if !self.mem.contains(pfn) {
            return false;
        }
        self.mem.records(self.platform).touch(self.mem.index(pfn), false);
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

    /// Frees an interior block into the buddy, merging with free buddies of the same order
    /// while allowed, and lists the result under `migratetype`, the type of its pageblock
    /// (mirrors __free_one_page()).
    ///
    /// With fullest-first, the pageblock free counts change once, by the freed pages: a merge
    /// within a pageblock leaves its count as it is, and a buddy of pageblock order or more
    /// is wholly free pageblocks already (one bucket update where the merge steps made one each).
    pub(crate) fn free_one(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        debug_assert_eq!(pfn & ((1 << order) - 1), 0, "misaligned block");
        debug_assert_eq!(self.mem.frame(pfn).info().state(), FrameState::Interior);
        let free_before = self.area.free_pages + self.area.free_isolated_pages;
        let (merged_pfn, merged_order) = self.merge_and_list(pfn, order, migratetype);
        if self.mem.pageblock_free.is_tracked() {
            self.account_pageblock_freed(pfn, order, merged_pfn, merged_order);
        }
        // Each merge unlisted a buddy that the merged block lists again: the free pages
        // grew by the freed block's alone.
        debug_assert!(
            self.area.free_pages + self.area.free_isolated_pages == free_before + (1 << order),
            "free pages grew by more or less than the block"
        );
        debug_assert!(
            merged_pfn <= pfn && pfn + (1 << order) <= merged_pfn + (1 << merged_order),
            "merged block misses the freed one"
        );
        debug_assert!(self.mem.frame(merged_pfn).info().is_free_head_of_order(merged_order), "merged head not listed");
    }

    /// The merge loop of [`Self::free_one`], without the pageblock free counts; returns the
    /// block listed.
    #[inline]
    fn merge_and_list(&mut self, mut pfn: Pfn, mut order: u8, migratetype: MigrateType) -> (Pfn, u8) {
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
            // The loop's invariant: the block is aligned to its order, so the pair is too.
            debug_assert!((pfn | buddy_pfn) & ((1 << order) - 1) == 0, "merging a misaligned block");
            self.unlist_free(buddy_pfn, order, buddy_type);
            if buddy_type != migratetype {
                // Only whole pageblocks differ here; re-type them so the merged block's
                // pageblocks all match the list it goes on.
                self.set_pageblock_range_type(buddy_pfn, order, migratetype);
            }
            pfn &= buddy_pfn;
            order += 1;
        }
        let to_tail = self.area.merge_likely_to_tail && self.merge_likely(pfn, order);
        self.list_free(pfn, order, migratetype, to_tail);
        (pfn, order)
    }

    /// Returns a block to the buddy, the one path for frees and pageset drains: the head
    /// leaves state `from` (PCP head for drains, interior for a claimed free), merges under
    /// its pageblock's type read now under the lock, and counts as freed to the zone.
    #[inline]
    pub(crate) fn release(&mut self, pfn: Pfn, order: u8, from: FrameState) {
        debug_assert!(matches!(from, FrameState::PcpHead | FrameState::Parked | FrameState::Interior));
        if from != FrameState::Interior {
            self.mem.frame(pfn).change(&[from], FrameInfo::INTERIOR);
        }
        self.free_by_pageblock_type(pfn, order);
        self.area.counters.freed_to_zone_pages += 1 << order;
    }

    /// Frees an interior block under the type of its pageblock, read now under the lock (a
    /// claim may have re-typed it since the block was handed out). A block over more than
    /// one pageblock whose types differ (one isolated while the block was in flight, a
    /// claimed free that the isolation could not see) is freed a pageblock at a time, each
    /// part under its own type; merging rejoins the parts whose types allow it (mirrors
    /// split_large_buddy()).
    #[inline]
    pub(crate) fn free_by_pageblock_type(&mut self, pfn: Pfn, order: u8) {
        if order > PAGEBLOCK_ORDER && !self.one_pageblock_type(pfn, order) {
            return self.free_pageblock_parts(pfn, order);
        }
        let migratetype = self.mem.pageblock_type(pfn);
        self.free_one(pfn, order, migratetype);
    }

    /// The split half of [`Self::free_by_pageblock_type`]: each pageblock of the block
    /// freed under its own type.
    #[cold]
    #[inline(never)]
    fn free_pageblock_parts(&mut self, pfn: Pfn, order: u8) {
        debug_assert!(
            order > PAGEBLOCK_ORDER && order <= MAX_ORDER && pfn & ((1 << order) - 1) == 0,
            "not whole pageblocks"
        );
        for part in (pfn..pfn + (1 << order)).step_by(PAGEBLOCK_PAGES as usize) {
            let migratetype = self.mem.pageblock_type(part);
            self.free_one(part, PAGEBLOCK_ORDER, migratetype);
        }
    }

    /// Whether every pageblock of the block of `order` (above pageblock order) at `pfn` has
    /// the first one's type.
    fn one_pageblock_type(&self, pfn: Pfn, order: u8) -> bool {
        debug_assert!(order > PAGEBLOCK_ORDER);
        let first = self.mem.pageblock_type(pfn);
        (1..1u64 << (order - PAGEBLOCK_ORDER)).all(|at| self.mem.pageblock_type(pfn + (at << PAGEBLOCK_ORDER)) == first)
    }
}
