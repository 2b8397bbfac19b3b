//! The `operations` target: operation sequences on a `TestPlatform` allocator (alloc at every
//! order and request, `Layout` and owned allocations, frees, bulk calls, drains, CPU offline,
//! periodic work with an advancing clock, memory pressure, CPU switches, and frees of another
//! allocator's blocks), checked against an independent ownership model:
//! - no frame is handed out twice, and every block lies on managed frames of a zone its
//!   request may use;
//! - a malformed request gets the error it warrants, and changes nothing;
//! - the census's allocated pages equal the model's, and free + allocated + pageset = managed;
//! - a drain or a vmstat pass returns exactly the pages that left the pagesets;
//! - a block of another allocator is `FreeError::ForeignBlock` and changes nothing;
//! - out of memory only when the model says it is plausible (liveness): a request that may
//!   reclaim, below pageblock order, must succeed when some usable zone without high-atomic
//!   reserve has a free aligned block of that order in the model and more free pages than its
//!   min watermark (with boost) plus lowmem reserve;
//! - the invariant checker passes every few operations and at the end, when everything
//!   freed merges back to the boot layout.
//!
//! Blocks are held as `Block` values and freed with `free_pages`: no raw frame numbers.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ops::Range;

use arbitrary::{Arbitrary, Unstructured};
use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::platform::{Platform, TestPlatform};
use pagealloc::types::{Pfn, MAX_ORDER, NR_ORDERS, PAGEBLOCK_ORDER, PAGE_SHIFT};
use pagealloc::{
    AllocError, AllocRequest, AllocatorBuilder, Block, FreeError, MigrateType, PageAllocator, PageCensus, ZoneType,
};

use crate::encode::{variant, Encode};

/// Longest sequence decoded (the near-exhaustion property test runs up to 2500).
pub const MAX_OPS: usize = 2500;
/// The invariant checker runs after every this many operations (and after each pressure
/// op); long sequences space the checks out to about `MAX_CHECKS`, so that one execution
/// stays fast (each check walks every frame).
const CHECK_EVERY: usize = 16;
const MAX_CHECKS: usize = 32;
const MAX_CPUS: u8 = 4;

/// The whole input: a machine and the operations run on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub header: Header,
    pub ops: Vec<Op>,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub machine: MachineChoice,
    /// `presets::PRESETS[preset % len]`.
    pub preset: u8,
    /// 1 + cpus % 4.
    pub cpus: u8,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum MachineChoice {
    /// `pc_layout(8 + mib % 57)`: DMA and DMA32, 8..=64 MiB.
    Pc { mib: u8 },
    /// One zone of `ZoneType::ALL[zone_type % 4]` (no Device), 1 + pages % 16384 frames
    /// (DMA at most 4096), with a reservation inside when `reserve` is non-zero.
    Single { zone_type: u8, pages: u16, reserve: u16 },
    /// Node 0: DMA and DMA32 (with an unaligned hole); node 1: Normal and Movable. CPUs:
    /// `split % (cpus + 1)` on node 0, the rest on node 1 (a node may have none).
    TwoNodes { split: u8, hole: u16 },
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    Kernel,
    UserMovable,
    Reclaimable,
    Atomic,
    Nowait,
    Dma32,
    Dma,
    /// Any combination: highest zone `ALL[highest_zone % 5]` (Device included), migratetype
    /// `ALL[migratetype % 6]` (the unmergeable ones included), node `node % 4`.
    Custom {
        highest_zone: u8,
        migratetype: u8,
        high_priority: bool,
        may_reclaim: bool,
        wake_kswapd: bool,
        node: Option<u8>,
    },
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Order: raw % 11 below 0xF0, else 11 + raw % 16 (too large).
    Alloc {
        order: u8,
        req: Req,
    },
    /// `alloc_layout` with `size` bytes aligned to 2^(align_log2 % 32).
    AllocLayout {
        size: u32,
        align_log2: u8,
        req: Req,
    },
    /// `alloc_owned`, checked, then dropped (which frees it).
    AllocOwned {
        order: u8,
        req: Req,
    },
    Free {
        pick: u16,
    },
    FreeNewest,
    AllocBulk {
        order: u8,
        req: Req,
        count: u8,
    },
    /// Frees up to `count` held blocks from `pick` on, with `free_bulk`.
    FreeBulk {
        pick: u16,
        count: u8,
    },
    DrainLocal,
    DrainAll,
    CpuOffline {
        cpu: u8,
    },
    /// Advances the clock by `advance_ms`, then runs the current CPU's due work.
    Tick {
        advance_ms: u16,
    },
    /// Advances the clock, then runs every CPU's due work.
    TickAll {
        advance_ms: u16,
    },
    /// One vmstat pass of the current CPU, whatever the schedule.
    VmstatTick,
    /// Allocates until the first failure.
    Pressure {
        order: u8,
        req: Req,
    },
    SetCpu {
        cpu: u8,
    },
    /// Allocates a block from a second allocator of the same layout and frees it here.
    ForeignFree {
        order: u8,
        movable: bool,
    },
    Check,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let header = Header::arbitrary(u)?;
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            ops.push(Op::arbitrary(u)?);
        }
        Ok(Input { header, ops })
    }

    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}

