//! A zone's free lists per (order, migratetype) and their counts (Linux `struct free_area`).
//! Lives inside the zone lock.

use crate::list::FrameList;
use crate::types::{NR_MIGRATETYPES, NR_ORDERS};

/// Zone-lock-side counters, kept under the lock (no atomics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneCounters {
    /// Pages handed out of the buddy, directly or into pagesets (the seeds' alloc_zone).
    pub alloc_zone_pages: u64,
    /// Pages returned to the buddy, directly or from pagesets.
    pub freed_to_zone_pages: u64,
}

impl core::ops::AddAssign for ZoneCounters {
    fn add_assign(&mut self, other: ZoneCounters) {
        self.alloc_zone_pages += other.alloc_zone_pages;
        self.freed_to_zone_pages += other.freed_to_zone_pages;
    }
}

#[derive(Debug)]
pub struct FreeArea {
    pub(crate) lists: [[FrameList; NR_MIGRATETYPES]; NR_ORDERS],
    /// Free blocks per (order, migratetype).
    pub(crate) nr_free: [[u64; NR_MIGRATETYPES]; NR_ORDERS],
    /// Free base pages in the zone (NR_FREE_PAGES).
    pub(crate) free_pages: u64,
    /// Free pages on HIGHATOMIC lists (NR_FREE_HIGHATOMIC): unusable to requests without
    /// reserve access.
    pub(crate) free_highatomic_pages: u64,
    /// Free pages on ISOLATE lists: not in `free_pages`, never handed out.
    pub(crate) free_isolated_pages: u64,
    /// Per order, a bit per migratetype whose list is non-empty (published to the zone's
    /// lockless summary when the lock is released).
    pub(crate) nonempty_types: [u8; NR_ORDERS],
    pub(crate) counters: ZoneCounters,
    /// With per-CPU free-count diffs (`FreePagesCount::PerCpuDiffs`): each CPU's part of
    /// NR_FREE_PAGES not yet in the published count (empty otherwise). Kept under the zone
    /// lock, which every change of the count holds anyway.
    pub(crate) free_diff: crate::meta::MetaSlice<i16>,
    /// `free_pages` when the diffs were last charged with its changes.
    pub(crate) free_pages_accounted: u64,
    /// Partly free pageblocks by fullness, for fullest-first placement (`None` otherwise).
    pub(crate) fullness: Option<crate::fullness::FullnessBuckets>,
    /// `FragPolicy::merge_likely_to_tail`.
    pub(crate) merge_likely_to_tail: bool,
    /// Where a pageblock-order take looks first for a pageblock parked whole
    /// (`FragBeyondLinux::parked_frees`): one past the last it took.
    pub(crate) parked_scan_from: usize,
}

impl Default for FreeArea {
    fn default() -> Self {
        FreeArea {
            lists: [[FrameList::EMPTY; NR_MIGRATETYPES]; NR_ORDERS],
            nr_free: [[0; NR_MIGRATETYPES]; NR_ORDERS],
            free_pages: 0,
            free_highatomic_pages: 0,
            free_isolated_pages: 0,
            nonempty_types: [0; NR_ORDERS],
            counters: ZoneCounters::default(),
            parked_scan_from: 0,
            free_diff: crate::meta::MetaSlice::empty(),
            free_pages_accounted: 0,
            fullness: None,
            merge_likely_to_tail: true,
        }
    }
}

impl FreeArea {
    /// Free blocks of `order`, all types (the /proc/buddyinfo column).
    pub fn blocks_of_order(&self, order: usize) -> u64 {
        self.nr_free[order].iter().sum()
    }

    pub fn blocks(&self, order: usize, migratetype: usize) -> u64 {
        self.nr_free[order][migratetype]
    }

    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// Free pages in isolated pageblocks (not counted in [`Self::free_pages`]).
    pub fn free_isolated_pages(&self) -> u64 {
        self.free_isolated_pages
    }

    pub fn counters(&self) -> ZoneCounters {
        self.counters
    }

    /// Debug builds: the counts agree with one another and with the lists' emptiness, as
    /// every zone-lock hold must leave them (a cheap part of the invariant checker's free
    /// lists check, run at each release of the lock). Absent from release builds.
    #[cfg(debug_assertions)]
    pub(crate) fn debug_assert_counts(&self) {
        let (mut listed, mut isolated, mut highatomic) = (0u64, 0u64, 0u64);
        for order in 0..NR_ORDERS {
            let mut nonempty = 0u8;
            for migratetype in 0..NR_MIGRATETYPES {
                let blocks = self.nr_free[order][migratetype];
                assert_eq!(self.lists[order][migratetype].is_empty(), blocks == 0, "order {order} type {migratetype}");
                nonempty |= u8::from(blocks > 0) << migratetype;
                let pages = blocks << order;
                match migratetype {
                    m if m == crate::types::MigrateType::Isolate.index() => isolated += pages,
                    m if m == crate::types::MigrateType::HighAtomic.index() => {
                        highatomic += pages;
                        listed += pages;
                    }
                    _ => listed += pages,
                }
            }
            assert_eq!(self.nonempty_types[order], nonempty, "order {order}: non-empty types");
        }
        assert_eq!(listed, self.free_pages, "free pages counted");
        assert_eq!(isolated, self.free_isolated_pages, "isolated free pages counted");
        assert_eq!(highatomic, self.free_highatomic_pages, "highatomic free pages counted");
    }
}
