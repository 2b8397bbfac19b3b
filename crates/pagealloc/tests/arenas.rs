//! Per-CPU arenas (`ArenaRule::PerCpu`, the `pagealloc` preset): each node's zones cut
//! into one arena per CPU of the node, each a node of its own.

#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::builder::MIN_ARENA_PAGES;
use pagealloc::policy::ArenaRule;
use pagealloc::types::PAGEBLOCK_ORDER;
use pagealloc::vmstat::NumaEvent;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, ZoneType};

const GIB_PAGES: u64 = 1 << 18;

fn build(builder: AllocatorBuilder, cpus: usize) -> TestAllocator {
    build_allocator(builder.policy(preset("pagealloc")), cpus)
}

fn arena_of(allocator: &TestAllocator, block: &Block) -> u16 {
    let zone = allocator
        .zones()
        .iter()
        .find(|zone| (zone.start_pfn()..zone.start_pfn() + zone.spanned_pages()).contains(&block.pfn()));
    zone.expect("a block lies in a zone").state().node()
}

#[test]
fn each_cpu_allocates_from_its_own_arena_and_frees_go_home() {
    assert_eq!(preset("pagealloc").arenas, ArenaRule::PerCpu);
    let allocator = build(AllocatorBuilder::single_zone(ZoneType::Normal, GIB_PAGES), 2);
    assert_eq!(allocator.zones().len(), 2);
    assert_eq!(allocator.nodes().len(), 2);
    assert_eq!(allocator.counters().managed_pages(), GIB_PAGES);
    let spans: Vec<_> = allocator.zones().iter().map(|z| (z.start_pfn(), z.spanned_pages())).collect();
    assert_eq!(spans[0].0 + spans[0].1, spans[1].0, "arenas are consecutive");
    let mut held = Vec::new();
    for cpu in 0..2 {
        allocator.platform().set_cpu(cpu);
        assert_eq!(allocator.node_of_cpu(cpu), cpu as u16);
        let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
        assert_eq!(arena_of(&allocator, &block), cpu as u16);
        held.push(block);
    }
    // A free from the other CPU returns the page to its own arena.
    allocator.platform().set_cpu(1);
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    allocator.pagesets().drain_all();
    assert_eq!(allocator.check_invariants().unwrap().free_pages, GIB_PAGES);
}

#[test]
fn an_exhausted_arena_falls_back_to_its_neighbour() {
    let allocator = build(AllocatorBuilder::single_zone(ZoneType::Normal, GIB_PAGES), 2);
    allocator.platform().set_cpu(0);
    let held: Vec<Block> = std::iter::from_fn(|| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).ok()).collect();
    assert!(held.iter().any(|block| arena_of(&allocator, block) == 1), "CPU 0 went on into arena 1");
    assert!(held.len() as u64 > GIB_PAGES * 9 / 10, "{} of {GIB_PAGES} pages", held.len());
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn arenas_are_at_least_the_minimum_and_at_most_one_per_cpu() {
    // Too small to cut: one zone.
    let small = build(AllocatorBuilder::single_zone(ZoneType::Normal, 2 * MIN_ARENA_PAGES - 1), 4);
    assert_eq!(small.zones().len(), 1);
    // 3 arenas' worth on 8 CPUs: 3 arenas, CPUs round robin.
    let three = build(AllocatorBuilder::single_zone(ZoneType::Normal, 3 * MIN_ARENA_PAGES), 8);
    assert_eq!(three.zones().len(), 3);
    assert!(three.zones().iter().all(|zone| zone.spanned_pages() >= MIN_ARENA_PAGES));
    assert_eq!((0..8).map(|cpu| three.node_of_cpu(cpu)).collect::<Vec<_>>(), [0, 1, 2, 0, 1, 2, 0, 1]);
    // With the alloc feature, no cap below the CPUs: 16 CPUs, 16 arenas.
    let sixteen = build(AllocatorBuilder::single_zone(ZoneType::Normal, 16 * MIN_ARENA_PAGES), 16);
    assert_eq!(sixteen.zones().len(), 16);
    assert_eq!((0..16).map(|cpu| sixteen.node_of_cpu(cpu)).collect::<Vec<_>>(), (0..16).collect::<Vec<u16>>());
    // One CPU: nothing to cut.
    assert_eq!(build(AllocatorBuilder::single_zone(ZoneType::Normal, GIB_PAGES), 1).zones().len(), 1);
    three.check_invariants().unwrap();
}

