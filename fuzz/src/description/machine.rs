//! The description made concrete: what each raw field of the input means (`Description::
//! machine`), and the builder calls a user would write for it (`Description::builder`). The
//! `Machine` is what the checks predict from, independently of what the allocator reports.

use std::ops::Range;

use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::policy::Policy;
use pagealloc::sizing::Tunables;
use pagealloc::types::Pfn;
use pagealloc::{AllocatorBuilder, LastLevelCache, ZoneType};

use super::input::{Description, HighFraction, Layout, Nodes, PolicyDesc, RangeDesc, TunablesDesc, ZoneDesc};
use crate::shortcuts::{pc_layout_zones, single_zone_base, PC_LAYOUT_RESERVES};

const MAX_CPUS: u8 = 8;

/// Where zones and ranges start: both sides of the DMA and DMA32 limits, and beyond 2^32.
pub const BASES: [Pfn; 8] = [
    0,
    0x100,
    DMA32_START_PFN - 0x800,
    DMA32_START_PFN,
    0x4_0000,
    NORMAL_START_PFN - 0x8000,
    NORMAL_START_PFN,
    1 << 32,
];

const INT_MAX: u32 = i32::MAX as u32;

/// The description made concrete: what the builder is given and what the harness expects.
#[derive(Clone, Debug)]
pub struct Machine {
    pub cpus: usize,
    /// (node, type, span) as the builder receives them (shortcut constructors expanded).
    pub zones: Vec<(u16, ZoneType, Range<Pfn>)>,
    pub holes: Vec<Range<Pfn>>,
    pub reserves: Vec<Range<Pfn>>,
    /// Declared nodes, or the CPU map; `None` for neither.
    pub node_cpus: Option<Vec<u32>>,
    pub cpu_map: Option<Vec<u16>>,
    pub policy: Policy,
    pub tunables: Tunables,
    pub llc: Option<LastLevelCache>,
}

impl Description {
    /// What the raw fields mean: the CPUs, zones, ranges, nodes, policy and tunables the
    /// builder is given, with the shortcut constructors' own zones and reservations spelled out.
    pub fn machine(&self) -> Machine {
        let cpus = 1 + usize::from(self.cpus % MAX_CPUS);
        let zones = self.layout.zones();
        let mut holes = Vec::new();
        let mut reserves = Vec::new();
        for (ranges, out) in [(&self.holes, &mut holes), (&self.reserves, &mut reserves)] {
            out.extend(ranges.iter().flatten().map(|range| range.resolve(&zones)));
        }
        if let Layout::PcLayout { .. } = self.layout {
            // pc_layout's own reservations come first (pfn 0, the legacy hole).
            reserves.splice(0..0, PC_LAYOUT_RESERVES);
        }
        let (node_cpus, cpu_map) = match &self.nodes {
            Nodes::Implicit => (None, None),
            Nodes::Split { nodes } => {
                let nodes = 1 + usize::from(nodes % 4);
                let share = |node: usize| (cpus / nodes + usize::from(node < cpus % nodes)) as u32;
                (Some((0..nodes).map(share).collect()), None)
            }
            Nodes::Declared(declared) => {
                (Some(declared.iter().flatten().map(|&cpus| u32::from(cpus % 9)).collect()), None)
            }
            Nodes::CpuMap { len, map } => {
                (None, Some(map[..usize::from(len % 9)].iter().map(|&node| u16::from(node % 4)).collect()))
            }
        };
        let tunables = self.tunables.as_ref().map_or_else(Tunables::default, TunablesDesc::tunables);
        let llc = self.llc.map(|llc| LastLevelCache {
            size_bytes: u64::from(llc.size_kib) * 1024,
            shared_by_cpus: u32::from(llc.shared_by_cpus),
        });
        Machine { cpus, zones, holes, reserves, node_cpus, cpu_map, policy: self.policy.policy(), tunables, llc }
    }

