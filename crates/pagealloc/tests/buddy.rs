//! Behaviour of the zoned buddy allocator against the kernel's rules.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use std::sync::Arc;

use common::*;
use pagealloc::types::{MAX_ORDER, PAGEBLOCK_PAGES};
use pagealloc::{AllocError, AllocRequest, AllocatorBuilder, FallbackKind, MigrateType, PageAllocator, ZoneType};

#[test]
fn fresh_allocator_holds_all_managed_memory_in_max_order_blocks() {
    let allocator = single_zone(ZoneType::Normal, 16 << 10);
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.managed_pages, 16 << 10);
    assert_eq!(census.free_pages, 16 << 10);
    assert_eq!(buddyinfo(&allocator)[0][MAX_ORDER as usize], 16);
}

#[test]
fn holes_and_reservations_are_neither_managed_nor_allocatable() {
    let allocator = pc(64);
    let dma = &allocator.zones()[0];
    assert_eq!(dma.state().zone_type(), ZoneType::Dma);
    assert_eq!(dma.state().managed_pages(), 4096 - 1 - 0x60);
    assert_eq!(dma.state().present_pages(), 4096);
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.managed_pages, 64 * 256 - 1 - 0x60);
}

#[test]
fn split_takes_smallest_block_and_free_merges_back() {
    let allocator = single_zone(ZoneType::Normal, 1 << 10);
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    // One order-10 block split into 9..0 remainders.
    assert_eq!(buddyinfo(&allocator)[0], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
    let second = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    assert_eq!(second.pfn(), block.pfn() ^ 1, "smallest block first: the order-0 buddy");
    allocator.free_pages(block).unwrap();
    allocator.free_pages(second).unwrap();
    assert_eq!(buddyinfo(&allocator)[0], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    allocator.check_invariants().unwrap();
}

/// buddy_merge_likely(): a freed block whose buddy one order up is free waits at its list's
/// tail; `FragPolicy::merge_likely_to_tail` off (the `pagealloc` preset) lists it at the head.
#[test]
fn a_block_likely_to_merge_goes_to_the_list_tail_unless_the_policy_says_head() {
    for (to_tail, expected_first) in [(true, 6), (false, 8)] {
        let mut policy = preset("global-lock");
        policy.frag.merge_likely_to_tail = to_tail;
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 10).policy(policy);
        let allocator = PageAllocator::build(builder, pagealloc::platform::TestPlatform::new(1)).unwrap();
        // Order-1 blocks at 0, 2, .., 10; pages 12-15 stay free as one order-2 block.
        let mut blocks: Vec<_> =
            (0..6).map(|_| allocator.alloc_pages(1, AllocRequest::USER_MOVABLE).unwrap()).collect();
        let base = blocks[0].pfn();
        assert_eq!(blocks.iter().map(|b| b.pfn() - base).collect::<Vec<_>>(), [0, 2, 4, 6, 8, 10]);
        let at = |blocks: &mut Vec<pagealloc::Block>, pfn| {
            blocks.remove(blocks.iter().position(|b| b.pfn() == base + pfn).unwrap())
        };
        // 6's order-2 buddy (0-3) is allocated: head. 8's (12-15) is free: merge likely.
        allocator.free_pages(at(&mut blocks, 6)).unwrap();
        allocator.free_pages(at(&mut blocks, 8)).unwrap();
        assert_eq!(buddyinfo(&allocator)[0][1], 2);
        let first = allocator.alloc_pages(1, AllocRequest::USER_MOVABLE).unwrap();
        assert_eq!(first.pfn(), base + expected_first, "merge_likely_to_tail = {to_tail}");
        allocator.check_invariants().unwrap();
    }
}

#[test]
fn every_order_allocates_aligned_blocks() {
    let allocator = single_zone(ZoneType::Normal, 8 << 10);
    for order in 0..=MAX_ORDER {
        let block = allocator.alloc_pages(order, AllocRequest::USER_MOVABLE).unwrap();
        assert_eq!(block.pfn() % block.pages(), 0);
        assert_eq!(block.pages(), 1 << order);
        allocator.check_invariants().unwrap();
        allocator.free_pages(block).unwrap();
    }
    assert_eq!(allocator.check_invariants().unwrap().free_pages, 8 << 10);
}

#[test]
fn order_0_allocations_stop_at_the_min_watermark_and_priority_goes_deeper() {
    // 64 MiB Normal zone alone: min_free_kbytes = sqrt(16 * 65536) = 1024 -> min 256 pages.
    let allocator = single_zone(ZoneType::Normal, 16 << 10);
    let marks = allocator.zones()[0].state().params().watermarks;
    assert_eq!((marks.min_pages, marks.low_pages, marks.high_pages), (256, 320, 384));
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE) {
        held.push(block);
    }
    assert_eq!(allocator.zones()[0].free_pages(), 256, "normal requests stop at min");
    assert_eq!(allocator.alloc_pages(0, AllocRequest::NOWAIT), Err(AllocError::OutOfMemory { order: 0 }));
    // GFP_ATOMIC: min/2, then a further quarter off: 256 -> 128 -> 96.
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::ATOMIC) {
        held.push(block);
    }
    assert_eq!(allocator.zones()[0].free_pages(), 96);
    allocator.check_invariants().unwrap();
    for block in held {
        allocator.free_pages(block).unwrap();
    }
    assert_eq!(buddyinfo(&allocator)[0][MAX_ORDER as usize], 16);
}

