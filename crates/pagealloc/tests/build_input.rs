//! Machine descriptions as inputs: any zones, holes and reservations give either a typed
//! `BuildError` or an allocator whose census matches an independent count of the frames,
//! and the invariant checker passes straight after the build.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]
// Inverted ranges are this file's subject.
#![allow(clippy::reversed_empty_ranges)]

mod common;

use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::platform::TestPlatform;
use pagealloc::policy::Policy;
use pagealloc::{AllocRequest, AllocatorBuilder, BuildError, PageAllocator, ZoneType};
use proptest::prelude::*;

/// The finding that motivated this file: an inverted reservation beside overlapping ones
/// corrupted the free lists (pfn 48 listed but interior).
#[test]
fn an_inverted_range_is_an_error_and_overlapping_ones_are_merged() {
    let zone = || AllocatorBuilder::new().zone(0, ZoneType::Normal, 0..4096);
    let inverted = zone().reserve(50..40).reserve(100..3000).reserve(2000..2100);
    let error = PageAllocator::build(inverted, TestPlatform::new(1)).unwrap_err();
    assert_eq!(error, BuildError::InvertedRange { kind: "reserve", range: 50..40 });
    let inverted_hole = zone().hole(9..8);
    assert!(matches!(
        PageAllocator::build(inverted_hole, TestPlatform::new(1)),
        Err(BuildError::InvertedRange { kind: "hole", .. })
    ));
    // Overlapping and partly overlapping reservations count once; an empty one is nothing.
    let overlapping = zone().reserve(100..3000).reserve(2000..2100).reserve(2900..3100).reserve(7..7);
    let allocator = common::build_allocator(overlapping, 1);
    let census = allocator.check_invariants().unwrap();
    assert_eq!(census.managed_pages, 4096 - (3100 - 100));
    assert_eq!(census.free_pages, census.managed_pages);
}

#[test]
fn zones_above_their_address_limit_are_rejected() {
    let dma = AllocatorBuilder::new().zone(0, ZoneType::Dma, 0..DMA32_START_PFN + 1);
    assert!(matches!(
        PageAllocator::build(dma, TestPlatform::new(1)),
        Err(BuildError::ZoneAboveLimit { zone_type: ZoneType::Dma, .. })
    ));
    let dma32 = AllocatorBuilder::new().zone(0, ZoneType::Dma32, DMA32_START_PFN..NORMAL_START_PFN + 512);
    assert!(matches!(
        PageAllocator::build(dma32, TestPlatform::new(1)),
        Err(BuildError::ZoneAboveLimit { zone_type: ZoneType::Dma32, .. })
    ));
    // At the limit exactly is fine.
    let at_limit = AllocatorBuilder::new().zone(0, ZoneType::Dma, 0..DMA32_START_PFN);
    assert!(PageAllocator::build(at_limit, TestPlatform::new(1)).is_ok());
}

#[test]
fn absurd_sizes_and_overrides_are_errors_not_wrapped_arithmetic() {
    for builder in [AllocatorBuilder::pc_layout(u64::MAX), AllocatorBuilder::single_zone(ZoneType::Normal, u64::MAX)] {
        assert!(matches!(
            PageAllocator::build(builder, TestPlatform::new(1)),
            Err(BuildError::ZoneTooLarge { .. } | BuildError::ZoneAboveLimit { .. })
        ));
    }
    // A block keeps its zone beside its pfn, so no zone may reach past PFN_LIMIT.
    let limit = pagealloc::types::PFN_LIMIT;
    let beyond = AllocatorBuilder::new().zone(0, ZoneType::Normal, limit - 1024..limit + 1024);
    assert!(matches!(
        PageAllocator::build(beyond, TestPlatform::new(1)),
        Err(BuildError::ZoneAboveLimit { zone_type: ZoneType::Normal, limit_pfn, .. }) if limit_pfn == limit
    ));
    let mut policy = Policy::default();
    policy.pcp.batch_override = Some(u32::MAX >> 2);
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16).policy(policy);
    assert!(matches!(PageAllocator::build(builder, TestPlatform::new(1)), Err(BuildError::InvalidPolicy(_))));
}

/// Managed frames of a description, counted frame by frame: in a zone, in no hole and in
/// no reservation.
fn expected_managed(zone: &std::ops::Range<u64>, excluded: &[std::ops::Range<u64>]) -> u64 {
    zone.clone().filter(|pfn| !excluded.iter().any(|range| range.contains(pfn))).count() as u64
}

