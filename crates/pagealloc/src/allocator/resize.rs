//! Zone parameters re-derived when memory goes online or offline: watermarks, lowmem
//! reserves, vmstat thresholds and pageset bounds follow the managed pages, as Linux's
//! online_pages() and offline_pages() call init_per_zone_wmark_min() and
//! zone_pcp_update(). The derivation is the build's (`sizing`), so memory taken offline
//! and brought back leaves every parameter as it was.

use super::build::{pageset_bounds, percpu_drift_mark};
use super::PageAllocator;
use crate::platform::Platform;
use crate::policy::FreePagesCount;
use crate::sizing::{BootSizing, LinuxVersion, MachineSpec, NodeSpec};
use crate::types::MAX_NR_ZONES;
use crate::zone_state::ZoneParams;

impl<P: Platform> PageAllocator<P> {
    /// Re-derives every zone's parameters from its managed pages now (mirrors
    /// init_per_zone_wmark_min(), then zone_pcp_update() for each zone).
    pub(super) fn resize_zones(&self) {
        let mut nodes = crate::table::Table::from_fn(self.nodes.len(), |node| {
            let cpus = self.cpu_node.iter().filter(|&&cpu_node| usize::from(cpu_node) == node).count();
            NodeSpec::new(cpus as u32, [0; MAX_NR_ZONES])
        })
        .expect("as many nodes as the build's");
        for zone in self.zones.iter() {
            let node = &mut nodes[zone.state().node as usize];
            node.managed_pages[zone.state().zone_type.index()] = zone.state().managed_pages();
            node.boot_managed_pages[zone.state().zone_type.index()] = zone.state().managed_pages();
        }
        let spec = MachineSpec { nodes, tunables: self.tunables.clone(), kernel: LinuxVersion::MAINLINE };
        let boot = BootSizing::derive(&spec).expect("the machine derived at build derives again");
        let nr_cpus = self.platform.nr_cpus();
        for zone in self.zones.iter() {
            let after = ZoneParams::from(&boot.zone(&spec, zone.state().node as usize, zone.state().zone_type));
            // The drift mark first: a reader between the two stores compares the old
            // marks against the new mark, never the new marks against an old one.
            if self.policy.vmstat.free_pages == FreePagesCount::PerCpuDiffs {
                zone.state().vmstat.set_percpu_drift_mark(percpu_drift_mark(&after, nr_cpus));
            }
            zone.state().params.store(&after);
            // refresh_zone_stat_thresholds(): the normal threshold, whatever kswapd is
            // doing; its next wake or sleep sets the pressure one again.
            zone.state().set_pressure_threshold(false);
            let bounds = pageset_bounds(zone, &self.policy.pcp, nr_cpus);
            for slot in zone.pcp.iter() {
                crate::pcp::set_bounds(zone.buddy(&self.platform), slot, bounds, &self.policy.pcp);
            }
        }
        // A zone that gained its first memory, or lost its last, changes where walks start.
        for node in self.nodes.iter() {
            node.set_zonelist_starts(&self.zones);
        }
    }
}
