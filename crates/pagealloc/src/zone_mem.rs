//! A zone's memory as data: its frame records, the pageblock types and the lockless summary
//! of its free area. No locks here; the layers above say which lock covers which write.

use core::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

use crate::frame::Frame;
use crate::fullness::PageblockFree;
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
    pub(crate) end_pfn: Pfn,
    pub(crate) frames: MetaSlice<Frame>,
    /// Migratetype per pageblock; written under the zone lock, read locklessly on free.
    pub(crate) pageblock_types: MetaSlice<AtomicU8>,
    /// What watermark checks read without the lock, published once per lock hold.
    pub(crate) summary: CacheAligned<FreeSummary>,
    /// Free pages per pageblock, tracked for fullest-first placement only (empty otherwise).
    pub(crate) pageblock_free: PageblockFree,
}

/// Lockless view of a zone's free area: read by every allocation on every CPU, so it lives
/// on its own cache line and is written only when a zone-lock holder releases the lock with
/// something changed.
#[derive(Debug, Default)]
pub(crate) struct FreeSummary {
    /// NR_FREE_PAGES.
    pub(crate) free_pages: AtomicU64,
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
        let frames = MetaSlice::new(spanned as usize, arena.as_deref_mut(), |_| Frame::reserved())?;
        let pageblocks = ((end_pfn - 1) >> PAGEBLOCK_ORDER) - (start_pfn >> PAGEBLOCK_ORDER) + 1;
        let pageblock_types =
            MetaSlice::new(pageblocks as usize, arena, |_| AtomicU8::new(MigrateType::Movable as u8))?;
        Ok(ZoneMem {
            zone_index,
            start_pfn,
            end_pfn,
            frames,
            pageblock_types,
            summary: CacheAligned::default(),
            pageblock_free: PageblockFree::default(),
        })
    }

    /// The zone's records as the platform observes them (cost hooks).
    #[inline(always)]
    pub(crate) fn records<'a, P: Platform>(&self, platform: &'a P) -> ZoneRecords<'a, P> {
        ZoneRecords { platform, zone: self.zone_index }
    }

    #[inline]
    pub(crate) fn contains(&self, pfn: Pfn) -> bool {
        pfn >= self.start_pfn && pfn < self.end_pfn
    }

    #[inline]
    pub(crate) fn index(&self, pfn: Pfn) -> u32 {
        debug_assert!(self.contains(pfn));
        (pfn - self.start_pfn) as u32
    }

    #[inline]
    pub(crate) fn pfn(&self, index: u32) -> Pfn {
        self.start_pfn + index as u64
    }

    #[inline]
    pub(crate) fn frame(&self, pfn: Pfn) -> &Frame {
        &self.frames[self.index(pfn) as usize]
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

    /// Zone lock held (mirrors set_pageblock_migratetype()).
    #[inline]
    pub(crate) fn set_pageblock_type(&self, pfn: Pfn, migratetype: MigrateType) {
        self.pageblock_slot(pfn).store(migratetype as u8, Relaxed);
    }

    pub(crate) fn pageblock_count(&self) -> usize {
        self.pageblock_types.len()
    }

    /// First pfn of the i-th pageblock slot (may be below start_pfn for the first one).
    pub(crate) fn pageblock_start(&self, slot: usize) -> Pfn {
        ((self.start_pfn >> PAGEBLOCK_ORDER) + slot as u64) << PAGEBLOCK_ORDER
    }

    /// Free pages in the buddy (racy read, like zone_page_state(NR_FREE_PAGES)).
    #[inline]
    pub(crate) fn free_pages(&self) -> u64 {
        self.summary.free_pages.load(Relaxed)
    }

    /// Free pages in high-order atomic reserve pageblocks (racy read).
    #[inline]
    pub(crate) fn free_highatomic_pages(&self) -> u64 {
        self.summary.free_highatomic_pages.load(Relaxed)
    }
}