#[test]
fn dma32_requests_never_get_normal_memory_and_lowmem_reserve_protects_dma32() {
    let allocator = pc(8 << 10);
    let zones = allocator.zones();
    let dma32 = zones.iter().find(|z| z.state().zone_type() == ZoneType::Dma32).unwrap();
    let normal_index = ZoneType::Normal.index();
    let reserve = dma32.state().params().lowmem_reserve[normal_index];
    assert_eq!(
        reserve,
        zones.iter().find(|z| z.state().zone_type() == ZoneType::Normal).unwrap().state().managed_pages() / 256
    );

    let block = allocator.alloc_pages(0, AllocRequest::DMA32).unwrap();
    assert_eq!(allocator.zone_of_pfn(block.pfn()).unwrap().state().zone_type(), ZoneType::Dma32);
    let kernel = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    assert_eq!(
        allocator.zone_of_pfn(kernel.pfn()).unwrap().state().zone_type(),
        ZoneType::Normal,
        "highest zone first"
    );
    allocator.free_pages(block).unwrap();
    allocator.free_pages(kernel).unwrap();
}

#[test]
fn normal_requests_spill_into_dma32_only_down_to_its_protection() {
    // Small Normal zone so it runs out first.
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Dma32, 4096..(4096 + (64 << 8))).zone(
        0,
        ZoneType::Normal,
        (1 << 20)..(1 << 20) + (16 << 8),
    );
    let allocator =
        PageAllocator::build(builder.policy(preset("global-lock")), pagealloc::platform::TestPlatform::new(1)).unwrap();
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE.with_highest_zone(ZoneType::Normal)) {
        held.push(block);
    }
    let dma32 = &allocator.zones()[0];
    let floor =
        dma32.state().params().watermarks.min_pages + dma32.state().params().lowmem_reserve[ZoneType::Normal.index()];
    assert_eq!(dma32.free_pages(), floor, "Normal requests leave min + protection in DMA32");
    // A DMA32 request is not subject to the Normal protection.
    assert!(allocator.alloc_pages(0, AllocRequest::DMA32.with_migratetype(MigrateType::Movable)).is_ok());
    allocator.check_invariants().unwrap();
}

fn recorded_allocator(pages: u64) -> (PageAllocator<pagealloc::platform::TestPlatform>, Arc<ExtfragRecorder>) {
    let recorder = Arc::new(ExtfragRecorder::default());
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, pages)
        .event_sink(Box::new(recorder.clone()))
        .policy(preset("global-lock"));
    (PageAllocator::build(builder, pagealloc::platform::TestPlatform::new(1)).unwrap(), recorder)
}