/// Arenas are cut by the pages present, not by the span: a span whose second half is mostly
/// a hole still gives every arena at least the minimum, and as many arenas as the present
/// memory holds.
#[test]
fn arenas_are_cut_by_present_pages_around_holes() {
    let start = 1 << 20; // 4 GiB
    let end = start + 8 * MIN_ARENA_PAGES;
    // Present: the first 3.5 minimums, and the last half minimum of the span.
    let hole = start + 7 * MIN_ARENA_PAGES / 2..end - MIN_ARENA_PAGES / 2;
    let builder = AllocatorBuilder::new().node(4).zone(0, ZoneType::Normal, start..end).hole(hole.clone());
    let allocator = build(builder, 4);
    let managed: Vec<u64> = allocator.zones().iter().map(|zone| zone.state().managed_pages()).collect();
    assert_eq!(managed.iter().sum::<u64>(), 4 * MIN_ARENA_PAGES);
    assert!(managed.iter().all(|&pages| pages >= MIN_ARENA_PAGES), "every arena at least the minimum: {managed:?}");
    assert_eq!(managed.len(), 4, "as many arenas as the present pages hold: {managed:?}");
    // Too little present for two arenas, however wide the span: one zone.
    let sparse =
        AllocatorBuilder::new().node(4).zone(0, ZoneType::Normal, start..end).hole(start + MIN_ARENA_PAGES..end - 1024);
    assert_eq!(build(sparse, 4).zones().len(), 1);
    allocator.check_invariants().unwrap();
}

#[test]
fn small_zones_stay_whole_in_the_first_arena() {
    // PC layout, 4 GiB: DMA (16 MiB) stays whole; DMA32 and Normal are cut.
    let pc = build(AllocatorBuilder::pc_layout(4096), 2);
    let per_node: Vec<Vec<ZoneType>> = (0..2)
        .map(|node| pc.zones().iter().filter(|z| z.state().node() == node).map(|z| z.state().zone_type()).collect())
        .collect();
    assert_eq!(per_node[0], [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]);
    assert_eq!(per_node[1], [ZoneType::Dma32, ZoneType::Normal]);
    assert_eq!(
        pc.counters().managed_pages(),
        build_linux(AllocatorBuilder::pc_layout(4096)).counters().managed_pages()
    );
    pc.check_invariants().unwrap();
}

/// Two nodes of 2 CPUs and 2 arenas' worth of memory each: four arenas, each node's CPUs on
/// its own node's arenas; a CPU whose arena runs dry goes on into its node's other arena
/// before the other node's.
#[test]
fn numa_nodes_are_cut_into_arenas_of_their_own() {
    let node_pages = 2 * MIN_ARENA_PAGES;
    let base = 1 << 20;
    let numa = AllocatorBuilder::new().node(2).node(2).zone(0, ZoneType::Normal, base..base + node_pages).zone(
        1,
        ZoneType::Normal,
        base + node_pages..base + 2 * node_pages,
    );
    let allocator = build(numa, 4);
    assert_eq!(allocator.zones().len(), 4);
    assert_eq!((0..4).map(|cpu| allocator.node_of_cpu(cpu)).collect::<Vec<_>>(), [0, 1, 2, 3]);
    let node_end = base + node_pages;
    assert!(allocator.zones().iter().all(|zone| {
        let end = zone.start_pfn() + zone.spanned_pages();
        (zone.state().node() < 2) == (end <= node_end)
    }));
    allocator.platform().set_cpu(1);
    let held: Vec<Block> =
        (0..MIN_ARENA_PAGES * 3 / 2).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    let arenas: std::collections::BTreeSet<u16> = held.iter().map(|block| arena_of(&allocator, block)).collect();
    assert_eq!(arenas.into_iter().collect::<Vec<_>>(), [0, 1], "node 0's arenas first");
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    allocator.check_invariants().unwrap();
}