pub fn order_of(raw: u8) -> u8 {
    if raw < 0xF0 {
        raw % (MAX_ORDER + 1)
    } else {
        MAX_ORDER + 1 + (raw & 0x0F)
    }
}

impl Req {
    pub fn request(self) -> AllocRequest {
        match self {
            Req::Kernel => AllocRequest::KERNEL,
            Req::UserMovable => AllocRequest::USER_MOVABLE,
            Req::Reclaimable => AllocRequest::RECLAIMABLE,
            Req::Atomic => AllocRequest::ATOMIC,
            Req::Nowait => AllocRequest::NOWAIT,
            Req::Dma32 => AllocRequest::DMA32,
            Req::Dma => AllocRequest::DMA,
            Req::Custom { highest_zone, migratetype, high_priority, may_reclaim, wake_kswapd, node } => AllocRequest {
                highest_zone: ZoneType::ALL[usize::from(highest_zone) % ZoneType::ALL.len()],
                migratetype: MigrateType::ALL[usize::from(migratetype) % MigrateType::ALL.len()],
                high_priority,
                may_reclaim,
                wake_kswapd,
                node: node.map(|node| u16::from(node % 4)),
            },
        }
    }
}

/// A zone as the harness describes it: span, type, and the excluded (hole or reserved) ranges.
#[derive(Clone, Debug)]
pub struct ZoneSpec {
    pub node: u16,
    pub zone_type: ZoneType,
    pub span: Range<Pfn>,
}

/// The machine as built and as the model sees it.
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
            MachineChoice::Pc { mib } => {
                let mib = 8 + u64::from(mib % 57);
                let pages = mib * 256;
                let mut zones =
                    vec![ZoneSpec { node: 0, zone_type: ZoneType::Dma, span: 0..pages.min(DMA32_START_PFN) }];
                if pages > DMA32_START_PFN {
                    zones.push(ZoneSpec { node: 0, zone_type: ZoneType::Dma32, span: DMA32_START_PFN..pages });
                }
                // pc_layout reserves pfn 0 and the legacy 640 KiB - 1 MiB hole.
                let spec = MachineSpec { zones, excluded: vec![0..1, 0xa0..0x100], node_cpus: vec![cpus as u32] };
                (AllocatorBuilder::pc_layout(mib), spec)
            }
            MachineChoice::Single { zone_type, pages, reserve } => {
                let zone_type = ZoneType::ALL[usize::from(zone_type % 4)];
                let base = match zone_type {
                    ZoneType::Dma => 0,
                    ZoneType::Dma32 => DMA32_START_PFN,
                    _ => NORMAL_START_PFN,
                };
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
            MachineChoice::TwoNodes { split, hole } => {
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
        }
    }
}

/// One zone in the model: which frames are managed, which are held.
struct ZoneModel {
    index: u16,
    zone_type: ZoneType,
    span: Range<Pfn>,
    managed: Vec<bool>,
    held: Vec<bool>,
    managed_pages: u64,
    held_pages: u64,
}

