//! Parked frees leaving for the buddy (beyond Linux, `FragBeyondLinux::parked_frees`). A
//! parked block is free, on no list, and counted in its pageblock's parked pages; a
//! collection walks the pageblock's state words in address order and releases each parked
//! block as part of a run, so the pageblock's blocks merge as its largest aligned pieces.

use core::sync::atomic::Ordering::SeqCst;

use super::{LockedZone, PendingRun};
use crate::frame::{FrameInfo, FrameState};
use crate::fullness::PageblockCounts;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

/// A pageblock with fewer free and parked pages than this is mostly in use: its parked
/// pages are the first to be handed out again (a quarter pageblock, the `pagealloc`
/// preset's threshold for frees that skip the pageset).
const REUSE_BELOW_PAGES: u64 = PAGEBLOCK_PAGES / 4;

impl<P: Platform> LockedZone<'_, P> {
    /// Gives the parked blocks of pageblock `slot` to the buddy; returns their pages. A
    /// free may be parking a block here meanwhile: a word already parked is taken (its
    /// count may follow a moment later, which the count's wrap-around absorbs), one not yet
    /// parked stays, counted, for a later collection.
    pub(crate) fn collect_parked_pageblock(&mut self, slot: usize) -> u64 {
        let mem = self.mem;
        let block_start = mem.pageblock_start(slot);
        let (start, end) = (block_start.max(mem.start_pfn), (block_start + PAGEBLOCK_PAGES).min(mem.end_pfn()));
        debug_assert!(start < end, "pageblock outside the zone");
        let mut run = PendingRun::new(true);
        let mut pages = 0;
        let mut pfn = start;
        while pfn < end {
            let info = mem.frame(pfn).info();
            let block_pages = 1u64 << info.order();
            match info.state() {
                FrameState::Parked => {
                    debug_assert!(pfn + block_pages <= end, "parked block past its pageblock");
                    self.release_into_run(&mut run, pfn, info.order(), FrameState::Parked);
                    pages += block_pages;
                    pfn += block_pages;
                }
                FrameState::FreeHead | FrameState::AllocHead | FrameState::PcpHead => pfn += block_pages,
                FrameState::Interior | FrameState::Reserved | FrameState::Hole => pfn += 1,
            }
        }
        self.release_run(&mut run);
        assert!(pages <= PAGEBLOCK_PAGES, "collected {pages} pages from pageblock {slot}");
        if pages != 0 {
            mem.pageblock_free.unpark(slot, pages);
            // The releases filed the pageblock with these pages counted twice, freed and
            // still parked.
            self.file_parked_pageblock(slot);
            // A park counts nothing shared; its pages count as freed here.
            self.state.vmstat.count_pgfree(pages);
        }
        pages
    }

    /// For a pageblock-order take: a pageblock of `migratetype` parked whole (freed at
    /// pageblock order), handed out as it is, its head interior and off every list, from
    /// where the last such take left off. It was never in the buddy's free count, so only
    /// its parked count and the freed pages' count change.
    pub(crate) fn take_parked_pageblock(&mut self, migratetype: MigrateType) -> Option<Pfn> {
        // Read first: without parked frees nothing ever sets it, and a read costs no store.
        if !self.mem.parked_whole_hint.load(SeqCst) || !self.mem.parked_whole_hint.swap(false, SeqCst) {
            return None;
        }
        let (mem, slots) = (self.mem, self.mem.pageblock_count());
        let first = self.area.parked_scan_from % slots.max(1);
        let mut other_types = false;
        for slot in (first..slots).chain(0..first) {
            if mem.pageblock_free.parked(slot) != PAGEBLOCK_PAGES {
                continue;
            }
            let pfn = mem.pageblock_start(slot);
            let info = if mem.contains(pfn) { mem.frame(pfn).info() } else { continue };
            if info.state() != FrameState::Parked || info.order() != PAGEBLOCK_ORDER {
                continue;
            }
            if mem.pageblock_type(pfn) != migratetype {
                other_types = true;
                continue;
            }
            // Parked whole: nothing of it is in the buddy.
            debug_assert_eq!(mem.pageblock_free.get(slot), 0, "pageblock {slot} parked whole and free");
            mem.frame(pfn).change(&[FrameState::Parked], FrameInfo::INTERIOR);
            // No check of the count left: a count wrapped below 0 (a collection overtook a
            // park) also reads as a full pageblock, so it may wrap again here for a while.
            mem.pageblock_free.unpark(slot, PAGEBLOCK_PAGES);
            self.state.vmstat.count_pgfree(PAGEBLOCK_PAGES);
            self.area.parked_scan_from = slot + 1;
            // Others may follow this one.
            mem.parked_whole_hint.store(true, SeqCst);
            return Some(pfn);
        }
        if other_types {
            mem.parked_whole_hint.store(true, SeqCst);
        }
        None
    }

    /// Files pageblock `slot` in the fullness buckets by its free and parked pages (a park
    /// moves no bucket); whether it moved.
    pub(crate) fn file_parked_pageblock(&mut self, slot: usize) -> bool {
        let counts = &self.mem.pageblock_free;
        let filed = counts.get(slot) + counts.parked(slot);
        let Some(buckets) = self.area.fullness.as_mut() else { return false };
        let before = buckets.class_of(slot);
        buckets.update(slot, filed);
        buckets.class_of(slot) != before
    }

    /// Gives every parked block of the zone to the buddy (memory is wanted: a request's
    /// slow path, a drain, kswapd); returns their pages. The hint is cleared before the
    /// walk, so a park that follows sets it again.
    pub(crate) fn collect_parked(&mut self) -> u64 {
        if !self.mem.parked_hint.swap(false, SeqCst) {
            return 0;
        }
        self.collect_parked_where(|_| true)
    }

    /// For an order-0 take that found no partly free pageblock: gives the buddy the parked
    /// blocks of the pageblocks mostly in use (free and parked pages below a quarter
    /// pageblock), where fullest-first would take from first; if there are none, every
    /// parked block, before the free lists split a wholly free pageblock. Returns the pages.
    pub(crate) fn collect_parked_for_take(&mut self) -> u64 {
        if !self.mem.parked_hint.load(SeqCst) {
            return 0;
        }
        let fuller = self.collect_parked_where(|counts| counts.free_pages + counts.parked_pages < REUSE_BELOW_PAGES);
        if fuller != 0 {
            return fuller;
        }
        self.collect_parked()
    }

    /// Collects the pageblocks with parked pages whose counts `wanted` takes.
    fn collect_parked_where(&mut self, wanted: impl Fn(PageblockCounts) -> bool) -> u64 {
        let counts = &self.mem.pageblock_free;
        let mut pages = 0;
        for slot in 0..self.mem.pageblock_count() {
            let parked_pages = counts.parked(slot);
            if parked_pages != 0 && wanted(PageblockCounts { free_pages: counts.get(slot), parked_pages }) {
                pages += self.collect_parked_pageblock(slot);
            }
        }
        pages
    }
}