fn range_strategy() -> impl Strategy<Value = std::ops::Range<u64>> {
    // Around a zone of 0x1000..0x3000: some ranges outside it, some inverted, some empty.
    (0u64..0x3400, 0u64..0x3400).prop_map(|(start, end)| start..end)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        common::proptest_cases(64)
    ))]

    #[test]
    fn any_description_builds_correctly_or_is_rejected(
        zone_start in 0u64..0x1800,
        zone_pages in 0u64..0x2000,
        holes in proptest::collection::vec(range_strategy(), 0..4),
        reserves in proptest::collection::vec(range_strategy(), 0..4),
    ) {
        let zone = zone_start..zone_start + zone_pages;
        let mut builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, zone.clone());
        for hole in &holes {
            builder = builder.hole(hole.clone());
        }
        for reserve in &reserves {
            builder = builder.reserve(reserve.clone());
        }
        let inverted = holes.iter().chain(&reserves).any(|range| range.start > range.end);
        match PageAllocator::build(builder, TestPlatform::new(2)) {
            Err(BuildError::InvertedRange { .. }) => prop_assert!(inverted),
            Err(BuildError::EmptySpan { .. }) => prop_assert_eq!(zone_pages, 0),
            Err(other) => prop_assert!(false, "unexpected {other:?}"),
            Ok(allocator) => {
                prop_assert!(!inverted && zone_pages > 0);
                let excluded: Vec<_> = holes.iter().chain(&reserves).cloned().collect();
                let census = allocator.check_invariants().map_err(|v| TestCaseError::fail(v.to_string()))?;
                prop_assert_eq!(census.managed_pages, expected_managed(&zone, &excluded));
                prop_assert_eq!(census.free_pages, census.managed_pages);
                // Everything managed can be allocated and returned.
                let mut held = Vec::new();
                while let Ok(block) = allocator.alloc_pages(0, AllocRequest::ATOMIC) {
                    held.push(block);
                }
                allocator.free_bulk(held).unwrap();
                allocator.pagesets().drain_all();
                let after = allocator.check_invariants().map_err(|v| TestCaseError::fail(v.to_string()))?;
                prop_assert_eq!(after.free_pages, census.managed_pages);
            }
        }
    }
}

/// The name of a variant; exhaustive, so a new variant fails to compile here until the
/// test below reaches it too.
fn variant(error: &BuildError) -> &'static str {
    match error {
        BuildError::NoZones => "NoZones",
        BuildError::UnknownNode { .. } => "UnknownNode",
        BuildError::DuplicateZone { .. } => "DuplicateZone",
        BuildError::Overlap { .. } => "Overlap",
        BuildError::EmptySpan { .. } => "EmptySpan",
        BuildError::DeviceZone => "DeviceZone",
        BuildError::ZoneTooLarge { .. } => "ZoneTooLarge",
        BuildError::CpuMismatch { .. } => "CpuMismatch",
        BuildError::InvertedRange { .. } => "InvertedRange",
        BuildError::ZoneAboveLimit { .. } => "ZoneAboveLimit",
        BuildError::InvalidPolicy(_) => "InvalidPolicy",
        BuildError::Sizing(_) => "Sizing",
        BuildError::MetadataMemoryTooSmall { .. } => "MetadataMemoryTooSmall",
        BuildError::MemoryMap(_) => "MemoryMap",
        // Only without the alloc feature: tests/no_alloc.rs reaches it.
        BuildError::TableFull { .. } => "TableFull",
    }
}

