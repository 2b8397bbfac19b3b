//! Zone parameters re-derived when memory goes online or offline: watermarks, lowmem
//! reserves, vmstat thresholds and pageset bounds follow the managed pages, as Linux's
//! online_pages() and offline_pages() call init_per_zone_wmark_min() and
//! zone_pcp_update(). The derivation is the build's (`sizing`), so memory taken offline
//! and brought back leaves every parameter as it was.

use alloc::vec::Vec;

use super::build::{pageset_bounds, percpu_drift_mark};
use super::PageAllocator;
use crate::platform::Platform;
use crate::policy::FreePagesCount;
use crate::sizing::{LinuxVersion, MachineSizing, MachineSpec, NodeSpec};
use crate::types::MAX_NR_ZONES;
use crate::zone_state::ZoneParams;

impl<P: Platform> PageAllocator<P> {
    /// Re-derives every zone's parameters from its managed pages now (mirrors
    /// init_per_zone_wmark_min(), then zone_pcp_update() for each zone).
    pub(super) fn resize_zones(&self) {
        let mut nodes: Vec<NodeSpec> = (0..self.nodes.len())
            .map(|node| {
                let cpus = self.cpu_node.iter().filter(|&&cpu_node| usize::from(cpu_node) == node).count();
                NodeSpec::new(cpus as u32, [0; MAX_NR_ZONES])
            })
            .collect();
        for zone in self.zones.iter() {
            let node = &mut nodes[zone.node as usize];
            node.managed_pages[zone.zone_type.index()] = zone.managed_pages();
            node.boot_managed_pages[zone.zone_type.index()] = zone.managed_pages();
        }
        let spec = MachineSpec { nodes, tunables: self.tunables.clone(), kernel: LinuxVersion::MAINLINE };
        let sizing = MachineSizing::derive(&spec).expect("the machine derived at build derives again");
        let nr_cpus = self.platform.nr_cpus();
        for zone in self.zones.iter() {
            let zone_sizing = sizing.zone(zone.node as usize, zone.zone_type).expect("a derived zone");
            let before = zone.params();
            let after = ZoneParams::from(zone_sizing);
            zone.params.store(&after);
            // Under reclaim pressure the zone keeps the pressure threshold, at its new value.
            let pressured = zone.vmstat.stat_threshold() == before.pressure_stat_threshold as u16
                && before.pressure_stat_threshold != before.stat_threshold;
            zone.set_pressure_threshold(pressured);
            if self.policy.vmstat.free_pages == FreePagesCount::PerCpuDiffs {
                zone.vmstat.set_percpu_drift_mark(percpu_drift_mark(&after, nr_cpus));
            }
            let bounds = pageset_bounds(zone, &self.policy.pcp, nr_cpus);
            for slot in zone.pcp.iter() {
                crate::pcp::set_bounds(slot, &self.platform, bounds);
            }
        }
    }
}
