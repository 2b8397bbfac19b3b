//! The checks of an allocator that built: its census and zones against an independent
//! frame-by-frame count of the description (`ZoneFrames`), then every frame the watermarks
//! allow allocated once and returned.

use std::ops::Range;

use pagealloc::platform::TestPlatform;
use pagealloc::types::{Pfn, MAX_ORDER};
use pagealloc::{AllocError, AllocRequest, Block, MigrateType, PageAllocator, ZoneType};

use super::machine::Machine;
use crate::frames::{count, mark_taken};

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
}

/// Checks a freshly built allocator against the frame count, then allocates and frees
/// everything.
pub(super) fn check_built(allocator: &PageAllocator<TestPlatform>, machine: &Machine) {
    let census = allocator.check_invariants().unwrap_or_else(|v| panic!("after build: {v}\n{machine:?}"));
    let mut zones: Vec<ZoneFrames> =
        machine.zones.iter().map(|(_, zone_type, span)| ZoneFrames::new(*zone_type, span.clone(), machine)).collect();
    let managed: u64 = zones.iter().map(|zone| count(&zone.managed)).sum();
    assert_eq!(census.managed_pages, managed, "census vs frames in zones, in no hole and no reservation");
    assert_eq!(census.free_pages, managed, "everything managed is free after the build");
    assert_eq!((census.allocated_pages, census.pcp_pages), (0, 0));
    check_zones(allocator, machine, &zones);
    let held = allocate_everything(allocator, machine, &mut zones, managed);
    let held_pages = held.iter().map(Block::pages).sum::<u64>();
    let full = allocator.check_invariants().unwrap_or_else(|v| panic!("after allocating: {v}\n{machine:?}"));
    assert_eq!(full.allocated_pages, held_pages);
    assert_eq!(full.free_pages + full.pcp_pages + full.allocated_pages, managed);
    allocator.free_bulk(held).expect("every block frees");
    allocator.pagesets().drain_all();
    let after = allocator.check_invariants().unwrap_or_else(|v| panic!("after freeing: {v}\n{machine:?}"));
    assert_eq!((after.free_pages, after.allocated_pages, after.pcp_pages), (managed, 0, 0));
    // A non-mergeable type in a request is refused whatever the machine.
    let highatomic = AllocRequest::KERNEL.with_migratetype(MigrateType::HighAtomic);
    assert!(matches!(allocator.alloc_pages(0, highatomic), Err(AllocError::UnsupportedMigratetype { .. })));
}

/// Each zone has the documented span, present pages (spanned - holes) and managed pages
/// (spanned - holes - reserves), and the machine the nodes it declares.
fn check_zones(allocator: &PageAllocator<TestPlatform>, machine: &Machine, zones: &[ZoneFrames]) {
    assert_eq!(allocator.zones().len(), machine.zones.len());
    for zone in allocator.zones() {
        let (i, _) = machine
            .zones
            .iter()
            .enumerate()
            .find(|(_, (node, zone_type, _))| *node == zone.state().node() && *zone_type == zone.state().zone_type())
            .unwrap_or_else(|| panic!("zone {zone:?} not described"));
        let frames = &zones[i];
        assert_eq!(zone.start_pfn(), frames.span.start);
        assert_eq!(zone.spanned_pages(), frames.span.end - frames.span.start);
        let len = frames.hole.len() as u64;
        assert_eq!(zone.state().present_pages(), len - count(&frames.hole), "present = spanned - holes");
        assert_eq!(zone.state().managed_pages(), count(&frames.managed), "managed = spanned - holes - reserves");
    }
    let nodes = match (&machine.cpu_map, &machine.node_cpus) {
        (Some(map), _) => map.iter().max().map_or(0, |&max| usize::from(max) + 1),
        (None, Some(declared)) if !declared.is_empty() => declared.len(),
        _ => 1,
    };
    assert_eq!(allocator.nodes().len(), nodes);
}

/// Allocates everything the watermarks allow, largest blocks first, with reserve access: each
/// block lies on managed frames of a zone its request may use, and no frame twice.
fn allocate_everything(
    allocator: &PageAllocator<TestPlatform>,
    machine: &Machine,
    zones: &mut [ZoneFrames],
    managed: u64,
) -> Vec<Block> {
    let movable_atomic = AllocRequest { high_priority: true, may_reclaim: false, ..AllocRequest::USER_MOVABLE };
    let mut held = Vec::new();
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
                check_block(allocator, &block, order, &request, zones);
                held.push(block);
            }
        }
    }
    held
}

/// A block just allocated for `request`: of this allocator, aligned, on managed frames of a
/// zone the request may use, none of them handed out before (marked now).
fn check_block(
    allocator: &PageAllocator<TestPlatform>,
    block: &Block,
    order: u8,
    request: &AllocRequest,
    zones: &mut [ZoneFrames],
) {
    assert_eq!((block.order(), block.allocator_id()), (order, allocator.id()));
    assert_eq!(block.pfn() % block.pages(), 0, "{block:?} misaligned");
    let zone = allocator.zone_of_pfn(block.pfn()).expect("block in a zone");
    assert_eq!(zone.state().index(), block.zone_index());
    assert!(zone.state().zone_type() <= request.highest_zone, "{block:?} above {request:?}");
    let frames = zones.iter_mut().find(|frames| frames.span.contains(&block.pfn())).expect("block in a described zone");
    assert!(block.pfn() + block.pages() <= frames.span.end, "{block:?} crosses its zone's end");
    mark_taken(block, frames.span.start, &frames.managed, &mut frames.taken);
}