fn build_linux(builder: AllocatorBuilder) -> TestAllocator {
    build_allocator(builder.policy(preset("mainline")), 2)
}

/// A free into another CPU's arena waits on the buddy-bound list, not in a remote pageset
/// that would keep it from merging until the pageset expires.
#[test]
fn frees_into_another_arena_go_to_its_buddy_not_to_a_remote_pageset() {
    let allocator = build(AllocatorBuilder::single_zone(ZoneType::Normal, GIB_PAGES), 2);
    allocator.platform().set_cpu(0);
    let held: Vec<Block> = (0..64).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    assert!(held.iter().all(|block| arena_of(&allocator, block) == 0));
    allocator.platform().set_cpu(1);
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    let remote = &allocator.zones()[0].pagesets()[1];
    let (listed, waiting) = remote.inspect(allocator.platform(), |p| (p.count_pages(), p.buddy_bound_pages()));
    assert_eq!(listed, 0, "CPU 1's pageset of arena 0 lists nothing");
    assert!(waiting < 8, "at most a flush's worth waits: {waiting}");
    allocator.check_invariants().unwrap();
}

/// Random allocations and frees of orders 0-9 from both CPUs across two arenas, with the
/// invariant checker between rounds: no page lost or doubled, every arena consistent.
#[test]
fn random_traffic_across_arenas_keeps_every_invariant() {
    let pages = 4 * MIN_ARENA_PAGES;
    let allocator = build(AllocatorBuilder::single_zone(ZoneType::Normal, pages), 2);
    assert_eq!(allocator.zones().len(), 2);
    let mut rng = Rng(0x5eed);
    let mut held: Vec<Block> = Vec::new();
    for round in 0..20 {
        for _ in 0..2_000 {
            allocator.platform().set_cpu(rng.below(2) as usize);
            if held.is_empty() || rng.below(3) != 0 {
                let order = [0, 0, 0, 1, 3, 9][rng.below(6) as usize];
                if let Ok(block) = allocator.alloc_pages(order, AllocRequest::USER_MOVABLE) {
                    held.push(block);
                }
            } else {
                let victim = rng.below(held.len() as u64) as usize;
                allocator.free_pages(held.swap_remove(victim)).unwrap();
            }
        }
        let census = allocator.check_invariants().unwrap_or_else(|v| panic!("round {round}: {v:?}"));
        let held_pages: u64 = held.iter().map(|block| block.pages()).sum();
        assert_eq!(census.allocated_pages, held_pages, "round {round}");
        assert_eq!(census.free_pages + census.pcp_pages + held_pages, pages, "round {round}");
    }
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    allocator.pagesets().drain_all();
    assert_eq!(allocator.check_invariants().unwrap().free_pages, pages);
}

/// A memory-only node (CXL memory, no CPUs) beside a node of CPUs: the node of CPUs is cut
/// into arenas, the memory-only node stays one, and requests keep naming the described
/// nodes: node 1 is the memory-only node's memory, node 0 the calling CPU's arena, and a
/// third node does not exist.
#[test]
fn requests_name_described_nodes_beside_a_memory_only_node() {
    let base = 1 << 20;
    let node0_end = base + 2 * MIN_ARENA_PAGES;
    let described = AllocatorBuilder::new().node(2).node(0).zone(0, ZoneType::Normal, base..node0_end).zone(
        1,
        ZoneType::Normal,
        node0_end..node0_end + MIN_ARENA_PAGES,
    );
    let allocator = build(described, 2);
    assert_eq!(allocator.zones().len(), 3, "node 0 in two arenas, node 1 whole");
    assert_eq!(allocator.described_nodes(), 2);
    allocator.platform().set_cpu(1);
    let far = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE.on_node(1)).unwrap();
    assert!(far.pfn() >= node0_end, "node 1's memory: {:#x}", far.pfn());
    let near = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE.on_node(0)).unwrap();
    assert_eq!(arena_of(&allocator, &near), allocator.node_of_cpu(1), "the calling CPU's own arena");
    let missing = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE.on_node(2));
    assert_eq!(missing.unwrap_err(), pagealloc::AllocError::NoSuchNode { node: 2, nodes: 2 });
    allocator.free_pages(far).unwrap();
    allocator.free_pages(near).unwrap();
    allocator.check_invariants().unwrap();
}

