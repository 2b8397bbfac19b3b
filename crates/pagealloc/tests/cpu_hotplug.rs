//! CPU hotplug and the background work: a CPU gone offline hands the kswapd and kcompactd
//! it ran (its own arena's or node's, and those of memory-only nodes it stood in for) to an
//! online CPU, one of the same node first, else the nearest node's, as the scheduler moves
//! kswapd off its node's CPUs when they all go offline.

// The invariant checker needs the alloc feature.
#![cfg(feature = "alloc")]

mod common;

use std::sync::Arc;

use common::*;
use pagealloc::allocator::{Migrate, MigrateSource};
use pagealloc::builder::MIN_ARENA_PAGES;
use pagealloc::platform::TestPlatform;
use pagealloc::{AllocatorBuilder, Block, PageAllocator, ZoneType};

const NODE_PAGES: u64 = 1 << 14;

/// A migration client that owns nothing it could move (kcompactd runs only with a client).
struct Pinned;

impl Migrate<TestPlatform> for Pinned {
    fn migrate(&self, _: &PageAllocator<TestPlatform>, _: MigrateSource, target: Block) -> Result<Block, Block> {
        Err(target)
    }
}

/// The `pagealloc` preset on one node of `cpus` CPUs with an arena's worth each: one arena
/// per CPU, CPU i on arena i.
fn arenas(cpus: usize) -> TestAllocator {
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, cpus as u64 * MIN_ARENA_PAGES);
    let mut allocator = build_allocator(builder.policy(preset("pagealloc")), cpus);
    allocator.set_migrate(Arc::new(Pinned));
    assert_eq!(allocator.nodes().len(), cpus);
    allocator
}

/// Three nodes under mainline: 0 and 2 with two CPUs each (CPUs 0-1 and 2-3), 1 with memory
/// only.
fn three_nodes() -> TestAllocator {
    build_allocator(three_nodes_builder(NODE_PAGES), 4)
}

fn background_cpus(allocator: &TestAllocator) -> Vec<Option<usize>> {
    allocator.nodes().iter().map(|node| node.background_cpu()).collect()
}

#[test]
fn an_offline_cpus_arena_has_its_kswapd_and_kcompactd_run_by_a_sibling_arenas_cpu() {
    let allocator = arenas(3);
    assert_eq!(background_cpus(&allocator), [None, None, None], "each arena's CPU runs its work");
    allocator.hotplug().cpu_offline(1);
    // Arenas 0 and 2 are both next to arena 1: the lower one's CPU takes its work.
    assert_eq!(background_cpus(&allocator), [None, Some(0), None]);
    allocator.background().wake_kswapd(1);
    assert_eq!(allocator.background().run_due_work(2, 0).kswapd_passes, 0, "CPU 2 does not run it");
    assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 1);
    assert_eq!(allocator.nodes()[1].kswapd_runs(), 1);
    allocator.background().wake_kcompactd(1, 9);
    assert_eq!(allocator.background().run_due_work(0, 0).kcompactd_passes, 1);
    assert_eq!(allocator.counters().compaction_stats(1).compact_daemon_wake, 1);
    allocator.check_invariants().unwrap();
}

#[test]
fn a_memory_only_nodes_work_moves_on_as_its_cpus_go_offline() {
    let allocator = three_nodes();
    assert_eq!(background_cpus(&allocator), [None, Some(0), None]);
    // Node 0 keeps an online CPU: its own work stays with it, and it takes node 1's.
    allocator.hotplug().cpu_offline(0);
    assert_eq!(background_cpus(&allocator), [None, Some(1), None]);
    // Node 0 has no online CPU left: node 2's first online CPU runs both.
    allocator.hotplug().cpu_offline(1);
    assert_eq!(background_cpus(&allocator), [Some(2), Some(2), None]);
    for node in [0, 1] {
        allocator.background().wake_kswapd(node);
    }
    assert_eq!(allocator.background().run_due_work(3, 0).kswapd_passes, 0, "CPU 3 runs neither");
    assert_eq!(allocator.background().run_due_work(2, 0).kswapd_passes, 2);
    assert_eq!((allocator.nodes()[0].kswapd_runs(), allocator.nodes()[1].kswapd_runs()), (1, 1));
    allocator.check_invariants().unwrap();
}

#[test]
fn a_cpu_back_online_takes_its_nodes_work_back() {
    let allocator = three_nodes();
    for cpu in [0, 1] {
        allocator.hotplug().cpu_offline(cpu);
    }
    assert!(allocator.hotplug().cpu_online(1));
    assert_eq!(background_cpus(&allocator), [None, Some(1), None]);
    allocator.background().wake_kswapd(1);
    assert_eq!(allocator.background().run_due_work(2, 0).kswapd_passes, 0, "CPU 2 gave it back");
    assert_eq!(allocator.background().run_due_work(1, 0).kswapd_passes, 1);
    assert!(allocator.hotplug().cpu_online(0));
    assert_eq!(background_cpus(&allocator), [None, Some(0), None], "as built");
    allocator.check_invariants().unwrap();
}

#[test]
fn with_every_cpu_offline_the_work_stays_where_the_build_put_it() {
    let allocator = three_nodes();
    for cpu in 0..4 {
        allocator.hotplug().cpu_offline(cpu);
    }
    assert_eq!(background_cpus(&allocator), [None, Some(0), None]);
    allocator.check_invariants().unwrap();
    assert!(allocator.hotplug().cpu_online(3));
    assert_eq!(background_cpus(&allocator), [Some(3), Some(3), None], "the one online CPU runs all");
    allocator.check_invariants().unwrap();
}

#[test]
fn a_cpu_the_allocator_does_not_know_changes_nothing() {
    let allocator = three_nodes();
    assert_eq!(allocator.hotplug().cpu_offline(4), 0);
    assert!(!allocator.hotplug().cpu_online(4));
    assert_eq!(background_cpus(&allocator), [None, Some(0), None]);
    allocator.check_invariants().unwrap();
}
