//! Counters summed over zones and CPUs: pages managed, free and cached, fallback events,
//! pageset and zone-lock counters.

use super::PageAllocator;
use crate::events::ExtfragStats;
use crate::free_area::ZoneCounters;
use crate::pcp::PcpCounters;
use crate::platform::Platform;
use crate::sync::LockStats;
use crate::types::ZoneType;
use crate::vmstat::NumaEvent;

impl<P: Platform> PageAllocator<P> {
    /// The body of [`crate::Counters::managed_pages`].
    pub(crate) fn managed_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.state().managed_pages()).sum()
    }

    /// The body of [`crate::Counters::buddy_free_pages`].
    pub(crate) fn buddy_free_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.free_pages_signed()).sum::<i64>().max(0) as u64
    }

    /// The body of [`crate::Counters::extfrag_stats`].
    pub(crate) fn extfrag_stats(&self) -> ExtfragStats {
        let mut total = ExtfragStats::default();
        for zone in self.zones.iter() {
            total += zone.state().extfrag.snapshot();
        }
        total
    }

    /// The body of [`crate::Counters::pcp_pages`].
    pub(crate) fn pcp_pages(&self) -> u64 {
        self.zones.iter().map(|zone| self.zone_pcp_pages(zone)).sum()
    }

    /// Pages held in one zone's pagesets now, over all CPUs, those its stack of handed-over
    /// frees holds, and those parked in its pageblocks: out of the buddy on their way back
    /// to it.
    pub(super) fn zone_pcp_pages(&self, zone: &crate::zone::Zone<P>) -> u64 {
        let held = |slot: &crate::pcp::PcpSlot<P>| {
            slot.inspect(&self.platform, |p| u64::from(p.count_pages() + p.buddy_bound_pages()))
        };
        zone.pcp.iter().map(held).sum::<u64>() + u64::from(zone.handed_over_pages()) + zone.parked_pages()
    }

    /// The body of [`crate::Counters::parked_pages`].
    pub(crate) fn parked_pages(&self) -> u64 {
        self.zones.iter().map(|zone| zone.parked_pages()).sum()
    }

    /// The body of [`crate::Counters::handed_over_pages`].
    pub(crate) fn handed_over_pages(&self) -> u64 {
        self.zones.iter().map(|zone| u64::from(zone.handed_over_pages())).sum()
    }

    /// The body of [`crate::Counters::pcp_counters`].
    pub(crate) fn pcp_counters(&self) -> PcpCounters {
        let mut total = PcpCounters::default();
        for slot in self.zones.iter().flat_map(|zone| zone.pcp.iter()) {
            total += slot.inspect(&self.platform, |p| p.counters());
        }
        total
    }

    /// The body of [`crate::Counters::zone_counters`].
    pub(crate) fn zone_counters(&self) -> ZoneCounters {
        let mut total = ZoneCounters::default();
        for zone in self.zones.iter() {
            total += zone.with_free_area(&self.platform, |area| area.counters());
        }
        total
    }

    /// The body of [`crate::Counters::numa_event`].
    pub(crate) fn numa_event(&self, event: NumaEvent) -> u64 {
        let mut total = 0i64;
        for zone in self.zones.iter() {
            total += zone.state().vmstat.numa_folded(event);
            for slot in zone.pcp.iter() {
                total += slot.inspect(&self.platform, |p| p.stats().numa_unfolded(event));
            }
        }
        debug_assert!(total >= 0, "{event:?} counted {total}");
        total.max(0) as u64
    }

    /// The body of [`crate::Counters::pgalloc_pages`].
    pub(crate) fn pgalloc_pages(&self, zone_type: ZoneType) -> u64 {
        self.zones
            .iter()
            .filter(|zone| zone.state().zone_type == zone_type)
            .map(|zone| {
                let cpus: u64 =
                    zone.pcp.iter().map(|slot| slot.inspect(&self.platform, |p| p.stats().pgalloc_pages())).sum();
                zone.state().vmstat.pgalloc_unbatched_pages() + cpus
            })
            .sum()
    }

    /// The body of [`crate::Counters::pgfree_pages`].
    pub(crate) fn pgfree_pages(&self) -> u64 {
        self.zones
            .iter()
            .map(|zone| {
                let cpus: u64 =
                    zone.pcp.iter().map(|slot| slot.inspect(&self.platform, |p| p.stats().pgfree_pages())).sum();
                // A parked page counts as freed when it leaves for the buddy; until then, here.
                zone.state().vmstat.pgfree_unbatched_pages() + cpus + zone.parked_pages()
            })
            .sum()
    }

    /// The body of [`crate::Counters::zone_lock_stats`].
    pub(crate) fn zone_lock_stats(&self) -> LockStats {
        let mut total = LockStats::default();
        for zone in self.zones.iter() {
            total += zone.core.lock.stats();
        }
        total
    }
}
