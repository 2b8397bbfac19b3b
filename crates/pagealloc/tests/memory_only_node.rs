//! A node with memory and no CPUs (CXL memory, a memory-only NUMA node): its kswapd and
//! kcompactd run from the periodic work of the nearest node's first CPU, so reclaim
//! balances it, its boosts and pressure thresholds drop, and kcompactd's wake-ups are
//! served.

// The invariant checker needs the alloc feature.
#![cfg(feature = "alloc")]

mod common;

use std::sync::Arc;

use common::*;
use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::platform::TestPlatform;
use pagealloc::request::WatermarkLevel;
use pagealloc::{AllocRequest, Block, PageAllocator, ZoneType};

const NODE_PAGES: u64 = 1 << 14;

/// Three nodes: 0 and 2 with two CPUs each, 1 with memory only.
fn three_nodes(cache: &Arc<OldestFirstCache>) -> PageAllocator<TestPlatform> {
    let mut allocator = build_allocator(three_nodes_builder(NODE_PAGES), 4);
    allocator.set_reclaim(cache.clone());
    allocator.set_migrate(Arc::new(Pinned));
    allocator
}

/// A migration client that owns nothing it could move.
struct Pinned;

impl Migrate<TestPlatform> for Pinned {
    fn migrate(&self, _: &PageAllocator<TestPlatform>, _: MigrateSource, target: Block) -> Result<Block, Block> {
        Err(target)
    }
}

#[test]
fn the_nearest_nodes_first_cpu_runs_a_memory_only_nodes_background_work() {
    let cache = Arc::new(OldestFirstCache::default());
    let allocator = three_nodes(&cache);
    let nodes = allocator.nodes();
    assert_eq!(nodes[1].cpu_count(), 0);
    // Nodes 0 and 2 are both at distance 1: the lower id wins, and its first CPU.
    assert_eq!(nodes.iter().map(|node| node.background_cpu()).collect::<Vec<_>>(), [None, Some(0), None]);

    // Fill node 1 below its low watermark with page cache, and wake its kswapd.
    let request = AllocRequest { may_reclaim: false, wake_kswapd: false, ..AllocRequest::USER_MOVABLE }.on_node(1);
    while let Ok(page) = allocator.alloc_pages(0, request) {
        assert_eq!(allocator.zones()[page.zone_index() as usize].state().node(), 1);
        cache.read(page);
        if allocator.zone_free_pages_snapshot(1) < allocator.zones()[1].state().watermarks().low_pages {
            break;
        }
    }
    allocator.background().wake_kswapd(1);

    // CPUs 1 to 3 do not run node 1's work; CPU 0 does.
    for cpu in 1..4 {
        assert_eq!(allocator.background().run_due_work(cpu, 0).kswapd_passes, 0, "cpu {cpu}");
    }
    assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 1);
    assert_eq!(allocator.nodes()[1].kswapd_runs(), 1);
    assert!(allocator.zone_watermark_ok(1, 0, WatermarkLevel::High, ZoneType::Normal), "node 1 balanced");
    assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 0, "one pass per wake-up");
    // kcompactd's wake-up for the node is served by CPU 0 too.
    allocator.background().wake_kcompactd(1, 9);
    assert_eq!(allocator.background().run_due_work(3, 0).kcompactd_passes, 0);
    assert_eq!(allocator.background().run_due_work(0, 0).kcompactd_passes, 1);
    assert_eq!(allocator.counters().compaction_stats(1).compact_daemon_wake, 1);
    allocator.check_invariants().unwrap();
    for page in cache.pages.lock().unwrap().drain(..) {
        allocator.free_pages(page).unwrap();
    }
    allocator.check_invariants().unwrap();
}