#[test]
fn first_unmovable_request_claims_a_whole_max_order_block() {
    let (allocator, recorder) = recorded_allocator(8 << 10);
    let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    let events = recorder.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, FallbackKind::Claim);
    assert_eq!(events[0].fallback_order, MAX_ORDER);
    assert_eq!(
        (events[0].start_migratetype, events[0].fallback_migratetype),
        (MigrateType::Unmovable, MigrateType::Movable)
    );
    let counts = allocator.zones()[0].pageblock_counts();
    assert_eq!(counts[MigrateType::Unmovable.index()], 2, "an order-10 block is two pageblocks");
    // The next unmovable request is served natively.
    let second = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    assert_eq!(recorder.events().len(), 1);
    allocator.free_pages(block).unwrap();
    allocator.free_pages(second).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn sparse_movable_pageblock_is_stolen_from_not_claimed_and_boosts_the_watermark() {
    let pages = 8 << 10;
    let (allocator, recorder) = recorded_allocator(pages);
    let held: Vec<_> = std::iter::from_fn(|| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).ok()).collect();
    let min = allocator.zones()[0].state().params().watermarks.min_pages;
    assert_eq!(allocator.zones()[0].free_pages(), min);
    // In a pageblock that is wholly allocated, free 100 scattered pages: too few to claim it
    // for an unmovable request (free + alike < half a pageblock).
    let held_pfns: std::collections::HashSet<u64> = held.iter().map(|b| b.pfn()).collect();
    let base = allocator.zones()[0].start_pfn();
    let full_block = (0..pages / PAGEBLOCK_PAGES)
        .map(|i| base + i * PAGEBLOCK_PAGES)
        .find(|start| (*start..start + PAGEBLOCK_PAGES).all(|pfn| held_pfns.contains(&pfn)))
        .expect("a wholly allocated pageblock");
    let to_free: Vec<u64> = (0..100).map(|i| full_block + 4 * i).collect();
    let (mut freed, _held): (Vec<_>, Vec<_>) = held.into_iter().partition(|block| to_free.contains(&block.pfn()));
    freed.sort_by_key(|block| block.pfn());
    for block in freed {
        allocator.free_pages(block).unwrap();
    }
    recorder.clear();
    let block = allocator.alloc_pages(0, AllocRequest::ATOMIC).unwrap();
    let events = recorder.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, FallbackKind::Steal);
    assert!(events[0].splits_pageblock());
    assert_eq!(allocator.zones()[0].pageblock_counts()[MigrateType::Unmovable.index()], 0, "steal keeps the type");
    assert!(allocator.zones()[0].state().extfrag().snapshot().watermark_boosts > 0);
    assert!(allocator.zones()[0].state().boost_pages() >= PAGEBLOCK_PAGES);
    allocator.check_invariants().unwrap();
    allocator.free_pages(block).unwrap();
}

