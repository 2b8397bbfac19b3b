//! A zone's identity, fixed parameters and lockless state (flags, watermark boost, reserve
//! and fallback counters): what the watermark check and the fallback path consult beside
//! the free lists.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::events::ExtfragCounters;
use crate::sizing::{PcpBounds, Watermarks, ZoneSizing};
use crate::types::{ZoneType, MAX_NR_ZONES};
use crate::vmstat::ZoneVmstat;

/// Zone flag bits (Linux `enum zone_flags`).
pub mod zone_flags {
    /// A fallback boosted the watermark; kswapd should run.
    pub const BOOSTED_WATERMARK: u32 = 1 << 0;
    /// kswapd is reclaiming for this zone.
    pub const RECLAIM_ACTIVE: u32 = 1 << 1;
    /// Free pages fell below the high watermark (PCP high stops growing).
    pub const BELOW_HIGH: u32 = 1 << 2;
}

/// Per-zone parameters, derived by `sizing` at build and again when memory goes online
/// or offline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneParams {
    pub watermarks: Watermarks,
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    pub pcp: PcpBounds,
    pub stat_threshold: u32,
    /// The vmstat threshold while background reclaim is awake.
    pub pressure_stat_threshold: u32,
}

impl From<&ZoneSizing> for ZoneParams {
    fn from(sizing: &ZoneSizing) -> Self {
        ZoneParams {
            watermarks: sizing.watermarks,
            lowmem_reserve: sizing.lowmem_reserve,
            pcp: sizing.pcp,
            stat_threshold: sizing.stat_threshold,
            pressure_stat_threshold: sizing.pressure_stat_threshold,
        }
    }
}

/// A zone's [`ZoneParams`], re-derived when memory goes online or offline (mirrors the
/// fields init_per_zone_wmark_min() and zone_pcp_update() rewrite with WRITE_ONCE()): each
/// field is read relaxed, so a reader during an update may see some fields old, as in Linux.
#[derive(Debug)]
pub(crate) struct ParamsCell {
    watermarks: [AtomicU64; 4],
    lowmem_reserve: [AtomicU64; MAX_NR_ZONES],
    pcp: [AtomicU64; 3],
    stat_thresholds: [AtomicU32; 2],
}

impl ParamsCell {
    fn new(params: &ZoneParams) -> ParamsCell {
        let cell = ParamsCell {
            watermarks: Default::default(),
            lowmem_reserve: Default::default(),
            pcp: Default::default(),
            stat_thresholds: Default::default(),
        };
        cell.store(params);
        cell
    }

    pub(crate) fn store(&self, params: &ZoneParams) {
        let marks = &params.watermarks;
        for (slot, value) in
            self.watermarks.iter().zip([marks.min_pages, marks.low_pages, marks.high_pages, marks.promo_pages])
        {
            slot.store(value, Relaxed);
        }
        for (slot, &value) in self.lowmem_reserve.iter().zip(params.lowmem_reserve.iter()) {
            slot.store(value, Relaxed);
        }
        let pcp = &params.pcp;
        for (slot, value) in self.pcp.iter().zip([pcp.batch_pages, pcp.high_min_pages, pcp.high_max_pages]) {
            slot.store(value, Relaxed);
        }
        self.stat_thresholds[0].store(params.stat_threshold, Relaxed);
        self.stat_thresholds[1].store(params.pressure_stat_threshold, Relaxed);
    }

    #[inline]
    pub(crate) fn watermarks(&self) -> Watermarks {
        let [min, low, high, promo] = &self.watermarks;
        Watermarks {
            min_pages: min.load(Relaxed),
            low_pages: low.load(Relaxed),
            high_pages: high.load(Relaxed),
            promo_pages: promo.load(Relaxed),
        }
    }

    #[inline]
    pub(crate) fn lowmem_reserve(&self, highest_zone: ZoneType) -> u64 {
        self.lowmem_reserve[highest_zone.index()].load(Relaxed)
    }

    fn get(&self) -> ZoneParams {
        let [batch, high_min, high_max] = &self.pcp;
        ZoneParams {
            watermarks: self.watermarks(),
            lowmem_reserve: core::array::from_fn(|index| self.lowmem_reserve[index].load(Relaxed)),
            pcp: PcpBounds {
                batch_pages: batch.load(Relaxed),
                high_min_pages: high_min.load(Relaxed),
                high_max_pages: high_max.load(Relaxed),
            },
            stat_threshold: self.stat_thresholds[0].load(Relaxed),
            pressure_stat_threshold: self.stat_thresholds[1].load(Relaxed),
        }
    }
}

/// Everything about a zone but its memory, lock and pagesets.
#[derive(Debug)]
pub struct ZoneState {
    pub(crate) index: u16,
    pub(crate) node: u16,
    pub(crate) zone_type: ZoneType,
    /// Changed at run time by memory online and offline (hence atomic; read relaxed).
    pub(crate) present_pages: AtomicU64,
    pub(crate) managed_pages: AtomicU64,
    pub(crate) params: ParamsCell,
    pub(crate) boost_pages: AtomicU64,
    pub(crate) flags: AtomicU32,
    /// Pages in pageblocks re-typed HIGHATOMIC.
    pub(crate) reserved_highatomic_pages: AtomicU64,
    pub(crate) extfrag: ExtfragCounters,
    /// The zone's shared vmstat counters.
    pub(crate) vmstat: ZoneVmstat,
    /// Allocations preferring this zone start with ALLOC_NOFRAGMENT.
    pub(crate) nofragment_when_preferred: bool,
    /// Free blocks always sit on their pageblock type's lists (v6.10 bookkeeping); off under
    /// the 2018 fallback design, whose steals move free pages to the requester's lists.
    pub(crate) free_lists_match_pageblocks: bool,
    /// Compaction's scanner positions and deferral, kept between runs.
    pub(crate) compact: CompactCursors,
}

