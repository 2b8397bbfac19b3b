//! The slow path wakes the kswapd of every node whose zones the request may use (mirrors
//! wake_all_kswapds()): the nodes of its zonelist, up to its highest zone.

// The invariant checker needs the alloc feature.
#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::builder::MIN_ARENA_PAGES;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, ZoneType};

const ZONE_PAGES: u64 = 1 << 14;

/// Node 0 with DMA32 and Normal, node 1 with Normal only; one CPU each, mainline.
fn two_nodes() -> TestAllocator {
    let span = |start: u64| start..start + ZONE_PAGES;
    let builder = AllocatorBuilder::new()
        .node(1)
        .node(1)
        .zone(0, ZoneType::Dma32, span(0x8_0000))
        .zone(0, ZoneType::Normal, span(0x10_0000))
        .zone(1, ZoneType::Normal, span(0x20_0000));
    build_allocator(builder, 2)
}

/// Takes what `request`, kept from waking kswapd or reclaiming, can get.
fn exhaust(allocator: &TestAllocator, request: AllocRequest, held: &mut Vec<Block>) {
    let quiet = AllocRequest { may_reclaim: false, wake_kswapd: false, ..request };
    held.extend(std::iter::from_fn(|| allocator.alloc_pages(0, quiet).ok()));
}

/// kswapd passes the periodic work of each CPU runs (one CPU per node here).
fn kswapd_passes(allocator: &TestAllocator, cpus: usize) -> Vec<u32> {
    (0..cpus).map(|cpu| allocator.background().run_due_work(cpu, 0).kswapd_passes).collect()
}

#[test]
fn the_slow_path_wakes_every_node_of_the_zonelist_up_to_the_highest_zone() {
    let allocator = two_nodes();
    let mut held = Vec::new();
    exhaust(&allocator, AllocRequest::DMA32, &mut held);
    exhaust(&allocator, AllocRequest::USER_MOVABLE, &mut held);
    assert_eq!(kswapd_passes(&allocator, 2), [0, 0], "nothing woken yet");
    // A DMA32 request may use node 0's DMA32 only: node 1 has no zone it could use.
    let dma32 = AllocRequest { may_reclaim: false, ..AllocRequest::DMA32 };
    assert!(allocator.alloc_pages(0, dma32).is_err());
    assert_eq!(kswapd_passes(&allocator, 2), [1, 0]);
    // A movable request from node 0 may use node 1's Normal too: both are woken.
    let movable = AllocRequest { may_reclaim: false, ..AllocRequest::USER_MOVABLE };
    assert!(allocator.alloc_pages(0, movable).is_err());
    assert_eq!(kswapd_passes(&allocator, 2), [1, 1]);
    allocator.free_bulk(held).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn with_per_cpu_arenas_every_arena_of_the_zonelist_is_woken() {
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 3 * MIN_ARENA_PAGES).policy(preset("pagealloc"));
    let allocator = build_allocator(builder, 3);
    assert_eq!(allocator.nodes().len(), 3);
    let mut held = Vec::new();
    exhaust(&allocator, AllocRequest::USER_MOVABLE, &mut held);
    assert_eq!(kswapd_passes(&allocator, 3), [0, 0, 0], "nothing woken yet");
    let movable = AllocRequest { may_reclaim: false, ..AllocRequest::USER_MOVABLE };
    assert!(allocator.alloc_pages(0, movable).is_err());
    assert_eq!(kswapd_passes(&allocator, 3), [1, 1, 1]);
    allocator.free_bulk(held).unwrap();
    allocator.check_invariants().unwrap();
}