impl ZoneModel {
    /// A free (managed, not held) naturally aligned block of `order` somewhere in the zone.
    fn has_free_block(&self, order: u8) -> bool {
        let size = 1u64 << order;
        let mut pfn = self.span.start.next_multiple_of(size);
        while pfn + size <= self.span.end {
            let first = (pfn - self.span.start) as usize;
            if (first..first + size as usize).all(|i| self.managed[i] && !self.held[i]) {
                return true;
            }
            pfn += size;
        }
        false
    }
}

/// The reference model: who holds which frames.
struct Model {
    zones: Vec<ZoneModel>,
    /// Head pfn -> order of every held block.
    live: BTreeMap<Pfn, u8>,
    held_pages: u64,
    managed_pages: u64,
    nodes: usize,
}

impl Model {
    fn new(allocator: &PageAllocator<TestPlatform>, spec: &MachineSpec) -> Model {
        assert_eq!(allocator.zones().len(), spec.zones.len());
        let mut zones = Vec::new();
        for zone in allocator.zones() {
            let described = spec
                .zones
                .iter()
                .find(|z| z.span.start == zone.start_pfn())
                .unwrap_or_else(|| panic!("zone {zone:?} not described"));
            assert_eq!((described.node, described.zone_type), (zone.node(), zone.zone_type()));
            assert_eq!(described.span.end - described.span.start, zone.spanned_pages());
            let span = described.span.clone();
            let managed: Vec<bool> =
                span.clone().map(|pfn| !spec.excluded.iter().any(|range| range.contains(&pfn))).collect();
            let managed_pages = managed.iter().filter(|&&m| m).count() as u64;
            assert_eq!(zone.managed_pages(), managed_pages, "zone {} managed pages", zone.index());
            zones.push(ZoneModel {
                index: zone.index(),
                zone_type: zone.zone_type(),
                held: vec![false; managed.len()],
                span,
                managed,
                managed_pages,
                held_pages: 0,
            });
        }
        let managed_pages = zones.iter().map(|zone| zone.managed_pages).sum();
        Model { zones, live: BTreeMap::new(), held_pages: 0, managed_pages, nodes: spec.node_cpus.len() }
    }

    fn zone_mut(&mut self, index: u16) -> &mut ZoneModel {
        self.zones.iter_mut().find(|zone| zone.index == index).expect("modelled zone")
    }

    /// Every error `request` at `order` warrants before memory is even looked at.
    fn request_errors(&self, order: u8, request: &AllocRequest) -> Vec<AllocError> {
        let mut errors = Vec::new();
        if order > MAX_ORDER {
            errors.push(AllocError::OrderTooLarge { order });
        }
        let migratetype = request.migratetype;
        if !matches!(migratetype, MigrateType::Unmovable | MigrateType::Movable | MigrateType::Reclaimable) {
            errors.push(AllocError::UnsupportedMigratetype { migratetype });
        }
        let highest_zone = request.highest_zone;
        if highest_zone == ZoneType::Device
            || (highest_zone == ZoneType::Movable && migratetype != MigrateType::Movable)
        {
            errors.push(AllocError::ZoneNotAllowed { highest_zone, migratetype });
        }
        if let Some(node) = request.node.filter(|&node| usize::from(node) >= self.nodes) {
            errors.push(AllocError::NoSuchNode { node, nodes: self.nodes as u16 });
        }
        if !self.zones.iter().any(|zone| zone.managed_pages > 0 && zone.zone_type <= highest_zone) {
            errors.push(AllocError::NoUsableZone { highest_zone });
        }
        errors
    }

