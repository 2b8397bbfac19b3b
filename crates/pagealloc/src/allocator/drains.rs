//! Explicit pageset drains: this CPU's, every CPU's, and one CPU's (mirrors
//! drain_local_pages(), drain_all_pages(), and drain_pages() as page_alloc_cpu_dead()
//! calls it: cpu_hotplug.rs); and the releases of frees handed to a zone's owner, and of
//! parked frees, that a failing request and kswapd make.

use super::PageAllocator;
use crate::pcp::{self, DrainCause};
use crate::platform::Platform;

impl<P: Platform> PageAllocator<P> {
    /// Empties `cpu`'s pagesets in every zone; returns pages drained.
    pub(super) fn drain_cpu_pagesets(&self, cpu: usize, cause: DrainCause) -> u64 {
        self.zones
            .iter()
            .filter_map(|zone| zone.pcp.get(cpu).map(|slot| (zone, slot)))
            .map(|(zone, slot)| pcp::drain_pcp(zone.buddy(&self.platform), slot, &self.policy.pcp, cause) as u64)
            .sum()
    }

    /// Drains every CPU's pageset of one zone (mirrors drain_all_pages(zone), as kcompactd
    /// calls it after a run that ended Complete). Returns pages drained.
    pub(super) fn drain_zone(&self, zone: &crate::zone::Zone<P>) -> u64 {
        let drained = zone
            .pcp
            .iter()
            .map(|slot| pcp::drain_pcp(zone.buddy(&self.platform), slot, &self.policy.pcp, DrainCause::Explicit) as u64)
            .sum();
        zone.buddy(&self.platform).release_handed_over();
        zone.buddy(&self.platform).collect_parked();
        drained
    }

    /// Releases the frees other arenas' CPUs handed to the zones of `zonelist` up to
    /// `highest_zone` (`DrainBeyondLinux::hand_remote_frees`): for a request about to fail,
    /// as direct reclaim drains every pageset before its last try (mirrors the
    /// drain_all_pages() of __alloc_pages_direct_reclaim()), and one that may not reclaim
    /// too, since these pages need no other CPU's help. Whether any were pending.
    pub(super) fn release_handed_over_in(&self, zonelist: &[u16], highest_zone: crate::types::ZoneType) -> bool {
        let zones = zonelist.iter().map(|&index| &self.zones[index as usize]);
        let mut released = false;
        for zone in zones.filter(|zone| zone.state().zone_type <= highest_zone) {
            released |= zone.buddy(&self.platform).release_handed_over();
            released |= zone.buddy(&self.platform).collect_parked();
        }
        released
    }

    /// Gives the parked frees of the zones of `zonelist` up to `highest_zone` to the buddy
    /// (`FragBeyondLinux::parked_frees`), for a request whose fast walk failed: before it
    /// wakes kswapd, since these pages are free already. Whether any came back.
    pub(super) fn collect_parked_in(&self, zonelist: &[u16], highest_zone: crate::types::ZoneType) -> bool {
        let zones = zonelist.iter().map(|&index| &self.zones[index as usize]);
        let mut collected = false;
        for zone in zones.filter(|zone| zone.state().zone_type <= highest_zone) {
            collected |= zone.buddy(&self.platform).collect_parked();
        }
        collected
    }

    /// A zone below its watermark may be holding free pages parked in its pageblocks
    /// (`FragBeyondLinux::parked_frees`), which the watermark does not count: they all go
    /// to the buddy. Whether any did.
    #[cold]
    #[inline(never)]
    pub(super) fn collect_parked_for_room(&self, zone: &crate::zone::Zone<P>) -> bool {
        self.policy.frag.beyond_linux.parked_frees && zone.buddy(&self.platform).collect_parked()
    }

    /// Releases the frees handed to `node`'s zones, so that kswapd judges the node's
    /// balance, and sizes its reclaim, on pages already free.
    pub(super) fn release_node_handed_over(&self, node: u16) {
        for zone in self.zones.iter().filter(|zone| zone.state().node == node) {
            zone.buddy(&self.platform).release_handed_over();
            zone.buddy(&self.platform).collect_parked();
        }
    }
}
