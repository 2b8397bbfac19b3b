//! A zone: a pfn range with its frame metadata, pageblock types, free area (under the zone
//! lock), watermarks and flags.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};

use crate::events::ExtfragCounters;
use crate::frame::Frame;
use crate::free_area::FreeArea;
use crate::pcp::PcpSlot;
use crate::platform::{LockId, Platform};
use crate::sizing::{PcpBounds, Watermarks, ZoneSizing};
use crate::sync::{CacheAligned, PlatformMutex};
use crate::types::{MigrateType, Pfn, ZoneType, MAX_NR_ZONES, NR_ORDERS, PAGEBLOCK_ORDER};

/// Zone flag bits (Linux `enum zone_flags`).
pub mod zone_flags {
    /// A fallback boosted the watermark; kswapd should run.
    pub const BOOSTED_WATERMARK: u32 = 1 << 0;
    /// kswapd is reclaiming for this zone.
    pub const RECLAIM_ACTIVE: u32 = 1 << 1;
    /// Free pages fell below the high watermark (PCP high stops growing).
    pub const BELOW_HIGH: u32 = 1 << 2;
}

/// Memory and metadata of a zone, readable without the zone lock.
pub struct ZoneMem {
    pub(crate) start_pfn: Pfn,
    pub(crate) end_pfn: Pfn,
    pub(crate) frames: Box<[Frame]>,
    /// Migratetype per pageblock; written under the zone lock, read locklessly on free.
    pub(crate) pageblock_types: Box<[AtomicU8]>,
    /// What watermark checks read without the lock, published once per lock hold.
    pub(crate) summary: CacheAligned<FreeSummary>,
}

/// Lockless view of a zone's free area: read by every allocation on every CPU, so it lives
/// on its own cache line and is written only when a zone-lock holder releases the lock with
/// something changed.
#[derive(Default)]
pub(crate) struct FreeSummary {
    /// NR_FREE_PAGES.
    pub(crate) free_pages: AtomicU64,
    /// NR_FREE_HIGHATOMIC.
    pub(crate) free_highatomic_pages: AtomicU64,
    /// Per order, a bit per migratetype whose free list is non-empty (order > 0 checks).
    pub(crate) nonempty_types: [AtomicU8; NR_ORDERS],
}

impl ZoneMem {
    pub(crate) fn new(start_pfn: Pfn, end_pfn: Pfn) -> ZoneMem {
        assert!(start_pfn < end_pfn, "empty zone span");
        let spanned = end_pfn - start_pfn;
        assert!(spanned < u32::MAX as u64, "zone spans more frames than 32-bit links can name");
        let frames: Vec<Frame> = (0..spanned).map(|_| Frame::reserved()).collect();
        let pageblocks = ((end_pfn - 1) >> PAGEBLOCK_ORDER) - (start_pfn >> PAGEBLOCK_ORDER) + 1;
        let pageblock_types: Vec<AtomicU8> =
            (0..pageblocks).map(|_| AtomicU8::new(MigrateType::Movable as u8)).collect();
        ZoneMem {
            start_pfn,
            end_pfn,
            frames: frames.into_boxed_slice(),
            pageblock_types: pageblock_types.into_boxed_slice(),
            summary: CacheAligned::default(),
        }
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
        &self.pageblock_types[((pfn >> PAGEBLOCK_ORDER) - (self.start_pfn >> PAGEBLOCK_ORDER)) as usize]
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
}

/// Fixed per-zone parameters, derived by `sizing`.
#[derive(Clone, Debug)]
pub struct ZoneParams {
    pub watermarks: Watermarks,
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    pub pcp: PcpBounds,
    pub stat_threshold: u32,
}

impl From<&ZoneSizing> for ZoneParams {
    fn from(sizing: &ZoneSizing) -> Self {
        ZoneParams {
            watermarks: sizing.watermarks,
            lowmem_reserve: sizing.lowmem_reserve,
            pcp: sizing.pcp,
            stat_threshold: sizing.stat_threshold,
        }
    }
}

pub struct Zone<P: Platform> {
    pub(crate) index: u16,
    pub(crate) node: u16,
    pub(crate) zone_type: ZoneType,
    pub(crate) present_pages: u64,
    pub(crate) managed_pages: u64,
    pub(crate) mem: ZoneMem,
    /// zone->lock and what it protects, on lines of their own (written constantly).
    pub(crate) free: CacheAligned<PlatformMutex<P, FreeArea>>,
    /// One pageset per CPU (empty when pagesets are off).
    pub(crate) pcp: Box<[PcpSlot<P>]>,
    pub(crate) params: ZoneParams,
    pub(crate) boost_pages: AtomicU64,
    pub(crate) flags: AtomicU32,
    /// Pages in pageblocks re-typed HIGHATOMIC.
    pub(crate) reserved_highatomic_pages: AtomicU64,
    pub(crate) extfrag: ExtfragCounters,
    /// Allocations preferring this zone start with ALLOC_NOFRAGMENT.
    pub(crate) nofragment_when_preferred: bool,
}

impl<P: Platform> Zone<P> {
    pub(crate) fn new(index: u16, node: u16, zone_type: ZoneType, mem: ZoneMem, params: ZoneParams) -> Zone<P> {
        Zone {
            index,
            node,
            zone_type,
            present_pages: 0,
            managed_pages: 0,
            mem,
            free: CacheAligned(PlatformMutex::new(LockId::Zone(index), FreeArea::default())),
            pcp: Box::new([]),
            params,
            boost_pages: AtomicU64::new(0),
            flags: AtomicU32::new(0),
            reserved_highatomic_pages: AtomicU64::new(0),
            extfrag: ExtfragCounters::default(),
            nofragment_when_preferred: false,
        }
    }