    /// Records a block just allocated for `request`, checking it first.
    fn take(&mut self, allocator: &PageAllocator<TestPlatform>, block: &Block, order: u8, request: &AllocRequest) {
        assert_eq!(block.allocator_id(), allocator.id(), "{block:?}");
        assert_eq!(block.order(), order, "{block:?}");
        assert_eq!(block.pages(), 1 << order);
        assert_eq!(block.pfn() % block.pages(), 0, "{block:?} misaligned");
        assert_eq!(block.phys_addr(), block.pfn() << PAGE_SHIFT);
        let zone = allocator.zone_of_pfn(block.pfn()).unwrap_or_else(|| panic!("{block:?} in no zone"));
        assert_eq!(zone.index(), block.zone_index(), "{block:?} names another zone");
        assert!(zone.zone_type() <= request.highest_zone, "{block:?} from {:?} for {request:?}", zone.zone_type());
        let (end, end_pfn) = (block.pfn() + block.pages(), zone.start_pfn() + zone.spanned_pages());
        assert!(end <= end_pfn, "{block:?} crosses its zone's end");
        if let Some((&pfn, &o)) = self.live.range(..end).next_back() {
            assert!(pfn + (1 << o) <= block.pfn(), "{block:?} overlaps the held block at {pfn:#x} order {o}");
        }
        let model = self.zone_mut(block.zone_index());
        let first = (block.pfn() - model.span.start) as usize;
        for i in first..first + block.pages() as usize {
            assert!(model.managed[i], "{block:?}: pfn {:#x} is not managed", model.span.start + i as u64);
            assert!(!model.held[i], "{block:?}: pfn {:#x} handed out twice", model.span.start + i as u64);
            model.held[i] = true;
        }
        model.held_pages += block.pages();
        self.held_pages += block.pages();
        self.live.insert(block.pfn(), order);
    }

    /// Forgets a block about to be freed.
    fn release(&mut self, block: &Block) {
        assert_eq!(self.live.remove(&block.pfn()), Some(block.order()), "{block:?} not held");
        let model = self.zone_mut(block.zone_index());
        let first = (block.pfn() - model.span.start) as usize;
        for held in &mut model.held[first..first + block.pages() as usize] {
            *held = false;
        }
        model.held_pages -= block.pages();
        self.held_pages -= block.pages();
    }

    /// Panics if an out-of-memory answer to `request` at `order` is implausible.
    fn check_oom(&self, allocator: &PageAllocator<TestPlatform>, order: u8, request: &AllocRequest) {
        if !request.may_reclaim || order >= PAGEBLOCK_ORDER {
            return;
        }
        for zone in allocator.zones() {
            if zone.zone_type() > request.highest_zone || zone.reserved_highatomic_pages() > 0 {
                continue;
            }
            let model = self.zones.iter().find(|model| model.index == zone.index()).expect("modelled zone");
            let free = model.managed_pages - model.held_pages;
            let params = zone.params();
            let mark = params.watermarks.min_pages
                + zone.boost_pages()
                + params.lowmem_reserve[request.highest_zone.index()]
                + (1 << order)
                - 1;
            if free > mark && model.has_free_block(order) {
                panic!(
                    "out of memory for order {order} {request:?}, but zone {} ({:?}) has {free} free pages \
                     (min {} + boost {} + lowmem reserve {}) and a free aligned block",
                    zone.index(),
                    zone.zone_type(),
                    params.watermarks.min_pages,
                    zone.boost_pages(),
                    params.lowmem_reserve[request.highest_zone.index()],
                );
            }
        }
    }

    fn check_census(&self, census: &PageCensus, when: &str) {
        assert_eq!(census.allocated_pages, self.held_pages, "{when}: census allocated vs model");
        assert_eq!(census.managed_pages, self.managed_pages, "{when}: census managed vs model");
        assert_eq!(census.free_pages + census.allocated_pages + census.pcp_pages, self.managed_pages, "{when}");
    }
}

/// Everything observable about an allocator, for "nothing changed" checks.
#[derive(Debug, PartialEq, Eq)]
struct Fingerprint {
    /// The checker's census, when the fingerprint is a full one.
    census: Option<PageCensus>,
    buddyinfo: Vec<[u64; NR_ORDERS]>,
    pageblocks: Vec<[u64; 6]>,
    free_pages: Vec<u64>,
    pageset_pages: Vec<Vec<u32>>,
    boost: Vec<u64>,
    highatomic: Vec<u64>,
}

