//! The `build_description` target: any machine description (zones, holes, reservations,
//! nodes, policy, tunables, cache) gives either a `BuildError` that the description really
//! warrants, or an allocator that passes the invariant checker with a census matching an
//! independent frame-by-frame count, and whose every managed frame can be allocated only once
//! and returned.
//!
//! Sizes are bounded so one execution stays fast: a zone spans at most 2^16 frames, unless
//! it is absurd (at least 2^32 - 1 frames), which the builder must reject before it allocates
//! anything. Tunables stay inside the ranges Linux's sysctls accept.

use std::ops::Range;

use arbitrary::Arbitrary;
use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::platform::TestPlatform;
use pagealloc::policy::Policy;
use pagealloc::sizing::{SizingError, Tunables};
use pagealloc::types::{Pfn, MAX_ORDER};
use pagealloc::{
    AllocError, AllocRequest, AllocatorBuilder, BuildError, LastLevelCache, MigrateType, PageAllocator, ZoneType,
};

use crate::encode::{variant, Encode};

pub const MAX_ZONES: usize = 4;
pub const MAX_RANGES: usize = 4;
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

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Description {
    /// Platform CPUs: 1 + cpus % 8.
    pub cpus: u8,
    pub layout: Layout,
    pub holes: [Option<RangeDesc>; MAX_RANGES],
    pub reserves: [Option<RangeDesc>; MAX_RANGES],
    pub nodes: Nodes,
    pub policy: PolicyDesc,
    pub tunables: Option<TunablesDesc>,
    pub llc: Option<LlcDesc>,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `AllocatorBuilder::zone` calls.
    Zones([Option<ZoneDesc>; MAX_ZONES]),
    /// `AllocatorBuilder::single_zone(ZoneType::ALL[zone_type % 5], pages)`.
    SingleZone { zone_type: u8, pages: Pages },
    /// `AllocatorBuilder::pc_layout(mib)`.
    PcLayout { mib: Mib },
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct ZoneDesc {
    /// node % 5: at most 4 nodes are declared, so 4 is always unknown.
    pub node: u8,
    /// `ZoneType::ALL[zone_type % 5]`, Device included.
    pub zone_type: u8,
    /// Start: `BASES[base % 8] + offset`.
    pub base: u8,
    pub offset: u16,
    pub pages: Pages,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// 0..=65535 frames.
    Small(u16),
    /// At least 2^32 - 1 frames: rejected, never built.
    Absurd(u64),
}

impl Pages {
    pub fn frames(self) -> u64 {
        match self {
            Pages::Small(pages) => u64::from(pages),
            Pages::Absurd(extra) => u64::from(u32::MAX).saturating_add(extra),
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mib {
    /// small % 257: up to 256 MiB, 2^16 frames.
    Small(u16),
    /// At least 2^25 MiB: a Normal zone of more than 2^32 frames, rejected.
    Absurd(u64),
}

impl Mib {
    pub fn mib(self) -> u64 {
        match self {
            Mib::Small(mib) => u64::from(mib) % 257,
            Mib::Absurd(extra) => (1u64 << 25).saturating_add(extra),
        }
    }
}

/// A hole or reservation: `anchor + start .. anchor + start + len`, clamped to `0..=u64::MAX`;
/// a negative `len` makes an inverted range.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeDesc {
    /// anchor % 12 < 4: the start of zone `anchor % 4` (0 if absent); else `BASES[anchor % 8]`.
    pub anchor: u8,
    pub start: u16,
    pub len: i32,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Nodes {
    /// No declaration: node 0 gets every CPU.
    Implicit,
    /// 1 + nodes % 4 nodes, the CPUs dealt out between them (some may get none).
    Split { nodes: u8 },
    /// `node(cpus % 9)` per entry: the sum need not match the platform.
    Declared([Option<u8>; 4]),
    /// `cpu_node_map(map[..len % 9] % 4)`: the length need not match the platform.
    CpuMap { len: u8, map: [u8; 8] },
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct PolicyDesc {
    /// `presets::PRESETS[preset % len]`.
    pub preset: u8,
    pub enabled: Option<bool>,
    /// % 6: 4 and 5 are invalid.
    pub max_cached_order: Option<u8>,
    /// % 4: 3 is invalid.
    pub thp_lists: Option<u8>,
    /// Some(None) unbounds the scale; Some(Some(v)): v % 8, 7 is invalid.
    pub batch_scale_max: Option<Option<u8>>,
    pub batch_override: Option<Override>,
    pub high_override: Option<Override>,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Override {
    Small(u16),
    Raw(u32),
}

impl Override {
    pub fn pages(self) -> u32 {
        match self {
            Override::Small(pages) => u32::from(pages),
            Override::Raw(pages) => pages,
        }
    }
}

/// Tunables inside the sysctls' accepted ranges (ints are at most i32::MAX;
/// watermark_scale_factor is 1..=3000).
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct TunablesDesc {
    pub min_free_kbytes: Option<u32>,
    pub thp: bool,
    pub watermark_scale_factor: u16,
    pub watermark_boost_factor: u32,
    pub high_fraction: HighFraction,
    pub lowmem_reserve_ratio: [u32; 5],
    /// 1 + value.
    pub stat_interval_ms: u16,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HighFraction {
    Zero,
    /// % 16: 1..=7 are rejected.
    Small(u8),
    Raw(u32),
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlcDesc {
    pub size_kib: u32,
    pub shared_by_cpus: u8,
}

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
            reserves.splice(0..0, [0..1, 0xa0..0x100]);
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
        let own_reserves = if let Layout::PcLayout { .. } = self.layout { 2 } else { 0 };
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
                let base = match zone_type {
                    ZoneType::Dma => 0,
                    ZoneType::Dma32 => DMA32_START_PFN,
                    _ => NORMAL_START_PFN,
                };
                vec![(0, zone_type, base..base.saturating_add(pages.frames()))]
            }
            Layout::PcLayout { mib } => {
                // DMA below 16 MiB, DMA32 up to 3 GiB, Normal from 4 GiB for the rest.
                let pages = mib.mib().saturating_mul(256);
                let pci_hole = 3 << 18;
                let mut zones = vec![(0, ZoneType::Dma, 0..pages.min(DMA32_START_PFN))];
                if pages > DMA32_START_PFN {
                    zones.push((0, ZoneType::Dma32, DMA32_START_PFN..pages.min(pci_hole)));
                }
                if pages > pci_hole {
                    zones.push((
                        0,
                        ZoneType::Normal,
                        NORMAL_START_PFN..NORMAL_START_PFN.saturating_add(pages - pci_hole),
                    ));
                }
                zones
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
        }
    }
}

/// Every error the description warrants, derived from the builder's documentation and
/// independent of the order in which it checks. `InvalidPolicy`'s text is not compared.
pub fn expected_errors(machine: &Machine) -> Vec<BuildError> {
    let mut errors = Vec::new();
    if machine.zones.is_empty() {
        errors.push(BuildError::NoZones);
    }
    let node_cpus: Vec<u32> = match (&machine.cpu_map, &machine.node_cpus) {
        (Some(map), _) => {
            if map.len() != machine.cpus {
                errors.push(BuildError::CpuMismatch { node_cpus: map.len() as u32, platform_cpus: machine.cpus });
            }
            let nodes = map.iter().max().map_or(0, |&max| usize::from(max) + 1);
            (0..nodes).map(|node| map.iter().filter(|&&n| usize::from(n) == node).count() as u32).collect()
        }
        (None, Some(declared)) if !declared.is_empty() => declared.clone(),
        _ => vec![machine.cpus as u32],
    };
    let sum: u32 = node_cpus.iter().sum();
    if machine.cpu_map.is_none() && sum as usize != machine.cpus {
        errors.push(BuildError::CpuMismatch { node_cpus: sum, platform_cpus: machine.cpus });
    }
    let pcp = &machine.policy.pcp;
    let too_large = |pages: u32| pages > 1 << 24;
    if pcp.max_cached_order > 3
        || pcp.thp_lists > 2
        || pcp.batch_scale_max.is_some_and(|scale| scale > 6)
        || pcp.batch_override.is_some_and(|batch| batch == 0 || too_large(batch))
        || pcp.high_override.is_some_and(too_large)
    {
        errors.push(BuildError::InvalidPolicy(""));
    }
    for (kind, ranges) in [("hole", &machine.holes), ("reserve", &machine.reserves)] {
        for range in ranges.iter().filter(|range| range.start > range.end) {
            errors.push(BuildError::InvertedRange { kind, range: range.clone() });
        }
    }
    for (i, (node, zone_type, span)) in machine.zones.iter().enumerate() {
        let zone_type = *zone_type;
        if usize::from(*node) >= node_cpus.len() {
            errors.push(BuildError::UnknownNode { node: *node });
        }
        if zone_type == ZoneType::Device {
            errors.push(BuildError::DeviceZone);
        }
        if span.start >= span.end {
            errors.push(BuildError::EmptySpan { zone_type });
        }
        let limit = match zone_type {
            ZoneType::Dma => Some(DMA32_START_PFN),
            ZoneType::Dma32 => Some(NORMAL_START_PFN),
            _ => None,
        };
        if let Some(limit_pfn) = limit.filter(|&limit| span.end > limit) {
            errors.push(BuildError::ZoneAboveLimit { zone_type, end_pfn: span.end, limit_pfn });
        }
        let spanned_pages = span.end.saturating_sub(span.start);
        if spanned_pages >= u64::from(u32::MAX) {
            errors.push(BuildError::ZoneTooLarge { zone_type, spanned_pages });
        }
        for (other_node, other_type, other_span) in &machine.zones[..i] {
            if other_node == node && *other_type == zone_type {
                errors.push(BuildError::DuplicateZone { node: *node, zone_type });
            }
            if other_span.start < span.end && span.start < other_span.end {
                // The builder sorts zones by (node, type) first: either order may be named.
                errors.push(BuildError::Overlap { first: other_span.clone(), second: span.clone() });
                errors.push(BuildError::Overlap { first: span.clone(), second: other_span.clone() });
            }
        }
    }
    let fraction = machine.tunables.percpu_pagelist_high_fraction;
    if fraction != 0 && fraction < Tunables::MIN_PERCPU_PAGELIST_HIGH_FRACTION {
        errors.push(BuildError::Sizing(SizingError::HighFractionRejected(fraction)));
    }
    errors
}

fn same_error(expected: &BuildError, actual: &BuildError) -> bool {
    expected == actual || matches!((expected, actual), (BuildError::InvalidPolicy(_), BuildError::InvalidPolicy(_)))
}

/// Frame-by-frame view of one zone: which frames are holes, which are managed.
struct ZoneFrames {
    zone_type: ZoneType,
    span: Range<Pfn>,
    hole: Vec<bool>,
    managed: Vec<bool>,
    taken: Vec<bool>,
}

impl ZoneFrames {
    fn new(zone_type: ZoneType, span: Range<Pfn>, machine: &Machine) -> ZoneFrames {
        let len = (span.end - span.start) as usize;
        let mut hole = vec![false; len];
        let mut managed = vec![true; len];
        let clip = |range: &Range<Pfn>| {
            let start = range.start.clamp(span.start, span.end);
            let end = range.end.clamp(span.start, span.end);
            (start - span.start) as usize..(end.max(start) - span.start) as usize
        };
        for range in &machine.holes {
            for i in clip(range) {
                hole[i] = true;
                managed[i] = false;
            }
        }
        for range in &machine.reserves {
            for i in clip(range) {
                managed[i] = false;
            }
        }
        ZoneFrames { zone_type, span, hole, managed, taken: vec![false; len] }
    }

    fn count(flags: &[bool]) -> u64 {
        flags.iter().filter(|&&flag| flag).count() as u64
    }
}

/// The target's body.
pub fn run(description: &Description) {
    let machine = description.machine();
    let expected = expected_errors(&machine);
    let built = PageAllocator::build(description.builder(&machine), TestPlatform::new(machine.cpus));
    let allocator = match built {
        Err(error) => {
            assert!(
                expected.iter().any(|e| same_error(e, &error)),
                "build returned {error:?}; the description warrants {expected:?}\n{machine:?}"
            );
            return;
        }
        Ok(allocator) => allocator,
    };
    assert!(expected.is_empty(), "build succeeded; the description warrants {expected:?}\n{machine:?}");
    check_built(&allocator, &machine);
}

fn check_built(allocator: &PageAllocator<TestPlatform>, machine: &Machine) {
    let census = allocator.check_invariants().unwrap_or_else(|v| panic!("after build: {v}\n{machine:?}"));
    let mut zones: Vec<ZoneFrames> =
        machine.zones.iter().map(|(_, zone_type, span)| ZoneFrames::new(*zone_type, span.clone(), machine)).collect();
    let managed: u64 = zones.iter().map(|zone| ZoneFrames::count(&zone.managed)).sum();
    assert_eq!(census.managed_pages, managed, "census vs frames in zones, in no hole and no reservation");
    assert_eq!(census.free_pages, managed, "everything managed is free after the build");
    assert_eq!((census.allocated_pages, census.pcp_pages), (0, 0));
    assert_eq!(allocator.zones().len(), machine.zones.len());
    for zone in allocator.zones() {
        let (i, _) = machine
            .zones
            .iter()
            .enumerate()
            .find(|(_, (node, zone_type, _))| *node == zone.node() && *zone_type == zone.zone_type())
            .unwrap_or_else(|| panic!("zone {zone:?} not described"));
        let frames = &zones[i];
        assert_eq!(zone.start_pfn(), frames.span.start);
        assert_eq!(zone.spanned_pages(), frames.span.end - frames.span.start);
        let len = frames.hole.len() as u64;
        assert_eq!(zone.present_pages(), len - ZoneFrames::count(&frames.hole), "present = spanned - holes");
        assert_eq!(zone.managed_pages(), ZoneFrames::count(&frames.managed), "managed = spanned - holes - reserves");
    }
    let nodes = match (&machine.cpu_map, &machine.node_cpus) {
        (Some(map), _) => map.iter().max().map_or(0, |&max| usize::from(max) + 1),
        (None, Some(declared)) if !declared.is_empty() => declared.len(),
        _ => 1,
    };
    assert_eq!(allocator.nodes().len(), nodes);

    // Allocate everything the watermarks allow, largest blocks first, with reserve access:
    // each block lies on managed frames of a zone its request may use, and no frame twice.
    let movable_atomic = AllocRequest { high_priority: true, may_reclaim: false, ..AllocRequest::USER_MOVABLE };
    let mut held = Vec::new();
    let mut held_pages = 0;
    for order in (0..=MAX_ORDER).rev() {
        for request in [AllocRequest::ATOMIC, movable_atomic] {
            let usable = zones
                .iter()
                .any(|zone| zone.zone_type <= request.highest_zone && zone.managed.iter().any(|&managed| managed));
            for _ in 0..=managed {
                let block = match allocator.alloc_pages(order, request) {
                    Ok(block) => block,
                    Err(AllocError::OutOfMemory { order: failed }) if usable && failed == order => break,
                    Err(AllocError::NoUsableZone { .. }) if !usable => break,
                    Err(error) => panic!("order {order} {request:?}: {error:?}\n{machine:?}"),
                };
                assert_eq!((block.order(), block.allocator_id()), (order, allocator.id()));
                assert_eq!(block.pfn() % block.pages(), 0, "{block:?} misaligned");
                let zone = allocator.zone_of_pfn(block.pfn()).expect("block in a zone");
                assert_eq!(zone.index(), block.zone_index());
                assert!(zone.zone_type() <= request.highest_zone, "{block:?} above {request:?}");
                let frames = zones
                    .iter_mut()
                    .find(|frames| frames.span.contains(&block.pfn()))
                    .expect("block in a described zone");
                assert!(block.pfn() + block.pages() <= frames.span.end, "{block:?} crosses its zone's end");
                let first = (block.pfn() - frames.span.start) as usize;
                for i in first..first + block.pages() as usize {
                    assert!(frames.managed[i], "{block:?}: pfn {:#x} is not managed", frames.span.start + i as u64);
                    assert!(!frames.taken[i], "{block:?}: pfn {:#x} handed out twice", frames.span.start + i as u64);
                    frames.taken[i] = true;
                }
                held_pages += block.pages();
                held.push(block);
            }
        }
    }
    let full = allocator.check_invariants().unwrap_or_else(|v| panic!("after allocating: {v}\n{machine:?}"));
    assert_eq!(full.allocated_pages, held_pages);
    assert_eq!(full.free_pages + full.pcp_pages + full.allocated_pages, managed);
    allocator.free_bulk(held).expect("every block frees");
    allocator.drain_all();
    let after = allocator.check_invariants().unwrap_or_else(|v| panic!("after freeing: {v}\n{machine:?}"));
    assert_eq!((after.free_pages, after.allocated_pages, after.pcp_pages), (managed, 0, 0));
    // A non-mergeable type in a request is refused whatever the machine.
    let highatomic = AllocRequest::KERNEL.with_migratetype(MigrateType::HighAtomic);
    assert!(matches!(allocator.alloc_pages(0, highatomic), Err(AllocError::UnsupportedMigratetype { .. })));
}

// Encoders: field by field, in declaration order, as `arbitrary`'s derive decodes.

impl Encode for Description {
    fn encode(&self, out: &mut Vec<u8>) {
        self.cpus.encode(out);
        self.layout.encode(out);
        self.holes.encode(out);
        self.reserves.encode(out);
        self.nodes.encode(out);
        self.policy.encode(out);
        self.tunables.encode(out);
        self.llc.encode(out);
    }
}

impl Encode for Layout {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Layout::Zones(zones) => {
                variant(out, 0, 3);
                zones.encode(out);
            }
            Layout::SingleZone { zone_type, pages } => {
                variant(out, 1, 3);
                zone_type.encode(out);
                pages.encode(out);
            }
            Layout::PcLayout { mib } => {
                variant(out, 2, 3);
                mib.encode(out);
            }
        }
    }
}

impl Encode for ZoneDesc {
    fn encode(&self, out: &mut Vec<u8>) {
        self.node.encode(out);
        self.zone_type.encode(out);
        self.base.encode(out);
        self.offset.encode(out);
        self.pages.encode(out);
    }
}

impl Encode for Pages {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Pages::Small(pages) => {
                variant(out, 0, 2);
                pages.encode(out);
            }
            Pages::Absurd(extra) => {
                variant(out, 1, 2);
                extra.encode(out);
            }
        }
    }
}

impl Encode for Mib {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Mib::Small(mib) => {
                variant(out, 0, 2);
                mib.encode(out);
            }
            Mib::Absurd(extra) => {
                variant(out, 1, 2);
                extra.encode(out);
            }
        }
    }
}

