//! The machine an input chooses, built two ways: the `AllocatorBuilder` calls, and the
//! harness's own description of what they build (zones, excluded frames, CPUs per node), which
//! the model is made from instead of from what the allocator reports.

use std::ops::Range;

use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::types::Pfn;
use pagealloc::{AllocatorBuilder, ZoneType};

use super::input::MachineChoice;
use crate::shortcuts::{pc_layout_zones, single_zone_base, PC_LAYOUT_RESERVES};

/// A zone as the harness describes it: node, type and span.
#[derive(Clone, Debug)]
pub struct ZoneSpec {
    pub node: u16,
    pub zone_type: ZoneType,
    pub span: Range<Pfn>,
}

/// The machine as built and as the model sees it: its zones, the excluded (hole or reserved)
/// ranges, and each node's CPUs.
#[derive(Clone, Debug)]
pub struct MachineSpec {
    pub zones: Vec<ZoneSpec>,
    pub excluded: Vec<Range<Pfn>>,
    pub node_cpus: Vec<u32>,
}

impl MachineChoice {
    /// The builder (without policy) and the harness's own description of what it builds.
    pub fn build(&self, cpus: usize) -> (AllocatorBuilder, MachineSpec) {
        match *self {
            MachineChoice::Pc { mib } => pc(mib, cpus),
            MachineChoice::Single { zone_type, pages, reserve } => single(zone_type, pages, reserve, cpus),
            MachineChoice::TwoNodes { split, hole } => two_nodes(split, hole, cpus),
            MachineChoice::Arenas { nodes, pages } => arenas(nodes, pages, cpus),
        }
    }
}

fn pc(mib: u8, cpus: usize) -> (AllocatorBuilder, MachineSpec) {
    let mib = 8 + u64::from(mib % 57);
    let zones =
        pc_layout_zones(mib).into_iter().map(|(zone_type, span)| ZoneSpec { node: 0, zone_type, span }).collect();
    let spec = MachineSpec { zones, excluded: PC_LAYOUT_RESERVES.to_vec(), node_cpus: vec![cpus as u32] };
    (AllocatorBuilder::pc_layout(mib), spec)
}

fn single(zone_type: u8, pages: u16, reserve: u16, cpus: usize) -> (AllocatorBuilder, MachineSpec) {
    let zone_type = ZoneType::ALL[usize::from(zone_type % 4)];
    let base = single_zone_base(zone_type);
    let mut pages = 1 + u64::from(pages % 16384);
    if zone_type == ZoneType::Dma {
        pages = pages.min(DMA32_START_PFN);
    }
    let mut builder = AllocatorBuilder::single_zone(zone_type, pages);
    let mut excluded = Vec::new();
    if reserve != 0 {
        // Up to 64 frames somewhere in the zone, usually unaligned.
        let start = base + u64::from(reserve) % pages;
        let range = start..(start + 1 + u64::from(reserve >> 10)).min(base + pages);
        builder = builder.reserve(range.clone());
        excluded.push(range);
    }
    let zones = vec![ZoneSpec { node: 0, zone_type, span: base..base + pages }];
    (builder, MachineSpec { zones, excluded, node_cpus: vec![cpus as u32] })
}

fn two_nodes(split: u8, hole: u16, cpus: usize) -> (AllocatorBuilder, MachineSpec) {
    let node0 = u32::from(split) % (cpus as u32 + 1);
    let node_cpus = vec![node0, cpus as u32 - node0];
    let normal = NORMAL_START_PFN..NORMAL_START_PFN + 8192;
    let movable = normal.end..normal.end + 4096 + 96;
    let zones = vec![
        ZoneSpec { node: 0, zone_type: ZoneType::Dma, span: 0..DMA32_START_PFN },
        ZoneSpec { node: 0, zone_type: ZoneType::Dma32, span: DMA32_START_PFN..DMA32_START_PFN + 8192 },
        ZoneSpec { node: 1, zone_type: ZoneType::Normal, span: normal },
        ZoneSpec { node: 1, zone_type: ZoneType::Movable, span: movable },
    ];
    let hole_start = DMA32_START_PFN + u64::from(hole) % 8192;
    let hole = hole_start..(hole_start + 37).min(DMA32_START_PFN + 8192);
    let reserve = NORMAL_START_PFN + 3..NORMAL_START_PFN + 700;
    let mut builder = AllocatorBuilder::new().node(node_cpus[0]).node(node_cpus[1]);
    for zone in &zones {
        builder = builder.zone(zone.node, zone.zone_type, zone.span.clone());
    }
    builder = builder.reserve(0..1).hole(hole.clone()).reserve(reserve.clone());
    (builder, MachineSpec { zones, excluded: vec![0..1, hole, reserve], node_cpus })
}

fn arenas(nodes: u8, pages: u16, cpus: usize) -> (AllocatorBuilder, MachineSpec) {
    let nodes = 1 + usize::from(nodes % 2);
    // Two arenas' minimum and a max-order block more, so that a node starting off a
    // max-order boundary still has room for two arenas of at least the minimum each.
    let node_pages = 2 * pagealloc::builder::MIN_ARENA_PAGES + 1024 + u64::from(pages % 8192);
    let node_cpus: Vec<u32> = (0..nodes).map(|node| ((cpus + nodes - 1 - node) / nodes) as u32).collect();
    let mut builder = AllocatorBuilder::new();
    for &node_cpus in &node_cpus {
        builder = builder.node(node_cpus);
    }
    let zones: Vec<ZoneSpec> = (0..nodes)
        .map(|node| {
            let start = NORMAL_START_PFN + node as u64 * node_pages;
            ZoneSpec { node: node as u16, zone_type: ZoneType::Normal, span: start..start + node_pages }
        })
        .collect();
    for zone in &zones {
        builder = builder.zone(zone.node, zone.zone_type, zone.span.clone());
    }
    (builder.reserve(0..1), MachineSpec { zones, excluded: vec![0..1], node_cpus })
}
