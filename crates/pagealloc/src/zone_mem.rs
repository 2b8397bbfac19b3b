//! A zone's memory as data: its frames' state words and links, the pageblock types and the lockless summary
//! of its free area. No locks here; the layers above say which lock covers which write.

use core::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

use crate::error::GrowError;
use crate::frame::{Frame, FrameLinks, FrameState};
use crate::fullness::BucketSlots;
use crate::fullness::PageblockFree;
use crate::growable::{GrowableTable, MAX_GROWTHS};
use crate::list::ZoneRecords;
use crate::meta::{MetaArena, MetaArenaFull, MetaSlice};
use crate::platform::Platform;
use crate::sync::CacheAligned;
use crate::types::{MigrateType, Pfn, NR_ORDERS, PAGEBLOCK_ORDER};

/// Memory and metadata of a zone, readable without the zone lock.
#[derive(Debug)]
pub struct ZoneMem {
    /// Global zone index: names the zone's records to the platform.
    pub(crate) zone_index: u16,
    pub(crate) start_pfn: Pfn,
    /// One past the last pfn of the span; grows with memory hot-added past it.
    end_pfn: AtomicU64,
    /// Each frame's state word (see [`Frame`]).
    pub(crate) frames: GrowableTable<Frame>,
    /// Each frame's list links, apart from its word.
    pub(crate) links: GrowableTable<FrameLinks>,
    /// Migratetype per pageblock; written under the zone lock, read locklessly on free.
    pub(crate) pageblock_types: GrowableTable<AtomicU8>,
    /// What watermark checks read without the lock, published once per lock hold.
    pub(crate) summary: CacheAligned<FreeSummary>,
    /// Free and parked pages per pageblock, tracked for fullest-first placement only
    /// (empty otherwise).
    pub(crate) pageblock_free: PageblockFree,
    /// Some pageblock may hold parked pages (`FragBeyondLinux::parked_frees`): set by the
    /// park that makes a pageblock's parked count non-zero, cleared by a collection of the
    /// zone before it looks, so a collection that finds it clear has nothing to take.
    pub(crate) parked_hint: AtomicBool,
    /// Some pageblock may be parked whole, freed at pageblock order: set by such a park,
    /// cleared by a pageblock-order take before it looks (as `parked_hint`).
    pub(crate) parked_whole_hint: AtomicBool,
}

/// Pageblock slots a span `[start, end)` touches (partial pageblocks at either edge count).
pub(crate) fn pageblock_slots(start_pfn: Pfn, end_pfn: Pfn) -> usize {
    (((end_pfn - 1) >> PAGEBLOCK_ORDER) - (start_pfn >> PAGEBLOCK_ORDER) + 1) as usize
}

/// The records a growth of a zone's span adds, made before the zone lock is taken.
#[derive(Debug)]
pub(crate) struct ZoneGrowth {
    new_end: Pfn,
    frames: MetaSlice<Frame>,
    links: MetaSlice<FrameLinks>,
    types: MetaSlice<AtomicU8>,
    free: Option<MetaSlice<crate::fullness::PageblockWord<core::sync::atomic::AtomicU32>>>,
    buckets: Option<BucketSlots>,
}

/// Lockless view of a zone's free area: read by every allocation on every CPU, so it lives
/// on its own cache line and is written only when a zone-lock holder releases the lock with
/// something changed.
#[derive(Debug, Default)]
pub(crate) struct FreeSummary {
    /// NR_FREE_PAGES, signed: with per-CPU diffs it is the true count minus the diffs not
    /// yet folded, which may be below 0 for a while. Readers clamp (zone_page_state()).
    pub(crate) free_pages: AtomicI64,
    /// NR_FREE_HIGHATOMIC.
    pub(crate) free_highatomic_pages: AtomicU64,
    /// Per order, a bit per migratetype whose free list is non-empty (order > 0 checks).
    pub(crate) nonempty_types: [AtomicU8; NR_ORDERS],
}