/// Every `BuildError` variant, each from the smallest description that makes it, with a
/// message; `hole()` takes frames out of the census.
#[test]
fn every_build_error_variant_is_reachable() {
    let normal = |span: std::ops::Range<u64>| AllocatorBuilder::new().zone(0, ZoneType::Normal, span);
    let mut zero_batch = Policy::default();
    zero_batch.pcp.batch_override = Some(0);
    let tunables = pagealloc::sizing::Tunables { percpu_pagelist_high_fraction: 3, ..Default::default() };
    let cases: Vec<(&str, AllocatorBuilder, usize)> = vec![
        ("NoZones", AllocatorBuilder::new(), 1),
        ("UnknownNode", AllocatorBuilder::new().zone(3, ZoneType::Normal, 0..4096), 1),
        ("DuplicateZone", normal(0..4096).zone(0, ZoneType::Normal, 8192..12288), 1),
        ("Overlap", normal(0..4096).zone(0, ZoneType::Movable, 2048..8192), 1),
        ("EmptySpan", normal(4096..4096), 1),
        ("DeviceZone", AllocatorBuilder::new().zone(0, ZoneType::Device, 0..4096), 1),
        ("ZoneTooLarge", normal(NORMAL_START_PFN..NORMAL_START_PFN + (1 << 33)), 1),
        ("CpuMismatch", normal(0..4096).node(3), 2),
        ("InvertedRange", normal(0..4096).hole(9..8), 1),
        ("ZoneAboveLimit", AllocatorBuilder::new().zone(0, ZoneType::Dma, 0..DMA32_START_PFN + 1), 1),
        ("InvalidPolicy", normal(0..4096).policy(zero_batch), 1),
        ("Sizing", normal(0..4096).tunables(tunables), 1),
    ];
    let proactiveness = pagealloc::sizing::Tunables { compaction_proactiveness: 101, ..Default::default() };
    let threshold = pagealloc::sizing::Tunables { extfrag_threshold: 1001, ..Default::default() };
    let cases: Vec<(&str, AllocatorBuilder, usize)> = cases
        .into_iter()
        .chain([
            ("InvalidPolicy", normal(0..4096).tunables(proactiveness), 1),
            ("InvalidPolicy", normal(0..4096).tunables(threshold), 1),
        ])
        .collect();
    for (expected, builder, cpus) in cases {
        let error = PageAllocator::build(builder, TestPlatform::new(cpus)).expect_err(expected);
        assert_eq!(variant(&error), expected, "{error:?}");
        assert!(!error.to_string().is_empty());
    }
    let heap = Box::leak(vec![std::mem::MaybeUninit::uninit(); 1024].into_boxed_slice());
    // SAFETY: heap memory is no frame of the described zone.
    let memory = unsafe { pagealloc::MetadataMemory::outside_managed_memory(heap) };
    let error = PageAllocator::build_in(normal(0..4096), TestPlatform::new(1), memory).expect_err("too small");
    assert_eq!(variant(&error), "MetadataMemoryTooSmall", "{error:?}");
    assert!(!error.to_string().is_empty());
    let holed = normal(0..4096).hole(100..612).hole(4000..5000);
    let allocator = common::build_allocator(holed, 1);
    assert_eq!(allocator.check_invariants().unwrap().free_pages, 4096 - 512 - 96);
}

/// A switch set where it cannot act is refused at build, naming it; every preset passes.
/// Each case starts from mainline (or `pagealloc`) and changes one thing.
#[test]
fn switches_that_do_nothing_are_refused_and_every_preset_builds() {
    for preset in pagealloc::presets::PRESETS {
        assert_eq!(preset.policy.inert_switch(), None, "{}", preset.name);
    }
    let mainline = common::preset("mainline");
    let pagealloc_preset = common::preset("pagealloc");
    let mut coalesce_two_pass = mainline;
    (coalesce_two_pass.pcp.drain.beyond_linux.coalesce_runs, coalesce_two_pass.pcp.drain.two_pass) = (true, true);
    let mut capped_without_free_high = mainline;
    (capped_without_free_high.pcp.free_high_capped, capped_without_free_high.pcp.free_high) =
        (true, pagealloc::policy::FreeHighRule::Off);
    let mut thp_shift_without_lists = mainline;
    (thp_shift_without_lists.pcp.thp_batch_shift, thp_shift_without_lists.pcp.thp_lists) = (4, 0);
    let mut warm_without_list = mainline;
    warm_without_list.pcp.drain.beyond_linux.warm_merges = true;
    let mut handed_without_arenas = pagealloc_preset;
    handed_without_arenas.arenas = pagealloc::policy::ArenaRule::PerNode;
    let mut threshold_without_fullest = mainline;
    threshold_without_fullest.frag.beyond_linux.buddy_bound_free_pages = 64;
    let mut parked_without_fullest = mainline;
    parked_without_fullest.frag.beyond_linux.parked_frees = true;
    let cases = [
        ("drain.coalesce_runs", coalesce_two_pass),
        ("free_high_capped", capped_without_free_high),
        ("thp_batch_shift", thp_shift_without_lists),
        ("drain.warm_merges", warm_without_list),
        ("drain.hand_remote_frees", handed_without_arenas),
        ("frag.buddy_bound_free_pages", threshold_without_fullest),
        ("frag.parked_frees", parked_without_fullest),
    ];
    for (switch, policy) in cases {
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16).policy(policy);
        match PageAllocator::build(builder, TestPlatform::new(2)) {
            Err(BuildError::InvalidPolicy(why)) => assert!(why.starts_with(switch), "{switch}: {why}"),
            other => panic!("{switch}: {:?}", other.map(|_| "built")),
        }
    }
    // Neutral values never trip a rule: pagesets off keep their switches.
    let mut global_lock = mainline;
    global_lock.pcp.enabled = false;
    global_lock.pcp.drain.beyond_linux.coalesce_runs = true;
    assert_eq!(global_lock.inert_switch(), None);
}
