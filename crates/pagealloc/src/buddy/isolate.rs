//! Pageblock isolation under the zone lock, for taking a range out of use (memory offline,
//! contiguous allocations): an isolated pageblock's free blocks sit on the ISOLATE lists,
//! which no request takes from, and every block freed into it joins them (`release` reads
//! the pageblock type). Ranges are whole pageblocks: a free block larger than a pageblock
//! that straddles an edge is split there first, and ISOLATE blocks never merge with others
//! at pageblock order, so every later merge stays inside the range (mirrors
//! set_migratetype_isolate(), split_large_buddy(), unset_migratetype_isolate() and
//! test_pages_isolated()).

use super::LockedZone;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, MAX_ORDER, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

/// The unit ranges are isolated in: a pageblock.
pub(crate) const RANGE_UNIT_PAGES: u64 = PAGEBLOCK_PAGES;

impl<P: Platform> LockedZone<'_, P> {
    /// The first pageblock in `[start, end)` that may not be isolated: a reserve
    /// (HIGHATOMIC, CMA) or one already isolated by another operation.
    pub(crate) fn unisolatable_pageblock(&self, start: Pfn, end: Pfn) -> Option<Pfn> {
        (start..end).step_by(PAGEBLOCK_PAGES as usize).find(|&block| {
            matches!(self.mem.pageblock_type(block), MigrateType::HighAtomic | MigrateType::Cma | MigrateType::Isolate)
        })
    }

    /// The head of an allocated or pageset block larger than a pageblock that crosses an
    /// edge of `[start, end)`. Its free would list pages on both sides under one type (and
    /// a take of the range would then claim frames outside it), so such a range is not
    /// isolated; checked under the lock that isolates, after which no new one can appear
    /// (free straddlers are split, and isolated blocks are never handed out). A block in
    /// flight, whose free was claimed before this lock, is not seen here: its release frees
    /// it a pageblock at a time, each part under its own type.
    pub(crate) fn straddling_block(&self, start: Pfn, end: Pfn) -> Option<Pfn> {
        [start, end].into_iter().find_map(|edge| {
            let head = edge & !((1u64 << MAX_ORDER) - 1);
            if head == edge || !self.mem.contains(head) {
                return None;
            }
            let info = self.mem.frame(head).info();
            let held = matches!(info.state(), FrameState::AllocHead | FrameState::PcpHead);
            (held && head + (1u64 << info.order()) > edge).then_some(head)
        })
    }

    /// Isolates every pageblock of `[start, end)`: moves their free blocks to the ISOLATE
    /// lists and re-types them. The caller checked [`Self::unisolatable_pageblock`].
    pub(crate) fn isolate_range(&mut self, start: Pfn, end: Pfn) {
        debug_assert!(self.range_is_units(start, end));
        self.split_straddling(start);
        self.split_straddling(end);
        for block in (start..end).step_by(PAGEBLOCK_PAGES as usize) {
            debug_assert_ne!(self.mem.pageblock_type(block), MigrateType::Isolate);
            self.move_pageblock_free_to(block, block + PAGEBLOCK_PAGES, MigrateType::Isolate);
            self.mem.set_pageblock_type(block, MigrateType::Isolate);
        }
        debug_assert!(self.unisolatable_pageblock(start, end) == Some(start), "range not isolated");
    }

    /// Splits a free block of more than a pageblock that holds `edge` in its middle into
    /// pageblock-sized blocks on the same list.
    fn split_straddling(&mut self, edge: Pfn) {
        let head = edge & !((1u64 << MAX_ORDER) - 1);
        if head == edge || !self.mem.contains(head) {
            return;
        }
        let info = self.mem.frame(head).info();
        if info.state() != FrameState::FreeHead || info.order() <= PAGEBLOCK_ORDER {
            return;
        }
        debug_assert_eq!(info.order(), MAX_ORDER);
        self.del_free(head, info.order(), info.migratetype());
        for block in (head..head + (1u64 << info.order())).step_by(PAGEBLOCK_PAGES as usize) {
            self.add_free(block, PAGEBLOCK_ORDER, info.migratetype(), true);
        }
        debug_assert!(self.mem.frame(edge).info().is_free_head_of_order(PAGEBLOCK_ORDER), "edge not split");
    }

    /// Undoes [`Self::isolate_range`]: the pageblocks become MOVABLE, as Linux's callers
    /// ask, and their free blocks go to the MOVABLE lists, merging across the range's
    /// edges where the buddies outside are free too.
    pub(crate) fn unisolate_range(&mut self, start: Pfn, end: Pfn) {
        debug_assert!(self.range_is_units(start, end));
        debug_assert!(self.mem.pageblock_type(start) == MigrateType::Isolate, "unisolating a range not isolated");
        for unit in (start..end).step_by(RANGE_UNIT_PAGES as usize) {
            self.mem.set_pageblock_type(unit, MigrateType::Movable);
        }
        let mut pfn = start;
        while pfn < end {
            let info = self.mem.frame(pfn).info();
            if info.state() == FrameState::FreeHead && info.migratetype() == MigrateType::Isolate {
                self.del_free(pfn, info.order(), MigrateType::Isolate);
                self.free_one(pfn, info.order(), MigrateType::Movable);
            }
            // A block merged across into what is still ahead leaves interior frames: step.
            pfn += if matches!(info.state(), FrameState::Interior | FrameState::Reserved | FrameState::Hole) {
                1
            } else {
                1 << info.order()
            };
        }
    }

    /// The first frame of `[start, end)` that is not free on an ISOLATE list (an allocated
    /// or pageset block, or a hole): `None` once the whole range is isolated free memory.
    pub(crate) fn first_unisolated(&self, start: Pfn, end: Pfn) -> Option<Pfn> {
        let mut pfn = start;
        while pfn < end {
            let info = self.mem.frame(pfn).info();
            let isolated = info.state() == FrameState::FreeHead && info.migratetype() == MigrateType::Isolate;
            if !isolated || pfn + (1 << info.order()) > end {
                return Some(pfn);
            }
            pfn += 1 << info.order();
        }
        None
    }

    /// Takes every free block of the isolated range `[start, end)` off the ISOLATE lists;
    /// their frames are interior afterwards. The caller saw [`Self::first_unisolated`]
    /// return `None` under this lock hold.
    pub(crate) fn take_isolated_range(&mut self, start: Pfn, end: Pfn) {
        #[cfg(debug_assertions)]
        let isolated_before = self.area.free_isolated_pages;
        let mut pfn = start;
        while pfn < end {
            let info = self.mem.frame(pfn).info();
            assert!(info.state() == FrameState::FreeHead && info.migratetype() == MigrateType::Isolate);
            self.del_free(pfn, info.order(), MigrateType::Isolate);
            pfn += 1 << info.order();
        }
        // The range was isolated free memory, in blocks that end inside it.
        debug_assert!(pfn == end, "a block ran past the range");
        #[cfg(debug_assertions)]
        debug_assert!(isolated_before - self.area.free_isolated_pages == end - start, "isolated pages miscounted");
    }

    /// Turns the interior frames of `[start, end)` into holes (offline memory).
    pub(crate) fn retire_range(&self, start: Pfn, end: Pfn) {
        for pfn in start..end {
            self.mem.frame(pfn).change(&[FrameState::Interior], FrameInfo::HOLE);
        }
    }

    /// Brings the hole frames of `[start, end)` into the buddy as free MOVABLE pageblocks,
    /// merging (online memory, mirrors online_pages()'s frees). The caller checked that
    /// every frame is a hole.
    pub(crate) fn admit_range(&mut self, start: Pfn, end: Pfn) {
        debug_assert!(self.range_is_units(start, end));
        for unit in (start..end).step_by(RANGE_UNIT_PAGES as usize) {
            self.mem.set_pageblock_type(unit, MigrateType::Movable);
            for pfn in unit..unit + RANGE_UNIT_PAGES {
                self.mem.frame(pfn).change(&[FrameState::Hole], FrameInfo::INTERIOR);
            }
            self.free_one(unit, PAGEBLOCK_ORDER, MigrateType::Movable);
        }
    }

    fn range_is_units(&self, start: Pfn, end: Pfn) -> bool {
        start < end
            && start.is_multiple_of(RANGE_UNIT_PAGES)
            && end.is_multiple_of(RANGE_UNIT_PAGES)
            && self.mem.contains(start)
            && self.mem.contains(end - 1)
    }
}