/// What compaction remembers of a zone between runs (mirrors compact_cached_migrate_pfn,
/// compact_cached_free_pfn, compact_considered, compact_defer_shift and
/// compact_order_failed). Zero cursors mean "start over"; the deferral rules are in
/// `compaction::defer`.
#[derive(Debug, Default)]
pub struct CompactCursors {
    /// Where the migration scanner resumes (0: at the zone start).
    pub(crate) migrate_pfn: AtomicU64,
    /// Where the free scanner resumes (0: at the zone's last pageblock).
    pub(crate) free_pfn: AtomicU64,
    pub(crate) considered: AtomicU32,
    pub(crate) defer_shift: AtomicU32,
    pub(crate) order_failed: AtomicU32,
}

impl ZoneState {
    pub(crate) fn new(index: u16, node: u16, zone_type: ZoneType, params: ZoneParams) -> ZoneState {
        // Thresholds are at most 125 by formula.
        let stat_threshold = params.stat_threshold.min(u32::from(u16::MAX)) as u16;
        ZoneState {
            vmstat: ZoneVmstat::new(stat_threshold),
            index,
            node,
            zone_type,
            present_pages: AtomicU64::new(0),
            managed_pages: AtomicU64::new(0),
            params: ParamsCell::new(&params),
            boost_pages: AtomicU64::new(0),
            flags: AtomicU32::new(0),
            reserved_highatomic_pages: AtomicU64::new(0),
            extfrag: ExtfragCounters::default(),
            nofragment_when_preferred: false,
            free_lists_match_pageblocks: true,
            compact: CompactCursors::default(),
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

    pub fn present_pages(&self) -> u64 {
        self.present_pages.load(Relaxed)
    }

    pub fn managed_pages(&self) -> u64 {
        self.managed_pages.load(Relaxed)
    }

    /// Memory came online (`added`) or went offline: present and managed pages move
    /// together (mirrors adjust_present_page_count() and adjust_managed_page_count()).
    pub(crate) fn adjust_online_pages(&self, pages: u64, added: bool) {
        for count in [&self.present_pages, &self.managed_pages] {
            if added {
                count.fetch_add(pages, Relaxed);
            } else {
                let before = count.fetch_sub(pages, Relaxed);
                debug_assert!(before >= pages, "offlined {pages} of {before} pages");
            }
        }
    }

    /// Holes became present memory that is not managed: reserved for records given to a
    /// hot-add (mirrors adjust_present_page_count() for memmap pages).
    pub(crate) fn add_present_pages(&self, pages: u64) {
        self.present_pages.fetch_add(pages, Relaxed);
    }

    /// The zone's parameters now (they change when memory goes online or offline).
    pub fn params(&self) -> ZoneParams {
        self.params.get()
    }

    /// The watermarks without boost.
    #[inline]
    pub fn watermarks(&self) -> Watermarks {
        self.params.watermarks()
    }

    pub fn is_populated(&self) -> bool {
        self.managed_pages() > 0
    }

    #[inline]
    pub fn boost_pages(&self) -> u64 {
        self.boost_pages.load(Relaxed)
    }

    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags.load(Relaxed)
    }

    #[inline]
    pub(crate) fn set_flag(&self, flag: u32) {
        self.flags.fetch_or(flag, Relaxed);
    }

    /// Clears `flag`; returns whether it was set.
    #[inline]
    pub(crate) fn clear_flag(&self, flag: u32) -> bool {
        self.flags.fetch_and(!flag, Relaxed) & flag != 0
    }

    pub fn reserved_highatomic_pages(&self) -> u64 {
        self.reserved_highatomic_pages.load(Relaxed)
    }

    pub fn extfrag(&self) -> &ExtfragCounters {
        &self.extfrag
    }

    pub fn vmstat(&self) -> &ZoneVmstat {
        &self.vmstat
    }

    /// Compaction's scanner positions and deferral, as the next run finds them.
    pub fn compact_cursors(&self) -> &CompactCursors {
        &self.compact
    }

    /// Sets the vmstat threshold for reclaim pressure or back to normal (mirrors
    /// set_pgdat_percpu_threshold() with calculate_pressure_threshold() or
    /// calculate_normal_threshold()).
    pub(crate) fn set_pressure_threshold(&self, under_pressure: bool) {
        let threshold = self.params.stat_thresholds[usize::from(under_pressure)].load(Relaxed);
        self.vmstat.set_stat_threshold(threshold.min(u32::from(u16::MAX)) as u16);
    }

    /// Boosted watermarks, as the allocator compares against them.
    pub fn watermarks_with_boost(&self) -> Watermarks {
        let boost = self.boost_pages();
        let marks = self.params.watermarks();
        Watermarks {
            min_pages: marks.min_pages + boost,
            low_pages: marks.low_pages + boost,
            high_pages: marks.high_pages + boost,
            promo_pages: marks.promo_pages + boost,
        }
    }
}
