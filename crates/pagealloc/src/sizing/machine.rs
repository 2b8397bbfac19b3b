//! A machine description (CPUs and managed pages per node and zone) and every parameter the
//! kernel derives from it, in boot order: min_free_kbytes, watermarks, the THP raise,
//! lowmem reserves, per-CPU pageset bounds, vmstat thresholds.

use core::fmt;

use super::{
    lowmem_reserves, min_free_kbytes_for_lowmem, normal_stat_threshold, pcp_high_bounds, pressure_stat_threshold,
    thp_recommended_min_free_kbytes, zone_watermarks, LinuxVersion, PcpBounds, Tunables, Watermarks,
};
use crate::table::{Table, FIXED_NODES, FIXED_ZONES};
use crate::types::{ZoneType, MAX_NR_ZONES};

/// One NUMA node: its CPUs and the managed pages of each zone type (index = `ZoneType`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSpec {
    pub cpus: u32,
    /// Managed pages now (what /proc/zoneinfo prints as `managed`).
    pub managed_pages: [u64; MAX_NR_ZONES],
    /// Managed pages when the kernel sized watermarks and pagesets at boot, before initrd and
    /// init memory were freed; usually a little below `managed_pages`.
    pub boot_managed_pages: [u64; MAX_NR_ZONES],
}

impl NodeSpec {
    /// A node whose managed pages did not change after boot sizing.
    pub fn new(cpus: u32, managed_pages: [u64; MAX_NR_ZONES]) -> NodeSpec {
        NodeSpec { cpus, managed_pages, boot_managed_pages: managed_pages }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineSpec {
    /// At most [`FIXED_NODES`] without the `alloc` feature.
    pub nodes: Table<NodeSpec, FIXED_NODES>,
    pub tunables: Tunables,
    /// Whose rules to follow where Linux releases differ.
    pub kernel: LinuxVersion,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizingError {
    NoNodes,
    NoCpus,
    /// ZONE_DEVICE memory is never managed by the page allocator.
    DeviceZoneManaged {
        node: usize,
    },
    /// percpu_pagelist_high_fraction must be 0 or >= 8.
    HighFractionRejected(u32),
}

impl core::error::Error for SizingError {}

impl fmt::Display for SizingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizingError::NoNodes => write!(f, "the machine has no nodes"),
            SizingError::NoCpus => write!(f, "the machine has no CPUs"),
            SizingError::DeviceZoneManaged { node } => {
                write!(f, "node {node}: the Device zone cannot have managed pages")
            }
            SizingError::HighFractionRejected(value) => write!(
                f,
                "percpu_pagelist_high_fraction {value} rejected: use 0 or a value >= {}",
                Tunables::MIN_PERCPU_PAGELIST_HIGH_FRACTION
            ),
        }
    }
}

/// Everything derived for one zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneSizing {
    pub node: usize,
    pub zone_type: ZoneType,
    pub managed_pages: u64,
    pub watermarks: Watermarks,
    /// Protection against requests whose highest zone is each zone type.
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    pub pcp: PcpBounds,
    /// vmstat fold threshold while memory is not under pressure.
    pub stat_threshold: u32,
    /// vmstat fold threshold while kswapd is awake for the node.
    pub pressure_stat_threshold: u32,
}

impl Default for ZoneSizing {
    fn default() -> Self {
        ZoneSizing {
            node: 0,
            zone_type: ZoneType::Dma,
            managed_pages: 0,
            watermarks: Watermarks::default(),
            lowmem_reserve: [0; MAX_NR_ZONES],
            pcp: PcpBounds::default(),
            stat_threshold: 0,
            pressure_stat_threshold: 0,
        }
    }
}

