//! A zone's free lists under its lock: a block put on or taken off its list with its
//! accounting (mirrors __add_to_free_list(), __del_page_from_free_list() and
//! account_freepages()), moved between types, split (expand()) and taken smallest first
//! (__rmqueue_smallest()).

use super::LockedZone;
use crate::frame::{FrameInfo, FrameState};
use crate::list::OwnRecord;
use crate::platform::{Platform, SharedLine};
use crate::types::{MigrateType, Pfn, MAX_ORDER, NR_ORDERS};

impl<P: Platform> LockedZone<'_, P> {
    #[inline]
    fn publish_counts(&mut self, order: u8, migratetype: MigrateType) {
        let bit = 1u8 << migratetype.index();
        let area = &mut *self.area;
        let mask = &mut area.nonempty_types[order as usize];
        debug_assert!(
            area.lists[order as usize][migratetype.index()].is_empty()
                == (area.nr_free[order as usize][migratetype.index()] == 0),
            "nr_free disagrees with the list"
        );
        if area.lists[order as usize][migratetype.index()].is_empty() {
            *mask &= !bit;
        } else {
            *mask |= bit;
        }
        self.platform.touch_shared(SharedLine::FreeList { zone: self.mem.zone_index, order }, true);
    }

    /// Puts a free block on its list and accounts it (mirrors __add_to_free_list()).
    #[inline]
    pub(crate) fn add_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType, to_tail: bool) {
        self.list_free(pfn, order, migratetype, to_tail);
        if self.mem.pageblock_free.is_tracked() {
            self.account_pageblock_free(pfn, order, true);
        }
    }

    /// [`Self::add_free`] but for the pageblock free counts, which the caller keeps.
    #[inline]
    pub(super) fn list_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType, to_tail: bool) {
        debug_assert!(order <= MAX_ORDER && pfn & ((1 << order) - 1) == 0, "block {pfn:#x} of order {order}");
        debug_assert!(self.mem.contains(pfn + (1 << order) - 1), "free block past the zone");
        #[cfg(debug_assertions)]
        let before = self.debug_free_counts(order, migratetype);
        let index = self.mem.index(pfn);
        self.mem.frames[index as usize]
            .change(&[FrameState::Interior], FrameInfo::new(FrameState::FreeHead, order, migratetype));
        let records = self.mem.records(self.platform);
        let list = &mut self.area.lists[order as usize][migratetype.index()];
        if to_tail {
            list.push_tail(&self.mem.links.view(), index, OwnRecord::Charge, &records);
        } else {
            list.push_head(&self.mem.links.view(), index, OwnRecord::Charge, &records);
        }
        self.area.nr_free[order as usize][migratetype.index()] += 1;
        self.area.free_pages += 1 << order;
        if migratetype.index() >= MigrateType::HighAtomic.index() {
            self.account_reserved_free(order, migratetype, true);
        }
        self.publish_counts(order, migratetype);
        #[cfg(debug_assertions)]
        self.debug_assert_moved(before, order, migratetype, true);
    }

    /// Takes a free block off its list; its head becomes interior, and the caller gives it
    /// its next state (mirrors __del_page_from_free_list()).
    #[inline]
    pub(crate) fn del_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        self.unlist_free(pfn, order, migratetype);
        if self.mem.pageblock_free.is_tracked() {
            self.account_pageblock_free(pfn, order, false);
        }
    }

    /// [`Self::del_free`] but for the pageblock free counts, which the caller keeps.
    #[inline]
    pub(super) fn unlist_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        let index = self.mem.index(pfn);
        let frame = &self.mem.frames[index as usize];
        debug_assert_eq!(frame.info().without_generation(), FrameInfo::new(FrameState::FreeHead, order, migratetype));
        debug_assert!(self.area.nr_free[order as usize][migratetype.index()] > 0);
        #[cfg(debug_assertions)]
        let before = self.debug_free_counts(order, migratetype);
        let records = self.mem.records(self.platform);
        self.area.lists[order as usize][migratetype.index()].remove(
            &self.mem.links.view(),
            index,
            OwnRecord::Charge,
            &records,
        );
        frame.change(&[FrameState::FreeHead], FrameInfo::INTERIOR);
        self.area.nr_free[order as usize][migratetype.index()] -= 1;
        // Before the subtraction: an ISOLATE block's pages come back into the count first.
        if migratetype.index() >= MigrateType::HighAtomic.index() {
            self.account_reserved_free(order, migratetype, false);
        }
        self.area.free_pages -= 1 << order;
        self.publish_counts(order, migratetype);
        #[cfg(debug_assertions)]
        self.debug_assert_moved(before, order, migratetype, false);
    }

    /// Debug builds: the counts a listing moves, (blocks of the list, free pages with the
    /// isolated ones, highatomic free pages).
    #[cfg(debug_assertions)]
    fn debug_free_counts(&self, order: u8, migratetype: MigrateType) -> (u64, u64, u64) {
        let area = &*self.area;
        let blocks = area.nr_free[order as usize][migratetype.index()];
        (blocks, area.free_pages + area.free_isolated_pages, area.free_highatomic_pages)
    }

    /// Debug builds: a block of `order` listed (`added`) or unlisted moved its list's count
    /// by one and the free pages (isolated ones included) by exactly its pages, and the
    /// highatomic pages too if the list is HIGHATOMIC.
    #[cfg(debug_assertions)]
    fn debug_assert_moved(&self, before: (u64, u64, u64), order: u8, migratetype: MigrateType, added: bool) {
        let pages = 1u64 << order;
        let highatomic = if migratetype == MigrateType::HighAtomic { pages } else { 0 };
        let expected = if added {
            (before.0 + 1, before.1 + pages, before.2 + highatomic)
        } else {
            (before.0 - 1, before.1 - pages, before.2 - highatomic)
        };
        debug_assert_eq!(self.debug_free_counts(order, migratetype), expected, "order {order} {migratetype:?} block");
    }

    /// The free counts of the types ordinary requests cannot take: HIGHATOMIC pages count
    /// as free and as reserve; ISOLATE pages (a range being offlined or taken whole) are
    /// not free to anyone, so they leave NR_FREE_PAGES (mirrors account_freepages()).
    #[cold]
    #[inline(never)]
    fn account_reserved_free(&mut self, order: u8, migratetype: MigrateType, added: bool) {
        let pages = 1u64 << order;
        let area = &mut *self.area;
        match (migratetype, added) {
            (MigrateType::HighAtomic, true) => area.free_highatomic_pages += pages,
            (MigrateType::HighAtomic, false) => area.free_highatomic_pages -= pages,
            (MigrateType::Isolate, true) => {
                area.free_pages -= pages;
                area.free_isolated_pages += pages;
            }
            (MigrateType::Isolate, false) => {
                area.free_pages += pages;
                area.free_isolated_pages -= pages;
            }
            _ => {}
        }
    }

    /// Moves a free block to another type's list, at the tail (mirrors move_to_free_list()).
    pub(crate) fn move_free(&mut self, pfn: Pfn, order: u8, from: MigrateType, to: MigrateType) {
        self.del_free(pfn, order, from);
        self.add_free(pfn, order, to, true);
        debug_assert!(self.mem.frame(pfn).info().migratetype() == to, "moved block not on its new list");
    }

    /// Splits a block of order `high` at `pfn` down to `low`, returning the upper halves to
    /// the free lists of `migratetype`; returns the pages put back (mirrors expand()).
    #[inline]
    pub(crate) fn expand(&mut self, pfn: Pfn, low: u8, high: u8, migratetype: MigrateType) -> u64 {
        self.list_upper_halves(pfn, low, high, migratetype, Self::add_free)
    }

    /// The split loop: the upper half at each order from `high` down to `low`, put on its
    /// list by `list` (accounted per half, or not); returns the pages put back.
    #[inline(always)]
    fn list_upper_halves(
        &mut self,
        pfn: Pfn,
        low: u8,
        high: u8,
        migratetype: MigrateType,
        list: fn(&mut Self, Pfn, u8, MigrateType, bool),
    ) -> u64 {
        debug_assert!(low <= high && high <= MAX_ORDER);
        debug_assert!(pfn & ((1 << high) - 1) == 0, "splitting a misaligned block");
        let mut order = high;
        let mut returned_pages = 0;
        while order > low {
            order -= 1;
            list(self, pfn + (1 << order), order, migratetype, false);
            returned_pages += 1 << order;
        }
        debug_assert!(returned_pages == (1 << high) - (1 << low), "halves do not make up the split block");
        returned_pages
    }

    /// Takes the free block of `high` at `pfn` off its list and splits it down to `low`,
    /// the upper halves listed again; returns the pages put back (mirrors
    /// page_del_and_expand()). With fullest-first, the pageblock free counts change once,
    /// by the pages taken: the halves go back to the pageblocks they left.
    #[inline]
    pub(crate) fn del_and_expand(&mut self, pfn: Pfn, low: u8, high: u8, migratetype: MigrateType) -> u64 {
        self.unlist_free(pfn, high, migratetype);
        let returned_pages = self.list_upper_halves(pfn, low, high, migratetype, Self::list_free);
        if self.mem.pageblock_free.is_tracked() {
            self.account_pageblock_taken(pfn, low);
        }
        returned_pages
    }

    /// Takes the smallest free block of `migratetype` that fits `order`, splits it and
    /// returns the head pfn, interior until the caller marks it (mirrors __rmqueue_smallest()).
    #[inline]
    pub(crate) fn take_smallest(&mut self, order: u8, migratetype: MigrateType) -> Option<Pfn> {
        for current in order as usize..NR_ORDERS {
            if let Some(index) = self.area.lists[current][migratetype.index()].head() {
                let pfn = self.mem.pfn(index);
                self.del_and_expand(pfn, order, current as u8, migratetype);
                debug_assert!(self.mem.frame(pfn).info().state() == FrameState::Interior, "taken head not interior");
                return Some(pfn);
            }
        }
        None
    }
}