impl ZoneMem {
    /// A zone's frame records and pageblock types, in `arena` if given, else on the heap.
    pub(crate) fn new(
        zone_index: u16,
        (start_pfn, end_pfn): (Pfn, Pfn),
        mut arena: Option<&mut MetaArena>,
    ) -> Result<ZoneMem, MetaArenaFull> {
        assert!(start_pfn < end_pfn, "empty zone span");
        let spanned = end_pfn - start_pfn;
        assert!(spanned < u32::MAX as u64, "zone spans more frames than 32-bit links can name");
        let frames = MetaSlice::new(spanned as usize, arena.as_deref_mut(), |_| Frame::hole())?;
        let links = MetaSlice::new(spanned as usize, arena.as_deref_mut(), |_| FrameLinks::unlinked())?;
        let pageblocks = pageblock_slots(start_pfn, end_pfn);
        let pageblock_types = MetaSlice::new(pageblocks, arena, |_| AtomicU8::new(MigrateType::Movable as u8))?;
        Ok(ZoneMem {
            zone_index,
            start_pfn,
            end_pfn: AtomicU64::new(end_pfn),
            frames: GrowableTable::new(frames),
            links: GrowableTable::new(links),
            pageblock_types: GrowableTable::new(pageblock_types),
            summary: CacheAligned::default(),
            pageblock_free: PageblockFree::default(),
            parked_hint: AtomicBool::new(false),
            parked_whole_hint: AtomicBool::new(false),
        })
    }