impl ZoneSizing {
    pub fn is_populated(&self) -> bool {
        self.managed_pages > 0
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSizing {
    pub min_free_kbytes: u64,
    pub online_cpus: u32,
    /// Every zone type of every node, node-major, in zone-type order (as /proc/zoneinfo).
    pub zones: Table<ZoneSizing, FIXED_ZONES>,
}

impl MachineSizing {
    pub fn derive(spec: &MachineSpec) -> Result<MachineSizing, SizingError> {
        let boot = BootSizing::derive(spec)?;
        let mut sizing =
            MachineSizing { min_free_kbytes: boot.min_free_kbytes, online_cpus: boot.online_cpus, zones: Table::new() };
        for node in 0..spec.nodes.len() {
            for zone_type in ZoneType::ALL {
                let pushed = sizing.zones.push(boot.zone(spec, node, zone_type));
                pushed.expect("the zones of at most FIXED_NODES nodes");
            }
        }
        Ok(sizing)
    }

    pub fn zone(&self, node: usize, zone_type: ZoneType) -> Option<&ZoneSizing> {
        self.zones.get(node * MAX_NR_ZONES + zone_type.index())
    }
}

/// What the whole machine's sizing starts from; each zone's follows from it alone
/// ([`Self::zone`]), so a build places the zones' sizings one at a time, with no table of
/// them on the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootSizing {
    pub min_free_kbytes: u64,
    pub online_cpus: u32,
}

impl BootSizing {
    /// min_free_kbytes and the online CPUs of `spec`, checked; [`Self::zone`] gives each
    /// zone's sizing from them, as [`MachineSizing::derive`] does for all of them.
    ///
    /// ```
    /// use pagealloc::sizing::{BootSizing, MachineSizing, MachineSpec, NodeSpec};
    /// use pagealloc::table::Table;
    /// use pagealloc::ZoneType;
    /// let nodes = Table::from_slice(&[NodeSpec::new(4, [3_977, 765_000, 7_400_000, 0, 0])]).unwrap();
    /// let spec = MachineSpec { nodes, ..Default::default() };
    /// let boot = BootSizing::derive(&spec).unwrap();
    /// let normal = boot.zone(&spec, 0, ZoneType::Normal);
    /// assert_eq!(Some(&normal), MachineSizing::derive(&spec).unwrap().zone(0, ZoneType::Normal));
    /// ```
    pub fn derive(spec: &MachineSpec) -> Result<BootSizing, SizingError> {
        let online_cpus = validate(spec)?;
        Ok(BootSizing { min_free_kbytes: boot_min_free_kbytes(spec), online_cpus })
    }