#[cfg(test)]
mod tests {
    use crate::builder::AllocatorBuilder;
    use crate::frame::FrameState;
    use crate::platform::TestPlatform;
    use crate::types::{MAX_ORDER, PAGEBLOCK_PAGES};
    use crate::{AllocRequest, PageAllocator, ZoneType};

    /// A free of a block larger than a pageblock, claimed (its head interior, as a freeing
    /// CPU leaves it before taking the zone lock) while its upper pageblock is isolated:
    /// the isolation cannot see the block, so the free must list each pageblock's part on
    /// that pageblock's own type (split_large_buddy()).
    #[test]
    fn a_claimed_free_straddling_an_isolation_lists_each_part_by_its_pageblock() {
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 64 * PAGEBLOCK_PAGES);
        let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
        let block = allocator.alloc_pages(MAX_ORDER, AllocRequest::KERNEL).unwrap();
        let (pfn, zone) = (block.pfn(), &allocator.zones()[0]);
        let frame = zone.mem().frame(pfn);
        frame.transition(frame.info(), frame.info().freed()).unwrap();
        let upper = pfn + PAGEBLOCK_PAGES..pfn + 2 * PAGEBLOCK_PAGES;
        {
            let mut locked = zone.buddy(allocator.platform()).lock();
            assert_eq!(locked.straddling_block(upper.start, upper.end), None, "the claimed head is not held");
            locked.isolate_range(upper.start, upper.end);
            locked.release(pfn, MAX_ORDER, FrameState::Interior);
            assert_eq!(locked.first_unisolated(upper.start, upper.end), None, "the upper part is isolated free memory");
        }
        allocator.check_invariants().unwrap();
        zone.buddy(allocator.platform()).lock().unisolate_range(upper.start, upper.end);
        allocator.check_invariants().unwrap();
        assert_eq!(allocator.counters().buddy_free_pages(), allocator.counters().managed_pages());
    }
}