impl Encode for RangeDesc {
    fn encode(&self, out: &mut Vec<u8>) {
        self.anchor.encode(out);
        self.start.encode(out);
        self.len.encode(out);
    }
}

impl Encode for Nodes {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Nodes::Implicit => variant(out, 0, 4),
            Nodes::Split { nodes } => {
                variant(out, 1, 4);
                nodes.encode(out);
            }
            Nodes::Declared(declared) => {
                variant(out, 2, 4);
                declared.encode(out);
            }
            Nodes::CpuMap { len, map } => {
                variant(out, 3, 4);
                len.encode(out);
                map.encode(out);
            }
        }
    }
}

impl Encode for PolicyDesc {
    fn encode(&self, out: &mut Vec<u8>) {
        self.preset.encode(out);
        self.enabled.encode(out);
        self.max_cached_order.encode(out);
        self.thp_lists.encode(out);
        self.batch_scale_max.encode(out);
        self.batch_override.encode(out);
        self.high_override.encode(out);
    }
}

impl Encode for Override {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Override::Small(pages) => {
                variant(out, 0, 2);
                pages.encode(out);
            }
            Override::Raw(pages) => {
                variant(out, 1, 2);
                pages.encode(out);
            }
        }
    }
}

impl Encode for TunablesDesc {
    fn encode(&self, out: &mut Vec<u8>) {
        self.min_free_kbytes.encode(out);
        self.thp.encode(out);
        self.watermark_scale_factor.encode(out);
        self.watermark_boost_factor.encode(out);
        self.high_fraction.encode(out);
        self.lowmem_reserve_ratio.encode(out);
        self.stat_interval_ms.encode(out);
    }
}

impl Encode for HighFraction {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            HighFraction::Zero => variant(out, 0, 3),
            HighFraction::Small(fraction) => {
                variant(out, 1, 3);
                fraction.encode(out);
            }
            HighFraction::Raw(fraction) => {
                variant(out, 2, 3);
                fraction.encode(out);
            }
        }
    }
}

impl Encode for LlcDesc {
    fn encode(&self, out: &mut Vec<u8>) {
        self.size_kib.encode(out);
        self.shared_by_cpus.encode(out);
    }
}