    /// One zone's sizing beside its watermarks: lowmem reserves, per-CPU pageset bounds and
    /// vmstat thresholds (`node` must be one of `spec`'s).
    pub fn zone(&self, spec: &MachineSpec, node_index: usize, zone_type: ZoneType) -> ZoneSizing {
        let tunables = &spec.tunables;
        let kernel = spec.kernel;
        let online_cpus = self.online_cpus;
        let node = &spec.nodes[node_index];
        let reserve_basis =
            if kernel.lowmem_reserve_tracks_managed() { &node.managed_pages } else { &node.boot_managed_pages };
        let reserves =
            lowmem_reserves(reserve_basis, &tunables.lowmem_reserve_ratio, kernel.lowmem_reserve_skips_empty_upper());
        let boot_managed = node.boot_managed_pages[zone_type.index()];
        let zone_watermarks = zone_watermarks_of(spec, self.min_free_kbytes, node_index, zone_type);
        let mut pcp = pcp_high_bounds(tunables, boot_managed, zone_watermarks.low_pages, node.cpus, online_cpus);
        if !kernel.pcp_high_autotuned() {
            // One static high: the low-watermark (or fraction) share.
            pcp.high_max_pages = pcp.high_min_pages;
        }
        ZoneSizing {
            node: node_index,
            zone_type,
            managed_pages: node.managed_pages[zone_type.index()],
            watermarks: zone_watermarks,
            lowmem_reserve: reserves[zone_type.index()],
            pcp,
            stat_threshold: normal_stat_threshold(boot_managed, online_cpus),
            pressure_stat_threshold: pressure_stat_threshold(
                zone_watermarks.low_pages,
                zone_watermarks.min_pages,
                online_cpus,
            ),
        }
    }
}

/// Checks that `spec` describes a machine the kernel would size; returns its online CPUs.
fn validate(spec: &MachineSpec) -> Result<u32, SizingError> {
    if spec.nodes.is_empty() {
        return Err(SizingError::NoNodes);
    }
    let online_cpus: u32 = spec.nodes.iter().map(|node| node.cpus).sum();
    if online_cpus == 0 {
        return Err(SizingError::NoCpus);
    }
    if let Some(node) = spec.nodes.iter().position(|n| n.managed_pages[ZoneType::Device.index()] != 0) {
        return Err(SizingError::DeviceZoneManaged { node });
    }
    let fraction = spec.tunables.percpu_pagelist_high_fraction;
    if fraction != 0 && fraction < Tunables::MIN_PERCPU_PAGELIST_HIGH_FRACTION {
        return Err(SizingError::HighFractionRejected(fraction));
    }
    Ok(online_cpus)
}

/// min_free_kbytes (the sysctl, or computed from lowmem, then the THP raise), from boot
/// managed pages; [`zone_watermarks_of`] gives each zone's watermarks from it. No table of
/// watermarks is kept: without `alloc` each would be a fixed array on the stack.
fn boot_min_free_kbytes(spec: &MachineSpec) -> u64 {
    let tunables = &spec.tunables;
    let boot_pages = |node: usize, zone_type: ZoneType| spec.nodes[node].boot_managed_pages[zone_type.index()];
    let all_zones =
        || (0..spec.nodes.len()).flat_map(|node| ZoneType::ALL.into_iter().map(move |zone_type| (node, zone_type)));
    // nr_free_buffer_pages(): zones up to Normal, less their high watermark.
    let free_buffer_pages = |min_free_kbytes: Option<u64>| -> u64 {
        all_zones()
            .filter(|&(_, zone_type)| zone_type.is_lowmem())
            .map(|(node, zone_type)| {
                let high_pages =
                    min_free_kbytes.map_or(0, |kbytes| zone_watermarks_of(spec, kbytes, node, zone_type).high_pages);
                boot_pages(node, zone_type).saturating_sub(high_pages)
            })
            .sum()
    };

    // At boot the watermarks are still zero.
    let min_free_kbytes =
        tunables.min_free_kbytes.unwrap_or_else(|| min_free_kbytes_for_lowmem(free_buffer_pages(None)));
    if tunables.thp && tunables.min_free_kbytes.is_none() {
        // khugepaged starts after the first watermark setup, so its 5% cap sees lowmem
        // minus each zone's high watermark.
        let populated_lowmem_zones = all_zones().filter(|&(n, z)| z.is_lowmem() && boot_pages(n, z) > 0).count() as u64;
        let recommended =
            thp_recommended_min_free_kbytes(populated_lowmem_zones, free_buffer_pages(Some(min_free_kbytes)));
        return recommended.max(min_free_kbytes);
    }
    min_free_kbytes
}

/// A zone's watermarks under `min_free_kbytes`, from boot managed pages.
fn zone_watermarks_of(spec: &MachineSpec, min_free_kbytes: u64, node: usize, zone_type: ZoneType) -> Watermarks {
    let kernel = spec.kernel;
    let shares_min_free = |zone_type: ZoneType| {
        zone_type.is_lowmem() || (zone_type == ZoneType::Movable && kernel.movable_shares_min_free())
    };
    let lowmem_managed_pages: u64 = spec
        .nodes
        .iter()
        .flat_map(|node| {
            ZoneType::ALL.into_iter().filter(|&z| shares_min_free(z)).map(|z| node.boot_managed_pages[z.index()])
        })
        .sum();
    zone_watermarks(
        min_free_kbytes,
        zone_type,
        spec.nodes[node].boot_managed_pages[zone_type.index()],
        lowmem_managed_pages,
        spec.tunables.watermark_scale_factor,
        kernel.movable_shares_min_free(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_node(cpus: u32, dma: u64, dma32: u64, normal: u64) -> MachineSpec {
        MachineSpec {
            nodes: Table::from_slice(&[NodeSpec::new(cpus, [dma, dma32, normal, 0, 0])]).unwrap(),
            tunables: Tunables::default(),
            kernel: LinuxVersion::MAINLINE,
        }
    }

    #[test]
    fn computed_min_free_kbytes_splits_by_zone_size() {
        let spec = one_node(4, 3_977, 765_000, 7_400_000);
        let sizing = MachineSizing::derive(&spec).unwrap();
        let lowmem = 3_977 + 765_000 + 7_400_000u64;
        assert_eq!(sizing.min_free_kbytes, crate::sizing::int_sqrt(lowmem * 4 * 16));
        let pages_min = sizing.min_free_kbytes / 4;
        let normal = sizing.zone(0, ZoneType::Normal).unwrap();
        assert_eq!(normal.watermarks.min_pages, pages_min * 7_400_000 / lowmem);
        assert_eq!(normal.pcp.high_min_pages, normal.watermarks.low_pages / 4);
        assert_eq!(sizing.zones.len(), MAX_NR_ZONES);
        let movable = sizing.zone(0, ZoneType::Movable).unwrap();
        assert_eq!(movable.watermarks.min_pages, 32);
        assert_eq!(normal.stat_threshold, 2 * 3 * (1 + 8));
    }

    #[test]
    fn thp_raise_on_a_large_machine_is_the_familiar_67584_kb() {
        let mut spec = one_node(8, 3_977, 765_000, 7_400_000);
        spec.tunables.thp = true;
        assert_eq!(MachineSizing::derive(&spec).unwrap().min_free_kbytes, 67_584);
    }

    /// A public /proc/zoneinfo sample (one node, THP on): min_free_kbytes 67584, DMA min 8,
    /// protection rows as printed.
    #[test]
    fn matches_a_published_zoneinfo_sample() {
        let mut spec = one_node(8, 3_973, 464_142, 7_726_451);
        spec.tunables.thp = true;
        let sizing = MachineSizing::derive(&spec).unwrap();
        assert_eq!(sizing.min_free_kbytes, 67_584);
        assert_eq!(sizing.zone(0, ZoneType::Dma).unwrap().watermarks.min_pages, 8);
        assert_eq!(sizing.zone(0, ZoneType::Dma).unwrap().lowmem_reserve, [0, 1_813, 31_994, 31_994, 31_994]);
        assert_eq!(sizing.zone(0, ZoneType::Dma32).unwrap().lowmem_reserve, [0, 0, 30_181, 30_181, 30_181]);
        spec.kernel = LinuxVersion::new(6, 11);
        let sizing = MachineSizing::derive(&spec).unwrap();
        assert_eq!(sizing.zone(0, ZoneType::Dma).unwrap().lowmem_reserve, [0, 1_813, 31_994, 0, 0]);
    }

    #[test]
    fn boot_managed_pages_size_watermarks_final_ones_are_printed() {
        let mut spec = one_node(4, 3_977, 765_000, 7_400_000);
        let boot = MachineSizing::derive(&spec).unwrap();
        spec.nodes[0].managed_pages[ZoneType::Normal.index()] += 5_000;
        let later = MachineSizing::derive(&spec).unwrap();
        let (before, after) = (boot.zone(0, ZoneType::Normal).unwrap(), later.zone(0, ZoneType::Normal).unwrap());
        assert_eq!(before.watermarks, after.watermarks);
        assert_eq!(after.managed_pages, 7_405_000);
        // Linux >= 6.13 recomputes lowmem_reserve from current managed pages.
        let dma32 = later.zone(0, ZoneType::Dma32).unwrap();
        assert_eq!(dma32.lowmem_reserve[ZoneType::Normal.index()], 7_405_000 / 256);
    }

    #[test]
    fn thp_raises_min_free_kbytes_on_small_machines_only() {
        let small = one_node(2, 3_977, 500_000, 0);
        let plain = MachineSizing::derive(&small).unwrap();
        let mut thp = small.clone();
        thp.tunables.thp = true;
        let raised = MachineSizing::derive(&thp).unwrap();
        assert_eq!(raised.min_free_kbytes, 2 * 11 * 512 * 4);
        assert!(raised.min_free_kbytes > plain.min_free_kbytes);
    }

    #[test]
    fn rejects_bad_descriptions() {
        assert_eq!(MachineSizing::derive(&MachineSpec::default()), Err(SizingError::NoNodes));
        assert_eq!(MachineSizing::derive(&one_node(0, 1, 1, 1)), Err(SizingError::NoCpus));
        let mut spec = one_node(1, 1, 1, 1);
        spec.tunables.percpu_pagelist_high_fraction = 3;
        assert_eq!(MachineSizing::derive(&spec), Err(SizingError::HighFractionRejected(3)));
    }
}