    pub fn index(&self) -> u16 {
        self.index
    }

    pub fn node(&self) -> u16 {
        self.node
    }

    pub fn zone_type(&self) -> ZoneType {
        self.zone_type
    }

    pub fn start_pfn(&self) -> Pfn {
        self.mem.start_pfn
    }

    pub fn spanned_pages(&self) -> u64 {
        self.mem.end_pfn - self.mem.start_pfn
    }

    pub fn present_pages(&self) -> u64 {
        self.present_pages
    }

    pub fn managed_pages(&self) -> u64 {
        self.managed_pages
    }

    pub fn params(&self) -> &ZoneParams {
        &self.params
    }

    /// Free pages in the buddy (racy read, like zone_page_state(NR_FREE_PAGES)).
    #[inline]
    pub fn free_pages(&self) -> u64 {
        self.mem.summary.free_pages.load(Relaxed)
    }

    #[inline]
    pub fn boost_pages(&self) -> u64 {
        self.boost_pages.load(Relaxed)
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Relaxed)
    }

    pub(crate) fn set_flag(&self, flag: u32) {
        self.flags.fetch_or(flag, Relaxed);
    }

    pub(crate) fn clear_flag(&self, flag: u32) -> bool {
        self.flags.fetch_and(!flag, Relaxed) & flag != 0
    }

    /// Free pages in high-order atomic reserve pageblocks (racy read).
    #[inline]
    pub fn free_highatomic_pages(&self) -> u64 {
        self.mem.summary.free_highatomic_pages.load(Relaxed)
    }

    pub fn reserved_highatomic_pages(&self) -> u64 {
        self.reserved_highatomic_pages.load(Relaxed)
    }

    pub fn extfrag(&self) -> &ExtfragCounters {
        &self.extfrag
    }

    /// Boosted watermarks, as the allocator compares against them.
    pub fn watermarks_with_boost(&self) -> Watermarks {
        let boost = self.boost_pages();
        let marks = self.params.watermarks;
        Watermarks {
            min_pages: marks.min_pages + boost,
            low_pages: marks.low_pages + boost,
            high_pages: marks.high_pages + boost,
            promo_pages: marks.promo_pages + boost,
        }
    }

    pub fn is_populated(&self) -> bool {
        self.managed_pages > 0
    }

    /// Pageblocks per migratetype (the pagetypeinfo block counts).
    pub fn pageblock_counts(&self) -> [u64; crate::types::NR_MIGRATETYPES] {
        let mut counts = [0u64; crate::types::NR_MIGRATETYPES];
        for slot in 0..self.mem.pageblock_count() {
            let start = self.mem.pageblock_start(slot).max(self.mem.start_pfn);
            counts[self.mem.pageblock_type(start).index()] += 1;
        }
        counts
    }

    /// The per-CPU pagesets, indexed by CPU.
    pub fn pagesets(&self) -> &[PcpSlot<P>] {
        &self.pcp
    }

    /// Zone lock statistics.
    pub fn lock_stats(&self) -> crate::sync::LockStats {
        self.free.stats()
    }

    /// Buddy operations on this zone; `area` must be this zone's free area, locked.
    #[inline]
    pub(crate) fn buddy<'a>(&'a self, area: &'a mut FreeArea, platform: &'a P) -> crate::buddy::BuddyCtx<'a, P> {
        crate::buddy::BuddyCtx { mem: &self.mem, area, platform, zone_index: self.index }
    }

    /// Runs `f` with the zone lock held and the free area exposed (for views and tests).
    pub fn with_free_area<R>(&self, platform: &P, f: impl FnOnce(&FreeArea) -> R) -> R {
        let area = self.free.lock(platform);
        f(&area)
    }
}