#[test]
fn high_order_atomic_success_reserves_its_pageblock() {
    // >= 100 pageblocks so that 1% of the zone is at least a pageblock.
    let allocator = single_zone(ZoneType::Normal, 128 * PAGEBLOCK_PAGES);
    // Served by the fast path, which does not reserve: only the slow path's ALLOC_HIGHATOMIC
    // does. Bring the zone near its low watermark so that atomic requests go slow.
    let block = allocator.alloc_pages(2, AllocRequest::ATOMIC).unwrap();
    assert_eq!(allocator.zones()[0].state().reserved_highatomic_pages(), 0);
    let mut held = vec![block];
    while allocator.zones()[0].free_pages() > allocator.zones()[0].state().params().watermarks.low_pages + 8 {
        held.push(allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap());
    }
    let mut atomic = Vec::new();
    while allocator.zones()[0].state().reserved_highatomic_pages() == 0 {
        atomic.push(allocator.alloc_pages(2, AllocRequest::ATOMIC).unwrap());
    }
    assert_eq!(allocator.zones()[0].state().reserved_highatomic_pages(), PAGEBLOCK_PAGES);
    assert_eq!(allocator.zones()[0].pageblock_counts()[MigrateType::HighAtomic.index()], 1);
    // Only the reserve's free pages are withheld from ordinary requests (v6.12 accounting).
    assert!(allocator.zones()[0].free_highatomic_pages() < PAGEBLOCK_PAGES);
    allocator.check_invariants().unwrap();
    // Ordinary requests running out of memory release the reserve before failing.
    let mut more = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
        more.push(block);
    }
    assert_eq!(allocator.zones()[0].state().reserved_highatomic_pages(), 0, "unreserved before OOM");
    allocator.check_invariants().unwrap();
    for block in held.into_iter().chain(atomic).chain(more) {
        allocator.free_pages(block).unwrap();
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn tiny_machines_disable_mobility_grouping() {
    let allocator = single_zone(ZoneType::Normal, 2048);
    assert!(allocator.grouping_disabled());
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let counts = allocator.zones()[0].pageblock_counts();
    assert_eq!(counts[MigrateType::Movable.index()], 4 - counts[MigrateType::Unmovable.index()]);
    assert!(counts[MigrateType::Unmovable.index()] >= 1, "every request is treated as unmovable");
    allocator.free_pages(block).unwrap();
    assert!(!single_zone(ZoneType::Normal, 4096).grouping_disabled());
}

#[test]
fn nodes_prefer_local_memory_and_fall_back_to_remote() {
    let builder = AllocatorBuilder::new().node(1).node(1).zone(0, ZoneType::Normal, (1 << 20)..(1 << 20) + 4096).zone(
        1,
        ZoneType::Normal,
        (2 << 20)..(2 << 20) + 4096,
    );
    let allocator =
        PageAllocator::build(builder.policy(preset("global-lock")), pagealloc::platform::TestPlatform::new(2)).unwrap();
    allocator.platform().set_cpu(1);
    let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    assert_eq!(allocator.zone_of_pfn(block.pfn()).unwrap().state().node(), 1);
    let mut held = vec![block];
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE) {
        held.push(block);
    }
    let remote = held.iter().filter(|b| allocator.zone_of_pfn(b.pfn()).unwrap().state().node() == 0).count();
    assert!(remote > 3000, "node 1 spilled into node 0 ({remote} pages)");
    allocator.check_invariants().unwrap();
}

#[test]
fn cpu_node_map_places_interleaved_cpus_on_their_nodes() {
    // Four CPUs numbered like a 2-socket server: 0 and 2 on node 0, 1 and 3 on node 1.
    let builder = AllocatorBuilder::new()
        .cpu_node_map(vec![0, 1, 0, 1])
        .zone(0, ZoneType::Normal, (1 << 20)..(1 << 20) + 4096)
        .zone(1, ZoneType::Normal, (2 << 20)..(2 << 20) + 4096)
        .policy(preset("global-lock"));
    let allocator = PageAllocator::build(builder, pagealloc::platform::TestPlatform::new(4)).unwrap();
    assert_eq!(allocator.nodes().iter().map(|n| n.cpu_count()).collect::<Vec<_>>(), [2, 2]);
    for (cpu, node) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
        allocator.platform().set_cpu(cpu);
        let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
        assert_eq!(allocator.zone_of_pfn(block.pfn()).unwrap().state().node(), node, "cpu {cpu}");
        allocator.free_pages(block).unwrap();
    }
    let wrong = AllocatorBuilder::new().cpu_node_map(vec![0, 1]).zone(0, ZoneType::Normal, (1 << 20)..(1 << 20) + 4096);
    assert!(matches!(
        PageAllocator::build(wrong, pagealloc::platform::TestPlatform::new(4)),
        Err(pagealloc::BuildError::CpuMismatch { .. })
    ));
}