fn fingerprint(allocator: &PageAllocator<TestPlatform>, full: bool) -> Fingerprint {
    let platform = allocator.platform();
    let zones = allocator.zones();
    Fingerprint {
        census: full.then(|| allocator.check_invariants().unwrap_or_else(|v| panic!("{v}"))),
        buddyinfo: zones
            .iter()
            .map(|z| z.with_free_area(platform, |area| std::array::from_fn(|order| area.blocks_of_order(order))))
            .collect(),
        pageblocks: zones.iter().map(|z| z.pageblock_counts()).collect(),
        free_pages: zones.iter().map(|z| z.free_pages()).collect(),
        pageset_pages: zones.iter().map(|z| pageset_pages(allocator, z.index())).collect(),
        boost: zones.iter().map(|z| z.boost_pages()).collect(),
        highatomic: zones.iter().map(|z| z.reserved_highatomic_pages()).collect(),
    }
}

/// Pages on each CPU's pageset of a zone.
fn pageset_pages(allocator: &PageAllocator<TestPlatform>, zone: u16) -> Vec<u32> {
    let zone = &allocator.zones()[usize::from(zone)];
    zone.pagesets().iter().map(|slot| slot.inspect(allocator.platform(), |pcp| pcp.count_pages())).collect()
}

fn cpu_pageset_pages(allocator: &PageAllocator<TestPlatform>, cpu: usize) -> u64 {
    allocator.zones().iter().map(|zone| pageset_pages(allocator, zone.index()).get(cpu).map_or(0, |&p| p as u64)).sum()
}

/// The running harness.
struct Harness {
    allocator: PageAllocator<TestPlatform>,
    builder_for_donor: Box<dyn Fn() -> AllocatorBuilder>,
    donor: Option<PageAllocator<TestPlatform>>,
    model: Model,
    held: Vec<Block>,
    cpus: usize,
}

impl Harness {
    fn cpu(&self) -> usize {
        self.allocator.platform().current_cpu()
    }

    /// One allocation with the checks every allocation gets; `None` when it failed.
    fn alloc(&mut self, order: u8, request: AllocRequest) -> Option<()> {
        let expected = self.model.request_errors(order, &request);
        let before = if expected.is_empty() { None } else { Some(fingerprint(&self.allocator, false)) };
        match self.allocator.alloc_pages(order, request) {
            Ok(block) => {
                assert!(expected.is_empty(), "order {order} {request:?} succeeded; expected one of {expected:?}");
                self.model.take(&self.allocator, &block, order, &request);
                self.held.push(block);
                Some(())
            }
            Err(error) => {
                self.check_alloc_error(error, order, &request, &expected, before);
                None
            }
        }
    }

    fn check_alloc_error(
        &self,
        error: AllocError,
        order: u8,
        request: &AllocRequest,
        expected: &[AllocError],
        before: Option<Fingerprint>,
    ) {
        match error {
            AllocError::OutOfMemory { order: failed } if expected.is_empty() => {
                assert_eq!(failed, order);
                self.model.check_oom(&self.allocator, order, request);
            }
            error => {
                assert!(
                    expected.contains(&error),
                    "order {order} {request:?}: {error:?}; expected one of {expected:?}"
                );
                if let Some(before) = before {
                    assert_eq!(fingerprint(&self.allocator, false), before, "a rejected request changed the state");
                }
            }
        }
    }

    fn free(&mut self, block: Block) {
        self.model.release(&block);
        let (pfn, order) = (block.pfn(), block.order());
        if let Err(error) = self.allocator.free_pages(block) {
            panic!("free of the held block at {pfn:#x} order {order}: {error}");
        }
    }

    /// Runs `drain` and checks it returned exactly the pages that left the pagesets.
    fn drained(&self, what: &str, drain: impl FnOnce(&PageAllocator<TestPlatform>) -> u64) {
        let before = self.allocator.pcp_pages();
        let drained = drain(&self.allocator);
        let after = self.allocator.pcp_pages();
        assert_eq!(
            before.checked_sub(drained),
            Some(after),
            "{what}: {before} cached, {drained} drained, {after} left"
        );
    }

    fn check(&self, when: &str) {
        let census = self.allocator.check_invariants().unwrap_or_else(|v| panic!("{when}: {v}"));
        self.model.check_census(&census, when);
    }