    /// The builder as a user would write it for this description.
    pub fn builder(&self, machine: &Machine) -> AllocatorBuilder {
        let mut builder = match &self.layout {
            Layout::Zones(zones) => zones.iter().flatten().fold(AllocatorBuilder::new(), |builder, zone| {
                let (node, zone_type, span) = zone.resolve();
                builder.zone(node, zone_type, span)
            }),
            Layout::SingleZone { zone_type, pages } => {
                AllocatorBuilder::single_zone(zone_type_of(*zone_type), pages.frames())
            }
            Layout::PcLayout { mib } => AllocatorBuilder::pc_layout(mib.mib()),
        };
        // The layout's own reservations are in `machine.reserves` already; add the rest.
        let own_reserves = if let Layout::PcLayout { .. } = self.layout { PC_LAYOUT_RESERVES.len() } else { 0 };
        for hole in &machine.holes {
            builder = builder.hole(hole.clone());
        }
        for reserve in &machine.reserves[own_reserves..] {
            builder = builder.reserve(reserve.clone());
        }
        if let Some(node_cpus) = &machine.node_cpus {
            for &cpus in node_cpus {
                builder = builder.node(cpus);
            }
        }
        if let Some(map) = &machine.cpu_map {
            builder = builder.cpu_node_map(map.clone());
        }
        if let Some(llc) = machine.llc {
            builder = builder.last_level_cache(llc);
        }
        builder.policy(machine.policy).tunables(machine.tunables.clone())
    }
}

fn zone_type_of(raw: u8) -> ZoneType {
    ZoneType::ALL[usize::from(raw) % ZoneType::ALL.len()]
}

impl Layout {
    /// The zones the builder receives, shortcut constructors expanded as they document.
    fn zones(&self) -> Vec<(u16, ZoneType, Range<Pfn>)> {
        match self {
            Layout::Zones(zones) => zones.iter().flatten().map(ZoneDesc::resolve).collect(),
            Layout::SingleZone { zone_type, pages } => {
                let zone_type = zone_type_of(*zone_type);
                let base = single_zone_base(zone_type);
                vec![(0, zone_type, base..base.saturating_add(pages.frames()))]
            }
            Layout::PcLayout { mib } => {
                pc_layout_zones(mib.mib()).into_iter().map(|(zone_type, span)| (0, zone_type, span)).collect()
            }
        }
    }
}

impl ZoneDesc {
    fn resolve(&self) -> (u16, ZoneType, Range<Pfn>) {
        let start = BASES[usize::from(self.base % 8)] + u64::from(self.offset);
        (u16::from(self.node % 5), zone_type_of(self.zone_type), start..start.saturating_add(self.pages.frames()))
    }
}

impl RangeDesc {
    fn resolve(&self, zones: &[(u16, ZoneType, Range<Pfn>)]) -> Range<Pfn> {
        let anchor = if self.anchor % 12 < 4 {
            zones.get(usize::from(self.anchor % 4)).map_or(0, |zone| zone.2.start)
        } else {
            BASES[usize::from(self.anchor % 8)]
        };
        let start = anchor.saturating_add(u64::from(self.start));
        let end = (i128::from(start) + i128::from(self.len)).clamp(0, i128::from(u64::MAX)) as u64;
        start..end
    }
}

impl PolicyDesc {
    fn policy(&self) -> Policy {
        let presets = pagealloc::presets::PRESETS;
        let mut policy = presets[usize::from(self.preset) % presets.len()].policy;
        let pcp = &mut policy.pcp;
        if let Some(enabled) = self.enabled {
            pcp.enabled = enabled;
        }
        if let Some(order) = self.max_cached_order {
            pcp.max_cached_order = order % 6;
        }
        if let Some(lists) = self.thp_lists {
            pcp.thp_lists = lists % 4;
        }
        if let Some(scale) = self.batch_scale_max {
            pcp.batch_scale_max = scale.map(|scale| scale % 8);
        }
        if let Some(batch) = self.batch_override {
            pcp.batch_override = Some(batch.pages());
        }
        if let Some(high) = self.high_override {
            pcp.high_override = Some(high.pages());
        }
        policy
    }
}

impl TunablesDesc {
    fn tunables(&self) -> Tunables {
        Tunables {
            min_free_kbytes: self.min_free_kbytes.map(|kbytes| u64::from(kbytes & INT_MAX)),
            thp: self.thp,
            watermark_scale_factor: 1 + u32::from(self.watermark_scale_factor) % 3000,
            watermark_boost_factor: self.watermark_boost_factor & INT_MAX,
            percpu_pagelist_high_fraction: match self.high_fraction {
                HighFraction::Zero => 0,
                HighFraction::Small(fraction) => u32::from(fraction % 16),
                HighFraction::Raw(fraction) => fraction & INT_MAX,
            },
            lowmem_reserve_ratio: self.lowmem_reserve_ratio.map(|ratio| ratio & INT_MAX),
            stat_interval_ms: 1 + u32::from(self.stat_interval_ms),
            // Compaction acts only with a Migrate client, which the fuzz targets do not register.
            ..Tunables::default()
        }
    }
}
