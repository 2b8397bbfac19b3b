//! One CPU's counters for one zone, kept in its pageset under the pageset lock (mirrors
//! struct per_cpu_zonestat and the zone's share of vm_event_states). Updating them costs no
//! atomic: the fast paths already hold that lock.

use super::diff::{fold_diff, inc_diff, inc_event_diff};
use super::items::{NumaEvent, NumaPlacement};
use super::shared::{CounterClass, FoldTarget};
use crate::platform::Platform;
use crate::policy::NumaStats;

/// One CPU's counters for one zone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuZoneStats {
    /// NUMA diffs as zone statistics (`NumaStats::ZoneStat`).
    zone_stat_diff: [i16; NumaEvent::COUNT],
    /// NUMA diffs of the separate class (`NumaStats::SeparateClass`).
    numa_class_diff: [u16; NumaEvent::COUNT],
    /// NUMA events counted per CPU (`NumaStats::PerCpu`).
    numa_events: [u64; NumaEvent::COUNT],
    /// Pages allocated and freed through this pageset (vm events `pgalloc_<zone>`, `pgfree`).
    pgalloc_pages: u64,
    pgfree_pages: u64,
}

impl CpuZoneStats {
    /// Counts an allocation of `pages` that landed as `placement` says (mirrors
    /// zone_statistics() and __count_zone_vm_events(PGALLOC)) in the mode of the counters
    /// `target` names. Cost with per-CPU counters (mainline): a one-byte test and three
    /// increments of this pageset's fields; the threshold modes are out of line.
    #[inline(always)]
    pub fn count_alloc<'a, P: Platform + 'a>(
        &mut self,
        pages: u64,
        placement: NumaPlacement,
        target: FoldTarget<'a, P>,
    ) {
        self.pgalloc_pages += pages;
        // Counter updates: pgalloc, and two NUMA events unless they are off.
        if target.global.numa_per_cpu() {
            target.platform.percpu_counter_updates(3);
            self.numa_events[if placement.hit { NumaEvent::Hit } else { NumaEvent::Miss }.index()] += 1;
            self.numa_events[if placement.local { NumaEvent::Local } else { NumaEvent::Other }.index()] += 1;
        } else if target.global.numa_disabled() {
            target.platform.percpu_counter_updates(1);
        } else {
            target.platform.percpu_counter_updates(3);
            self.count_numa_diffs(placement, &target);
        }
    }

    /// The threshold modes: each event's diff, folded past the threshold.
    #[cold]
    #[inline(never)]
    fn count_numa_diffs<P: Platform>(&mut self, placement: NumaPlacement, target: &FoldTarget<'_, P>) {
        let mode = target.global.numa_mode();
        for event in placement.events() {
            let index = event.index();
            match mode {
                NumaStats::ZoneStat { threshold } => {
                    let threshold = threshold.unwrap_or_else(|| target.zone.stat_threshold());
                    let handed = inc_diff(&mut self.zone_stat_diff[index], threshold);
                    if handed != 0 {
                        target.add_numa(event, i64::from(handed), Some(CounterClass::ZoneStat));
                    }
                }
                NumaStats::SeparateClass { threshold } => {
                    let handed = inc_event_diff(&mut self.numa_class_diff[index], threshold);
                    if handed != 0 {
                        target.add_numa(event, i64::from(handed), Some(CounterClass::Numa));
                    }
                }
                NumaStats::PerCpu | NumaStats::Disabled => unreachable!("counted inline or not at all"),
            }
        }
    }

    /// Counts a free of `pages` through this pageset (mirrors __count_vm_events(PGFREE)).
    #[inline(always)]
    pub fn count_free<P: Platform>(&mut self, pages: u64, platform: &P) {
        self.pgfree_pages += pages;
        platform.percpu_counter_updates(1);
    }

    /// Folds every diff into `target` (mirrors the per-zone step of refresh_cpu_vm_stats());
    /// per-CPU events stay: they fold only when read. Returns the atomic adds made.
    pub fn fold<P: Platform>(&mut self, target: &FoldTarget<'_, P>) -> u32 {
        let mut adds = 0;
        for event in NumaEvent::ALL {
            let zone_stat = fold_diff(&mut self.zone_stat_diff[event.index()]);
            if zone_stat != 0 {
                target.add_numa(event, i64::from(zone_stat), Some(CounterClass::ZoneStat));
                adds += 2;
            }
            let numa_class = core::mem::take(&mut self.numa_class_diff[event.index()]);
            if numa_class != 0 {
                target.add_numa(event, i64::from(numa_class), Some(CounterClass::Numa));
                adds += 2;
            }
        }
        adds
    }

    /// What this CPU holds of `event` that the shared counters do not have yet.
    pub fn numa_unfolded(&self, event: NumaEvent) -> i64 {
        let index = event.index();
        i64::from(self.zone_stat_diff[index]) + i64::from(self.numa_class_diff[index]) + self.numa_events[index] as i64
    }

    pub fn pgalloc_pages(&self) -> u64 {
        self.pgalloc_pages
    }

    pub fn pgfree_pages(&self) -> u64 {
        self.pgfree_pages
    }
}

/// Counts an allocation or a foreign event made outside a pageset, whose CPU's diffs are out
/// of reach: it goes to the shared counters at once, on their lines in the threshold modes
/// (an unbuffered zone_statistics()).
pub fn count_unbuffered<P: Platform>(target: &FoldTarget<'_, P>, events: &[NumaEvent], mode: NumaStats) {
    let class = match mode {
        NumaStats::Disabled => return,
        NumaStats::PerCpu => None,
        NumaStats::ZoneStat { .. } => Some(CounterClass::ZoneStat),
        NumaStats::SeparateClass { .. } => Some(CounterClass::Numa),
    };
    for &event in events {
        target.add_numa(event, 1, class);
    }
}