    fn step(&mut self, op: Op) {
        match op {
            Op::Alloc { order, req } => {
                self.alloc(order_of(order), req.request());
            }
            Op::AllocLayout { size, align_log2, req } => {
                let align = 1usize << (align_log2 % 32);
                let layout = Layout::from_size_align(size as usize, align).expect("u32 sizes fit");
                let request = req.request();
                // The smallest order whose block covers the size and the alignment.
                let bytes = (size as u64).max(align as u64).max(1);
                let pages = bytes.div_ceil(1 << PAGE_SHIFT);
                let order = (0..=MAX_ORDER).find(|&order| 1u64 << order >= pages);
                match (self.allocator.alloc_layout(layout, request), order) {
                    (Err(AllocError::LayoutTooLarge { size_bytes, align_bytes }), None) => {
                        assert_eq!((size_bytes, align_bytes), (size as usize, align));
                    }
                    (Ok(block), Some(order)) => {
                        assert!(block.pages() << PAGE_SHIFT >= size as u64 && block.phys_addr() % align as u64 == 0);
                        assert!(self.model.request_errors(order, &request).is_empty());
                        self.model.take(&self.allocator, &block, order, &request);
                        self.held.push(block);
                    }
                    (Err(error), Some(order)) => {
                        let expected = self.model.request_errors(order, &request);
                        self.check_alloc_error(error, order, &request, &expected, None);
                    }
                    (result, None) => panic!("{layout:?}: {result:?}, expected LayoutTooLarge"),
                }
            }
            Op::AllocOwned { order, req } => {
                let (order, request) = (order_of(order), req.request());
                let expected = self.model.request_errors(order, &request);
                match self.allocator.alloc_owned(order, request) {
                    Ok(owned) => {
                        self.model.take(&self.allocator, owned.block(), order, &request);
                        self.check("holding an owned block");
                        self.model.release(owned.block());
                        drop(owned);
                        self.check("after dropping an owned block");
                    }
                    Err(error) => self.check_alloc_error(error, order, &request, &expected, None),
                }
            }
            Op::Free { pick } if !self.held.is_empty() => {
                let block = self.held.swap_remove(usize::from(pick) % self.held.len());
                self.free(block);
            }
            Op::FreeNewest => {
                if let Some(block) = self.held.pop() {
                    self.free(block);
                }
            }
            Op::AllocBulk { order, req, count } => {
                let (order, request) = (order_of(order), req.request());
                let expected = self.model.request_errors(order, &request);
                let mut out = Vec::new();
                match self.allocator.alloc_bulk(order, request, usize::from(count), &mut out) {
                    Ok(got) => {
                        assert_eq!(got, out.len());
                        assert!(got <= usize::from(count));
                        assert!(count == 0 || expected.is_empty(), "bulk {request:?} got {got}; expected {expected:?}");
                        for block in &out {
                            self.model.take(&self.allocator, block, order, &request);
                        }
                        self.held.extend(out);
                        if got < usize::from(count) {
                            self.model.check_oom(&self.allocator, order, &request);
                        }
                    }
                    Err(error) => {
                        assert!(out.is_empty() && count > 0, "bulk failed after {} blocks: {error:?}", out.len());
                        assert!(expected.contains(&error), "bulk {request:?}: {error:?}; expected {expected:?}");
                    }
                }
            }
            Op::FreeBulk { pick, count } if !self.held.is_empty() => {
                let start = usize::from(pick) % self.held.len();
                let end = (start + usize::from(count)).min(self.held.len());
                let blocks: Vec<Block> = self.held.drain(start..end).collect();
                for block in &blocks {
                    self.model.release(block);
                }
                self.allocator.free_bulk(blocks).expect("bulk free of held blocks");
            }
            Op::DrainLocal => {
                self.drained("drain_local", |a| a.drain_local());
                assert_eq!(cpu_pageset_pages(&self.allocator, self.cpu()), 0, "drain_local left pages");
            }
            Op::DrainAll => {
                self.drained("drain_all", |a| a.drain_all());
                assert_eq!(self.allocator.pcp_pages(), 0, "drain_all left pages");
            }
            Op::CpuOffline { cpu } => {
                let cpu = usize::from(cpu) % self.cpus;
                self.drained("cpu_offline", |a| a.cpu_offline(cpu));
                assert_eq!(cpu_pageset_pages(&self.allocator, cpu), 0, "cpu_offline left pages");
            }
            Op::Tick { advance_ms } => {
                self.allocator.platform().advance_ns(u64::from(advance_ms) * 1_000_000);
                let (cpu, now) = (self.cpu(), self.allocator.platform().now_ns());
                self.drained("run_due_work", |a| a.run_due_work(cpu, now).drained_pages);
            }
            Op::TickAll { advance_ms } => {
                self.allocator.platform().advance_ns(u64::from(advance_ms) * 1_000_000);
                let now = self.allocator.platform().now_ns();
                for cpu in 0..self.cpus {
                    self.drained("run_due_work", |a| a.run_due_work(cpu, now).drained_pages);
                }
            }
            Op::VmstatTick => {
                let cpu = self.cpu();
                self.drained("vmstat_tick", |a| a.vmstat_tick(cpu));
            }
            Op::Pressure { order, req } => {
                let (order, request) = (order_of(order), req.request());
                // More successes than memory holds would already be a double hand-out.
                let limit = self.model.managed_pages + 1;
                for _ in 0..limit {
                    if self.alloc(order, request).is_none() {
                        break;
                    }
                }
            }
            Op::SetCpu { cpu } => self.allocator.platform().set_cpu(usize::from(cpu) % self.cpus),
            Op::ForeignFree { order, movable } => self.foreign_free(order % (MAX_ORDER + 1), movable),
            Op::Check => self.check("check op"),
            Op::Free { .. } | Op::FreeBulk { .. } => {}
        }
    }