fn numa(allocator: &TestAllocator, event: NumaEvent) -> u64 {
    allocator.counters().numa_event(event)
}

/// Arenas of one node are one NUMA node: CPU 0 running out of its arena into its sibling's
/// counts numa_hit and numa_local only (zone_statistics() compares nodes, and the arenas
/// share one), where going on into another node's arenas counts numa_miss, numa_foreign and
/// numa_other.
#[test]
fn a_fallback_into_a_sibling_arena_is_a_numa_hit_and_into_another_node_a_miss() {
    let node_pages = 2 * MIN_ARENA_PAGES;
    let base = 1 << 20;
    let numa_machine = AllocatorBuilder::new().node(2).node(2).zone(0, ZoneType::Normal, base..base + node_pages).zone(
        1,
        ZoneType::Normal,
        base + node_pages..base + 2 * node_pages,
    );
    let allocator = build(numa_machine, 4);
    assert_eq!((allocator.nodes().len(), allocator.described_nodes()), (4, 2));
    allocator.platform().set_cpu(0);
    let mut held: Vec<Block> = Vec::new();
    while held.last().is_none_or(|block| arena_of(&allocator, block) < 2) {
        held.push(allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap());
    }
    assert!(held.iter().any(|block| arena_of(&allocator, block) == 1), "CPU 0 went on into arena 1");
    let on_node_0 = held.len() as u64 - 1;
    assert_eq!((numa(&allocator, NumaEvent::Hit), numa(&allocator, NumaEvent::Local)), (on_node_0, on_node_0));
    let off_node = [NumaEvent::Miss, NumaEvent::Foreign, NumaEvent::Other].map(|event| numa(&allocator, event));
    assert_eq!(off_node, [1, 1, 1], "only the block from node 1's arena");
    allocator.free_bulk(held).unwrap();
    allocator.check_invariants().unwrap();
}

/// NOFRAGMENT holds across the arenas of one node, as across the zones of one node in Linux
/// (get_page_from_freelist() drops it only at another node's zone): a movable request whose
/// own arena has free memory only in partly used unmovable pageblocks takes its sibling's
/// movable memory rather than fragment its own.
#[test]
fn nofragment_holds_across_sibling_arenas() {
    let recorder: &'static ExtfragRecorder = Box::leak(Box::default());
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 2 * MIN_ARENA_PAGES).event_sink_static(recorder);
    let allocator = build(builder, 2);
    allocator.platform().set_cpu(0);
    // Arena 0's pageblocks taken whole for unmovable requests until it runs dry...
    let mut unmovable = Vec::new();
    loop {
        let block = allocator.alloc_pages(PAGEBLOCK_ORDER, AllocRequest::KERNEL).unwrap();
        if arena_of(&allocator, &block) != 0 {
            allocator.free_pages(block).unwrap();
            break;
        }
        unmovable.push(block);
    }
    // ... then each freed but one page: its free memory lies in unmovable pageblocks, none
    // of them whole.
    let mut kept = Vec::new();
    for block in unmovable {
        let mut pages = allocator.split(block).unwrap();
        kept.push(pages.next().unwrap());
        allocator.free_bulk(pages.collect::<Vec<Block>>()).unwrap();
    }
    allocator.pagesets().drain_all();
    recorder.clear();
    let movable: Vec<Block> =
        (0..MIN_ARENA_PAGES / 4).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    assert!(movable.iter().any(|block| arena_of(&allocator, block) == 1), "arena 1 served the rest");
    // Whole free pageblocks (the pageset's unused unmovable blocks, drained) may be claimed:
    // that fragments nothing.
    let events = recorder.events().into_iter();
    let fragmenting: Vec<_> = events.filter(|event| event.zone_index == 0 && event.splits_pageblock()).collect();
    assert!(fragmenting.is_empty(), "arena 0 fragmented {} times: {:?}", fragmenting.len(), fragmenting.first());
    allocator.free_bulk(movable).unwrap();
    allocator.free_bulk(kept).unwrap();
    allocator.check_invariants().unwrap();
}
