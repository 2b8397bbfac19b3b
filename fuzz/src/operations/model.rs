//! The reference model the `operations` target checks the allocator against: which frames each
//! zone manages (from the harness's own `MachineSpec`, not from the allocator) and which are
//! held. It predicts the errors a request warrants, checks every block handed out, and judges
//! whether an out-of-memory answer is plausible.

use std::collections::BTreeMap;
use std::ops::Range;

use pagealloc::platform::TestPlatform;
use pagealloc::types::{Pfn, MAX_ORDER, PAGEBLOCK_ORDER, PAGE_SHIFT};
use pagealloc::{AllocError, AllocRequest, Block, MigrateType, PageAllocator, PageCensus, ZoneType};

use super::machine::MachineSpec;
use crate::frames::{count, mark_taken};

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
pub(super) struct Model {
    zones: Vec<ZoneModel>,
    /// Head pfn -> order of every held block.
    live: BTreeMap<Pfn, u8>,
    held_pages: u64,
    pub(super) managed_pages: u64,
    nodes: usize,
}

impl Model {
    /// The model of a fresh allocator, checking that it built the zones `spec` describes.
    pub(super) fn new(allocator: &PageAllocator<TestPlatform>, spec: &MachineSpec) -> Model {
        // Per-CPU arenas cut a described zone into consecutive pieces, each on a node whose
        // home is the described one; together they span it exactly.
        let mut zones = Vec::new();
        for zone in allocator.zones() {
            let described = spec
                .zones
                .iter()
                .find(|z| z.span.contains(&zone.start_pfn()))
                .unwrap_or_else(|| panic!("zone {zone:?} not described"));
            let home = allocator.nodes()[usize::from(zone.state().node())].home();
            assert_eq!((described.node, described.zone_type), (home, zone.state().zone_type()));
            let span = zone.start_pfn()..zone.start_pfn() + zone.spanned_pages();
            assert!(span.end <= described.span.end, "{span:?} within {:?}", described.span);
            let managed: Vec<bool> =
                span.clone().map(|pfn| !spec.excluded.iter().any(|range| range.contains(&pfn))).collect();
            let managed_pages = count(&managed);
            assert_eq!(zone.state().managed_pages(), managed_pages, "zone {} managed pages", zone.state().index());
            zones.push(ZoneModel {
                index: zone.state().index(),
                zone_type: zone.state().zone_type(),
                held: vec![false; managed.len()],
                span,
                managed,
                managed_pages,
                held_pages: 0,
            });
        }
        for described in &spec.zones {
            let covered: u64 = (zones.iter().filter(|zone| described.span.contains(&zone.span.start)))
                .map(|zone| zone.span.end - zone.span.start)
                .sum();
            assert_eq!(covered, described.span.end - described.span.start, "{described:?} covered");
        }
        let managed_pages = zones.iter().map(|zone| zone.managed_pages).sum();
        Model { zones, live: BTreeMap::new(), held_pages: 0, managed_pages, nodes: spec.node_cpus.len() }
    }

    fn zone_mut(&mut self, index: u16) -> &mut ZoneModel {
        self.zones.iter_mut().find(|zone| zone.index == index).expect("modelled zone")
    }

    /// Every error `request` at `order` warrants before memory is even looked at.
    pub(super) fn request_errors(&self, order: u8, request: &AllocRequest) -> Vec<AllocError> {
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
    pub(super) fn take(
        &mut self,
        allocator: &PageAllocator<TestPlatform>,
        block: &Block,
        order: u8,
        request: &AllocRequest,
    ) {
        assert_eq!(block.allocator_id(), allocator.id(), "{block:?}");
        assert_eq!(block.order(), order, "{block:?}");
        assert_eq!(block.pages(), 1 << order);
        assert_eq!(block.pfn() % block.pages(), 0, "{block:?} misaligned");
        assert_eq!(block.phys_addr().0, block.pfn() << PAGE_SHIFT);
        let zone = allocator.zone_of_pfn(block.pfn()).unwrap_or_else(|| panic!("{block:?} in no zone"));
        assert_eq!(zone.state().index(), block.zone_index(), "{block:?} names another zone");
        assert!(
            zone.state().zone_type() <= request.highest_zone,
            "{block:?} from {:?} for {request:?}",
            zone.state().zone_type()
        );
        let (end, end_pfn) = (block.pfn() + block.pages(), zone.start_pfn() + zone.spanned_pages());
        assert!(end <= end_pfn, "{block:?} crosses its zone's end");
        if let Some((&pfn, &o)) = self.live.range(..end).next_back() {
            assert!(pfn + (1 << o) <= block.pfn(), "{block:?} overlaps the held block at {pfn:#x} order {o}");
        }
        let model = self.zone_mut(block.zone_index());
        mark_taken(block, model.span.start, &model.managed, &mut model.held);
        model.held_pages += block.pages();
        self.held_pages += block.pages();
        self.live.insert(block.pfn(), order);
    }

    /// Forgets a block about to be freed.
    pub(super) fn release(&mut self, block: &Block) {
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
    pub(super) fn check_oom(&self, allocator: &PageAllocator<TestPlatform>, order: u8, request: &AllocRequest) {
        if !request.may_reclaim || order >= PAGEBLOCK_ORDER {
            return;
        }
        for zone in allocator.zones() {
            if zone.state().zone_type() > request.highest_zone || zone.state().reserved_highatomic_pages() > 0 {
                continue;
            }
            let model = self.zones.iter().find(|model| model.index == zone.state().index()).expect("modelled zone");
            let free = model.managed_pages - model.held_pages;
            let params = zone.state().params();
            let mark = params.watermarks.min_pages
                + zone.state().boost_pages()
                + params.lowmem_reserve[request.highest_zone.index()]
                + (1 << order)
                - 1;
            if free > mark && model.has_free_block(order) {
                panic!(
                    "out of memory for order {order} {request:?}, but zone {} ({:?}) has {free} free pages \
                     (min {} + boost {} + lowmem reserve {}) and a free aligned block",
                    zone.state().index(),
                    zone.state().zone_type(),
                    params.watermarks.min_pages,
                    zone.state().boost_pages(),
                    params.lowmem_reserve[request.highest_zone.index()],
                );
            }
        }
    }

    /// The checker's census against the model's page counts.
    pub(super) fn check_census(&self, census: &PageCensus, when: &str) {
        assert_eq!(census.allocated_pages, self.held_pages, "{when}: census allocated vs model");
        assert_eq!(census.managed_pages, self.managed_pages, "{when}: census managed vs model");
        assert_eq!(census.free_pages + census.allocated_pages + census.pcp_pages, self.managed_pages, "{when}");
    }
}