    /// A block of a second allocator with the same layout (so its frame numbers are ones this
    /// allocator manages, often held here too) must be refused and change nothing.
    fn foreign_free(&mut self, order: u8, movable: bool) {
        let donor = self.donor.get_or_insert_with(|| {
            PageAllocator::build((self.builder_for_donor)(), TestPlatform::new(1)).expect("donor builds")
        });
        let request = if movable { AllocRequest::USER_MOVABLE } else { AllocRequest::KERNEL };
        let Ok(block) = donor.alloc_pages(order, request) else { return };
        assert_ne!(block.allocator_id(), self.allocator.id());
        let pfn = block.pfn();
        let before = fingerprint(&self.allocator, false);
        // The refused block is gone with the error: the donor leaks it, which is harmless.
        assert_eq!(self.allocator.free_pages(block), Err(FreeError::ForeignBlock { pfn }));
        // Any free, to the buddy or a pageset, shows in the fingerprint; the frames' states
        // are compared with the model by the next periodic check.
        assert_eq!(fingerprint(&self.allocator, false), before, "a foreign free changed the state");
    }
}

/// The target's body.
pub fn run(input: &Input) {
    let cpus = 1 + usize::from(input.header.cpus % MAX_CPUS);
    let presets = pagealloc::presets::PRESETS;
    let policy = presets[usize::from(input.header.preset) % presets.len()].policy;
    let machine = input.header.machine.clone();
    let (builder, spec) = machine.build(cpus);
    let allocator = PageAllocator::build(builder.policy(policy), TestPlatform::new(cpus))
        .unwrap_or_else(|e| panic!("{machine:?} does not build: {e}"));
    let initial_buddyinfo = fingerprint(&allocator, false).buddyinfo;
    let model = Model::new(&allocator, &spec);
    let census = allocator.check_invariants().expect("fresh allocator");
    model.check_census(&census, "after build");
    assert_eq!(census.free_pages, model.managed_pages);
    let donor_machine = machine.clone();
    let mut harness = Harness {
        allocator,
        builder_for_donor: Box::new(move || {
            let global_lock = pagealloc::presets::find("global-lock").expect("preset").policy;
            donor_machine.build(1).0.policy(global_lock)
        }),
        donor: None,
        model,
        held: Vec::new(),
        cpus,
    };
    let period = CHECK_EVERY.max(input.ops.len() / MAX_CHECKS);
    for (i, &op) in input.ops.iter().enumerate() {
        harness.step(op);
        if matches!(op, Op::Pressure { .. }) || i % period == period - 1 {
            harness.check(&format!("after op {i} {op:?}"));
        }
    }
    harness.check("after the last op");
    for block in std::mem::take(&mut harness.held) {
        harness.free(block);
    }
    harness.drained("final drain_all", |a| a.drain_all());
    harness.check("everything freed");
    let allocator = &harness.allocator;
    let census = allocator.check_invariants().expect("checked");
    assert_eq!(census.free_pages, harness.model.managed_pages, "everything free at the end");
    if allocator.zones().iter().all(|z| z.reserved_highatomic_pages() == 0) {
        assert_eq!(fingerprint(allocator, false).buddyinfo, initial_buddyinfo, "everything merges back");
    }
}

