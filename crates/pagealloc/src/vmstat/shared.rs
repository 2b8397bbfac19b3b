//! The shared half of the counters: per zone and machine-wide atomics that per-CPU diffs fold
//! into, each fold an atomic add on a shared line reported to the platform (mirrors
//! zone_page_state_add() and zone_numa_state_add()).

use core::sync::atomic::{AtomicI64, AtomicU16, AtomicU64, Ordering::Relaxed};

use super::items::NumaEvent;
use crate::platform::{Platform, SharedLine};
use crate::policy::NumaStats;

/// Which shared lines a class of counters lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterClass {
    /// Zone statistics: `zone->vm_stat` (the line NR_FREE_PAGES is on) and `vm_zone_stat`.
    ZoneStat,
    /// The NUMA counters' own class: `zone->vm_numa_stat` and `vm_numa_stat`.
    Numa,
}

/// A zone's shared counters.
#[derive(Debug)]
pub struct ZoneVmstat {
    /// NUMA events folded in, whatever the class.
    numa: [AtomicI64; NumaEvent::COUNT],
    /// Pages allocated and freed outside a pageset (their CPU's counters are in the pageset
    /// the call did not hold); Linux counts these per CPU too, so they cost no shared line here.
    pgalloc_pages: AtomicU64,
    pgfree_pages: AtomicU64,
    /// The threshold zone-stat diffs fold at now: the normal one, or the pressure one while
    /// background reclaim is awake (Linux keeps a copy per CPU; one word read by all is
    /// equivalent and cheaper to switch).
    stat_threshold: AtomicU16,
    /// Below this published free count, `zone_watermark_ok_safe` reads the exact count (0:
    /// never; set at build with per-CPU free-count diffs).
    percpu_drift_mark_pages: AtomicU64,
}

impl ZoneVmstat {
    pub fn new(stat_threshold: u16) -> ZoneVmstat {
        ZoneVmstat {
            numa: Default::default(),
            pgalloc_pages: AtomicU64::new(0),
            pgfree_pages: AtomicU64::new(0),
            stat_threshold: AtomicU16::new(stat_threshold),
            percpu_drift_mark_pages: AtomicU64::new(0),
        }
    }

    #[inline(always)]
    pub fn stat_threshold(&self) -> u16 {
        self.stat_threshold.load(Relaxed)
    }

    /// Switches the threshold (mirrors set_pgdat_percpu_threshold()).
    pub fn set_stat_threshold(&self, threshold: u16) {
        self.stat_threshold.store(threshold, Relaxed);
    }

    pub fn percpu_drift_mark_pages(&self) -> u64 {
        self.percpu_drift_mark_pages.load(Relaxed)
    }

    pub(crate) fn set_percpu_drift_mark(&self, pages: u64) {
        self.percpu_drift_mark_pages.store(pages, Relaxed);
    }

    /// The folded value of `event` (mirrors zone_numa_event_state() before its per-CPU sum):
    /// what a cheap read sees.
    pub fn numa_folded(&self, event: NumaEvent) -> i64 {
        self.numa[event.index()].load(Relaxed)
    }

    pub fn pgalloc_unbatched_pages(&self) -> u64 {
        self.pgalloc_pages.load(Relaxed)
    }

    pub fn pgfree_unbatched_pages(&self) -> u64 {
        self.pgfree_pages.load(Relaxed)
    }

    #[inline]
    pub(crate) fn count_pgalloc(&self, pages: u64) {
        self.pgalloc_pages.fetch_add(pages, Relaxed);
    }

    #[inline]
    pub(crate) fn count_pgfree(&self, pages: u64) {
        self.pgfree_pages.fetch_add(pages, Relaxed);
    }
}

/// The machine-wide counters, and how NUMA events are kept (one pointer for the fast
/// paths to carry).
#[derive(Debug)]
pub struct GlobalVmstat {
    numa_mode: NumaStats,
    /// The fast paths' one-byte test: `numa_mode` is `PerCpu`. (A match on `NumaStats`
    /// itself decodes a niche-packed tag: a dozen instructions per allocation.)
    numa_per_cpu: bool,
    /// The same for `Disabled` (vm.numa_stat = 0): nothing to count, nothing called.
    numa_disabled: bool,
    numa: [AtomicI64; NumaEvent::COUNT],
}

impl GlobalVmstat {
    pub fn new(numa_mode: NumaStats) -> GlobalVmstat {
        GlobalVmstat {
            numa_mode,
            numa_per_cpu: numa_mode == NumaStats::PerCpu,
            numa_disabled: numa_mode == NumaStats::Disabled,
            numa: Default::default(),
        }
    }

    #[inline(always)]
    pub fn numa_mode(&self) -> NumaStats {
        self.numa_mode
    }

    #[inline(always)]
    pub fn numa_per_cpu(&self) -> bool {
        self.numa_per_cpu
    }

    #[inline(always)]
    pub fn numa_disabled(&self) -> bool {
        self.numa_disabled
    }

    pub fn numa_folded(&self, event: NumaEvent) -> i64 {
        self.numa[event.index()].load(Relaxed)
    }
}

/// Where a fold goes: one zone's counters and the global ones, on the platform's lines.
#[derive(Clone, Copy)]
pub struct FoldTarget<'a, P: Platform> {
    pub zone: &'a ZoneVmstat,
    pub zone_index: u16,
    pub global: &'a GlobalVmstat,
    pub platform: &'a P,
}

impl<P: Platform> core::fmt::Debug for FoldTarget<'_, P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FoldTarget").field("zone_index", &self.zone_index).finish_non_exhaustive()
    }
}

impl<P: Platform> FoldTarget<'_, P> {
    /// Adds `value` to `event` in the zone and globally: two atomic adds on shared lines of
    /// `class` (a `charged: false` add is one Linux makes per CPU: no shared line).
    #[cold]
    #[inline(never)]
    pub fn add_numa(&self, event: NumaEvent, value: i64, class: Option<CounterClass>) {
        self.zone.numa[event.index()].fetch_add(value, Relaxed);
        let Some(class) = class else { return };
        self.global.numa[event.index()].fetch_add(value, Relaxed);
        let (zone_line, global_line) = match class {
            CounterClass::ZoneStat => (SharedLine::ZoneCounters(self.zone_index), SharedLine::GlobalCounters),
            CounterClass::Numa => (SharedLine::ZoneNumaCounters(self.zone_index), SharedLine::GlobalNumaCounters),
        };
        self.platform.atomic_shared(zone_line);
        self.platform.atomic_shared(global_line);
    }
}