    /// The zone's records as the platform observes them (cost hooks).
    #[inline(always)]
    pub(crate) fn records<'a, P: Platform>(&self, platform: &'a P) -> ZoneRecords<'a, P> {
        ZoneRecords { platform, zone: self.zone_index }
    }

    /// One past the span's last pfn. Acquire, pairing with the growth's Release: the
    /// compaction scanners and the checker derive pfns from the end itself, so a reader that
    /// sees a grown end must find the tables grown (one plain load on x86).
    #[inline]
    pub(crate) fn end_pfn(&self) -> Pfn {
        self.end_pfn.load(Acquire)
    }

    #[inline]
    pub(crate) fn contains(&self, pfn: Pfn) -> bool {
        pfn >= self.start_pfn && pfn < self.end_pfn()
    }

    /// The first frame of `[start, end)` that is not a hole (online, allocated or
    /// reserved memory), with its state, for range operations that need holes; read
    /// locklessly, as only range operations (one at a time) turn holes into anything else
    /// or anything into holes.
    pub(crate) fn first_not_hole(&self, start: Pfn, end: Pfn) -> Option<(Pfn, FrameState)> {
        (start..end).map(|pfn| (pfn, self.frame(pfn).info().state())).find(|&(_, state)| state != FrameState::Hole)
    }

    /// Bytes the records of a growth of the span to `new_end` take (frames, pageblock
    /// types, and the fullness tracking if on), alignment included, for callers placing them.
    pub(crate) fn growth_bytes(&self, new_end: Pfn) -> u64 {
        let frames = (new_end - self.end_pfn()) * crate::frame::FRAME_METADATA_BYTES as u64;
        let slots = (pageblock_slots(self.start_pfn, new_end) - self.pageblock_types.len()) as u64;
        let tracked = self.pageblock_free.is_tracked();
        let slot_bytes = 1 + if tracked { PageblockFree::BYTES_PER_SLOT } else { 0 };
        // The fullness buckets' directories live under the zone lock; the caller adds them.
        let directories = self.frames.directory_bytes()
            + self.links.directory_bytes()
            + self.pageblock_types.directory_bytes()
            + if tracked { self.pageblock_free.directory_bytes() } else { 0 };
        // Up to 8 tables and 8 directories, each padded to its alignment (at most 8 bytes).
        frames + slots * slot_bytes + directories + 16 * 8
    }

    /// The records a growth of the span to `new_end` adds: hole frames (each
    /// [`FrameState::Hole`]) and MOVABLE pageblock slots, in `arena` if given. Made
    /// before the zone lock is taken; [`Self::publish_growth`] then adds them.
    pub(crate) fn prepare_growth(
        &self,
        new_end: Pfn,
        mut arena: Option<&mut MetaArena>,
    ) -> Result<ZoneGrowth, GrowError> {
        let end = self.end_pfn();
        assert!(new_end > end, "a growth extends the span");
        if new_end - self.start_pfn >= u32::MAX as u64 {
            return Err(GrowError::IndexSpace);
        }
        if self.frames.growths() == MAX_GROWTHS {
            return Err(GrowError::Exhausted);
        }
        let slots = pageblock_slots(self.start_pfn, new_end) - self.pageblock_types.len();
        let tracked = self.pageblock_free.is_tracked();
        self.frames.reserve(arena.as_deref_mut())?;
        self.links.reserve(arena.as_deref_mut())?;
        self.pageblock_types.reserve(arena.as_deref_mut())?;
        if tracked {
            self.pageblock_free.reserve(arena.as_deref_mut())?;
        }
        Ok(ZoneGrowth {
            new_end,
            frames: MetaSlice::new((new_end - end) as usize, arena.as_deref_mut(), |_| Frame::hole())?,
            links: MetaSlice::new((new_end - end) as usize, arena.as_deref_mut(), |_| FrameLinks::unlinked())?,
            types: MetaSlice::new(slots, arena.as_deref_mut(), |_| AtomicU8::new(MigrateType::Movable as u8))?,
            free: tracked.then(|| PageblockFree::extension(slots, arena.as_deref_mut())).transpose()?,
            buckets: tracked.then(|| BucketSlots::new(slots, arena)).transpose()?,
        })
    }

    /// Adds a prepared growth's records, then moves the end: a reader that sees the new end
    /// finds them. The range lock (one grower) and the zone lock (the caller grows the
    /// buckets it returns, which the lock covers) are held.
    pub(crate) fn publish_growth(&self, growth: ZoneGrowth) -> Option<BucketSlots> {
        assert_eq!(self.frames.len() as u64, self.end_pfn() - self.start_pfn, "frames cover the span");
        let exhausted = "growths were counted when the growth was prepared";
        self.frames.grow(growth.frames).expect(exhausted);
        self.links.grow(growth.links).expect(exhausted);
        self.pageblock_types.grow(growth.types).expect(exhausted);
        if let Some(free) = growth.free {
            self.pageblock_free.grow(free).expect(exhausted);
        }
        self.end_pfn.store(growth.new_end, Release);
        assert_eq!(self.frames.len() as u64, growth.new_end - self.start_pfn, "frames cover the grown span");
        assert_eq!(self.pageblock_types.len(), pageblock_slots(self.start_pfn, growth.new_end));
        growth.buckets
    }

    #[inline]
    pub(crate) fn index(&self, pfn: Pfn) -> u32 {
        debug_assert!(self.contains(pfn));
        (pfn - self.start_pfn) as u32
    }

    #[inline]
    pub(crate) fn pfn(&self, index: u32) -> Pfn {
        debug_assert!(self.contains(self.start_pfn + index as u64), "frame index past the span");
        self.start_pfn + index as u64
    }

    #[inline]
    pub(crate) fn frame(&self, pfn: Pfn) -> &Frame {
        &self.frames[self.index(pfn) as usize]
    }

    /// The first head of a free block in `[from, end)`. Every frame of a free block but its
    /// head is interior, so reading each frame's state in turn finds it: loads that do not
    /// wait on each other, where a walk from block to block waits on each head's order
    /// before its next load (the free-page test of isolate_freepages_block()).
    #[inline]
    pub(crate) fn next_free_head(&self, from: Pfn, end: Pfn) -> Option<Pfn> {
        debug_assert!(from < end && self.contains(from) && end <= self.end_pfn());
        let (first, last) = ((from - self.start_pfn) as usize, (end - self.start_pfn) as usize);
        let view = self.frames.view();
        let offset = match view.built_slice(first..last) {
            Some(frames) => frames.iter().position(|frame| frame.info().is_free_head()),
            None => (first..last).position(|index| view[index].info().is_free_head()),
        };
        offset.map(|offset| from + offset as u64)
    }

    #[inline]
    fn pageblock_slot(&self, pfn: Pfn) -> &AtomicU8 {
        &self.pageblock_types[self.pageblock_index(pfn)]
    }

    /// The index of the pageblock holding `pfn` among the zone's pageblocks.
    #[inline]
    pub(crate) fn pageblock_index(&self, pfn: Pfn) -> usize {
        ((pfn >> PAGEBLOCK_ORDER) - (self.start_pfn >> PAGEBLOCK_ORDER)) as usize
    }

    /// Migratetype of the pageblock holding `pfn` (mirrors get_pfnblock_migratetype()).
    #[inline]
    pub(crate) fn pageblock_type(&self, pfn: Pfn) -> MigrateType {
        MigrateType::from_index(self.pageblock_slot(pfn).load(Relaxed) as usize)
    }

    /// Migratetype of pageblock `slot` (a [`Self::pageblock_index`]), for a caller that has
    /// the index already.
    #[inline]
    pub(crate) fn pageblock_type_at(&self, slot: usize) -> MigrateType {
        MigrateType::from_index(self.pageblock_types[slot].load(Relaxed) as usize)
    }

    /// Zone lock held (mirrors set_pageblock_migratetype()).
    #[inline]
    pub(crate) fn set_pageblock_type(&self, pfn: Pfn, migratetype: MigrateType) {
        debug_assert!(self.contains(pfn), "re-typing a pageblock outside the zone");
        self.pageblock_slot(pfn).store(migratetype as u8, Relaxed);
    }

    pub(crate) fn pageblock_count(&self) -> usize {
        self.pageblock_types.len()
    }

    /// First pfn of the i-th pageblock slot (may be below start_pfn for the first one).
    pub(crate) fn pageblock_start(&self, slot: usize) -> Pfn {
        ((self.start_pfn >> PAGEBLOCK_ORDER) + slot as u64) << PAGEBLOCK_ORDER
    }

    /// Free pages in the buddy (racy read, clamped at 0 as zone_page_state(NR_FREE_PAGES)
    /// clamps).
    #[inline]
    pub(crate) fn free_pages(&self) -> u64 {
        self.free_pages_signed().max(0) as u64
    }

    /// The published count as stored: below 0 while unfolded per-CPU diffs hold more
    /// frees than there are free pages (`atomic_long_read(&zone->vm_stat[NR_FREE_PAGES])`).
    #[inline]
    pub(crate) fn free_pages_signed(&self) -> i64 {
        self.summary.free_pages.load(Relaxed)
    }

    /// Free pages in high-order atomic reserve pageblocks (racy read).
    #[inline]
    pub(crate) fn free_highatomic_pages(&self) -> u64 {
        self.summary.free_highatomic_pages.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use crate::frame::FrameState;
    use crate::platform::TestPlatform;
    use crate::request::AllocRequest;
    use crate::test_rng::Rng;
    use crate::types::{Pfn, ZoneType};
    use crate::{AllocatorBuilder, PageAllocator};

    /// The first free head in `[from, end)` by a walk from block to block, as a scanner
    /// reading each head's order would find it.
    fn walked_free_head(mem: &super::ZoneMem, from: Pfn, end: Pfn) -> Option<Pfn> {
        let mut pfn = from;
        while pfn < end {
            let info = mem.frame(pfn).info();
            match info.state() {
                FrameState::FreeHead => return Some(pfn),
                FrameState::AllocHead | FrameState::PcpHead | FrameState::Parked => pfn += 1 << info.order(),
                FrameState::Interior | FrameState::Reserved | FrameState::Hole => pfn += 1,
            }
        }
        None
    }

    #[test]
    fn next_free_head_finds_what_a_block_walk_finds() {
        let allocator =
            PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 14), TestPlatform::new(2))
                .unwrap();
        let mut rng = Rng(11);
        let mut held = alloc::vec::Vec::new();
        for _ in 0..3_000 {
            let order = rng.below(4) as u8;
            if let Ok(block) = allocator.alloc_pages(order, AllocRequest::USER_MOVABLE) {
                held.push(block);
            }
            if rng.below(3) == 0 && !held.is_empty() {
                let index = rng.below(held.len() as u64) as usize;
                allocator.free_pages(held.swap_remove(index)).unwrap();
            }
        }
        let mem = allocator.zones()[0].mem();
        let (start, end) = (mem.start_pfn, mem.end_pfn());
        let mut found = 0;
        for _ in 0..2_000 {
            let from = start + rng.below(end - start);
            let to = (from + 1 + rng.below(1024)).min(end);
            let expected = walked_free_head(mem, from, to);
            assert_eq!(mem.next_free_head(from, to), expected, "[{from:#x}, {to:#x})");
            found += usize::from(expected.is_some());
        }
        assert!(found > 100, "the ranges held free blocks ({found})");
        assert_eq!(mem.next_free_head(start, end), walked_free_head(mem, start, end));
    }
}
