//! Fullest-first placement in the buddy (beyond Linux, `FragBeyondLinux::fullest_first`): the
//! per-pageblock free counts kept with every free-list change, and the order-0 take that
//! serves from the fullest partly free pageblock of the wanted type, so emptier pageblocks
//! are left to drain and merge.

use super::LockedZone;
use crate::frame::FrameState;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, MAX_ORDER, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

/// Pageblocks an order-0 take looks at before it settles for the free lists' order: the
/// buckets hold all types, and a request of a rarer type skips the others.
const FULLEST_CANDIDATES: usize = 8;
/// Looks at the fullest candidates a take makes while parks have left them misfiled; each
/// look refiles up to [`FULLEST_CANDIDATES`] pageblocks, which stay filed until parked again.
const REFILE_LOOKS: usize = 32;

impl<P: Platform> LockedZone<'_, P> {
    /// A free block of `order` at `pfn` was added (`added`) or removed: update its
    /// pageblocks' free counts and buckets.
    #[cold]
    #[inline(never)]
    pub(super) fn account_pageblock_free(&mut self, pfn: Pfn, order: u8, added: bool) {
        debug_assert!(order <= MAX_ORDER && pfn & ((1 << order) - 1) == 0, "misaligned free block");
        let counts = &self.mem.pageblock_free;
        let first = self.mem.pageblock_index(pfn);
        let Some(buckets) = self.area.fullness.as_mut() else { return };
        if order >= PAGEBLOCK_ORDER {
            for slot in first..first + (1usize << (order - PAGEBLOCK_ORDER)) {
                // A free block over whole pageblocks leaves them as wholly free as it found them.
                debug_assert!(counts.get(slot) == if added { 0 } else { PAGEBLOCK_PAGES }, "pageblock not whole");
                let pages = if added { PAGEBLOCK_PAGES } else { 0 };
                counts.set(slot, pages);
                buckets.update(slot, pages + counts.parked(slot));
                if added {
                    buckets.freed_at(slot, 0);
                }
            }
            return;
        }
        if added {
            buckets.freed_at(first, pfn & (PAGEBLOCK_PAGES - 1));
        }
        let before = counts.get(first);
        debug_assert!(added || before >= 1 << order, "pageblock has fewer free pages than taken");
        let pages = if added { before + (1 << order) } else { before - (1 << order) };
        counts.set(first, pages);
        buckets.update(first, pages + counts.parked(first));
    }

    /// A block of `order` at `pfn` was freed and merged into the free block of `merged_order`
    /// at `merged_pfn`: its pageblocks gain its pages. Buddies merged at pageblock order or
    /// more were wholly free pageblocks, whose counts stay full.
    #[cold]
    #[inline(never)]
    pub(super) fn account_pageblock_freed(&mut self, pfn: Pfn, order: u8, merged_pfn: Pfn, merged_order: u8) {
        debug_assert!(merged_order >= order && merged_pfn <= pfn);
        debug_assert!(merged_pfn & ((1 << merged_order) - 1) == 0, "merged block misaligned");
        if order >= PAGEBLOCK_ORDER {
            return self.account_pageblock_free(pfn, order, true);
        }
        let counts = &self.mem.pageblock_free;
        let slot = self.mem.pageblock_index(pfn);
        let Some(buckets) = self.area.fullness.as_mut() else { return };
        let pages = counts.get(slot) + (1 << order);
        debug_assert!(merged_order < PAGEBLOCK_ORDER || pages == PAGEBLOCK_PAGES);
        counts.set(slot, pages);
        buckets.update(slot, pages + counts.parked(slot));
        buckets.freed_at(slot, merged_pfn.max(self.mem.pageblock_start(slot)) & (PAGEBLOCK_PAGES - 1));
    }

    /// The block of `order` at `pfn` left the buddy, split off a free block of its
    /// pageblocks whose other parts are still free: its pageblocks lose its pages.
    #[cold]
    #[inline(never)]
    pub(super) fn account_pageblock_taken(&mut self, pfn: Pfn, order: u8) {
        if order >= PAGEBLOCK_ORDER {
            return self.account_pageblock_free(pfn, order, false);
        }
        let counts = &self.mem.pageblock_free;
        let slot = self.mem.pageblock_index(pfn);
        let Some(buckets) = self.area.fullness.as_mut() else { return };
        debug_assert!(counts.get(slot) >= 1 << order, "pageblock has fewer free pages than taken");
        let pages = counts.get(slot) - (1 << order);
        counts.set(slot, pages);
        buckets.update(slot, pages + counts.parked(slot));
    }

    /// Takes order-0 pages of `migratetype` from the fullest partly free pageblock that has
    /// one: from the first free block found there, the largest aligned run of at most
    /// `max_pages` (its head, and its order), the rest of the block split back; `None`
    /// leaves the take to the free lists.
    pub(crate) fn take_fullest(&mut self, migratetype: MigrateType, max_pages: u32) -> Option<(Pfn, u8)> {
        if let Some(taken) = self.take_fullest_listed(migratetype, max_pages) {
            return Some(taken);
        }
        // No partly free pageblock to take from: before the free lists split a wholly free
        // one, the parked pages, which lie in partly used pageblocks, come back.
        if self.collect_parked_for_take() != 0 {
            return self.take_fullest_listed(migratetype, max_pages);
        }
        None
    }

    /// [`Self::take_fullest`] from the pageblocks the buckets file.
    fn take_fullest_listed(&mut self, migratetype: MigrateType, max_pages: u32) -> Option<(Pfn, u8)> {
        let (slot, (pfn, order)) = self.fullest_free_block(migratetype)?;
        if let Some(buckets) = self.area.fullness.as_mut() {
            buckets.first_free_at(slot, pfn & (PAGEBLOCK_PAGES - 1));
        }
        debug_assert!(self.mem.pageblock_index(pfn) == slot, "free block outside its candidate pageblock");
        let run_order = order.min(max_pages.max(1).ilog2() as u8);
        self.del_and_expand(pfn, run_order, order, migratetype);
        debug_assert!(1 << run_order <= max_pages.max(1), "run longer than asked");
        Some((pfn, run_order))
    }

    /// The first free block of `migratetype` in the fullest candidate pageblock that has
    /// one, with the pageblock's slot. Buckets file pageblocks by free and parked pages,
    /// and a park moves no bucket: a candidate whose parked pages file it emptier now is
    /// refiled and passed over (then the walk looks again, until a look refiles none or
    /// [`REFILE_LOOKS`] have); one still filed right
    /// gives its parked pages to the buddy first, so they are handed out before its free
    /// blocks split.
    fn fullest_free_block(&mut self, migratetype: MigrateType) -> Option<(usize, (Pfn, u8))> {
        for _ in 0..REFILE_LOOKS {
            let mut candidates = [0usize; FULLEST_CANDIDATES];
            let mut listed = 0;
            for slot in self.area.fullness.as_ref()?.fullest(FULLEST_CANDIDATES) {
                candidates[listed] = slot;
                listed += 1;
            }
            let mut refiled = false;
            for &slot in &candidates[..listed] {
                let parked = self.mem.pageblock_free.parked(slot);
                if parked != 0 && self.refile_parked(slot, parked) {
                    refiled = true;
                    continue;
                }
                let block_start = self.mem.pageblock_start(slot);
                let start = block_start.max(self.mem.start_pfn);
                if self.mem.pageblock_type(start) != migratetype {
                    continue;
                }
                if parked != 0 {
                    self.collect_parked_pageblock(slot);
                }
                let from = (block_start + self.area.fullness.as_ref()?.scan_from(slot)).max(start);
                if let Some(found) = self.first_free_in(from, migratetype) {
                    return Some((slot, found));
                }
            }
            if !refiled {
                return None;
            }
        }
        None
    }

    /// Files pageblock `slot`, with `parked` pages parked, by its free and parked pages;
    /// whether it moved. One left wholly free and parked gives them to the buddy, where it
    /// merges whole.
    fn refile_parked(&mut self, slot: usize, parked: u64) -> bool {
        if self.mem.pageblock_free.get(slot) + parked >= PAGEBLOCK_PAGES {
            self.collect_parked_pageblock(slot);
            return true;
        }
        self.file_parked_pageblock(slot)
    }

    /// The first free block on `migratetype`'s lists in the pageblock holding `start`, at or
    /// after `start`.
    fn first_free_in(&self, start: Pfn, migratetype: MigrateType) -> Option<(Pfn, u8)> {
        let end = ((start | (PAGEBLOCK_PAGES - 1)) + 1).min(self.mem.end_pfn());
        let mut pfn = start;
        while pfn < end {
            let info = self.mem.frame(pfn).info();
            match info.state() {
                FrameState::FreeHead if info.migratetype() == migratetype => return Some((pfn, info.order())),
                FrameState::FreeHead | FrameState::AllocHead | FrameState::PcpHead | FrameState::Parked => {
                    pfn += 1 << info.order()
                }
                FrameState::Interior | FrameState::Reserved | FrameState::Hole => pfn += 1,
            }
        }
        None
    }
}