// Encoders: field by field, in declaration order, as `arbitrary`'s derive decodes.

impl Encode for Input {
    fn encode(&self, out: &mut Vec<u8>) {
        self.header.encode(out);
        for op in &self.ops {
            op.encode(out);
        }
    }
}

impl Encode for Header {
    fn encode(&self, out: &mut Vec<u8>) {
        self.machine.encode(out);
        self.preset.encode(out);
        self.cpus.encode(out);
    }
}

impl Encode for MachineChoice {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MachineChoice::Pc { mib } => {
                variant(out, 0, 3);
                mib.encode(out);
            }
            MachineChoice::Single { zone_type, pages, reserve } => {
                variant(out, 1, 3);
                zone_type.encode(out);
                pages.encode(out);
                reserve.encode(out);
            }
            MachineChoice::TwoNodes { split, hole } => {
                variant(out, 2, 3);
                split.encode(out);
                hole.encode(out);
            }
        }
    }
}

impl Encode for Req {
    fn encode(&self, out: &mut Vec<u8>) {
        let simple = [Req::Kernel, Req::UserMovable, Req::Reclaimable, Req::Atomic, Req::Nowait, Req::Dma32, Req::Dma];
        match self {
            Req::Custom { highest_zone, migratetype, high_priority, may_reclaim, wake_kswapd, node } => {
                variant(out, 7, 8);
                highest_zone.encode(out);
                migratetype.encode(out);
                high_priority.encode(out);
                may_reclaim.encode(out);
                wake_kswapd.encode(out);
                node.encode(out);
            }
            simple_req => variant(out, simple.iter().position(|r| r == simple_req).expect("simple request"), 8),
        }
    }
}

impl Encode for Op {
    fn encode(&self, out: &mut Vec<u8>) {
        const COUNT: usize = 17;
        match self {
            Op::Alloc { order, req } => {
                variant(out, 0, COUNT);
                order.encode(out);
                req.encode(out);
            }
            Op::AllocLayout { size, align_log2, req } => {
                variant(out, 1, COUNT);
                size.encode(out);
                align_log2.encode(out);
                req.encode(out);
            }
            Op::AllocOwned { order, req } => {
                variant(out, 2, COUNT);
                order.encode(out);
                req.encode(out);
            }
            Op::Free { pick } => {
                variant(out, 3, COUNT);
                pick.encode(out);
            }
            Op::FreeNewest => variant(out, 4, COUNT),
            Op::AllocBulk { order, req, count } => {
                variant(out, 5, COUNT);
                order.encode(out);
                req.encode(out);
                count.encode(out);
            }
            Op::FreeBulk { pick, count } => {
                variant(out, 6, COUNT);
                pick.encode(out);
                count.encode(out);
            }
            Op::DrainLocal => variant(out, 7, COUNT),
            Op::DrainAll => variant(out, 8, COUNT),
            Op::CpuOffline { cpu } => {
                variant(out, 9, COUNT);
                cpu.encode(out);
            }
            Op::Tick { advance_ms } => {
                variant(out, 10, COUNT);
                advance_ms.encode(out);
            }
            Op::TickAll { advance_ms } => {
                variant(out, 11, COUNT);
                advance_ms.encode(out);
            }
            Op::VmstatTick => variant(out, 12, COUNT),
            Op::Pressure { order, req } => {
                variant(out, 13, COUNT);
                order.encode(out);
                req.encode(out);
            }
            Op::SetCpu { cpu } => {
                variant(out, 14, COUNT);
                cpu.encode(out);
            }
            Op::ForeignFree { order, movable } => {
                variant(out, 15, COUNT);
                order.encode(out);
                movable.encode(out);
            }
            Op::Check => variant(out, 16, COUNT),
        }
    }
}
