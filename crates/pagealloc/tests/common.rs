//! Shared test helpers.
#![allow(dead_code)]
// Shared by the tests that need the alloc feature.
#![cfg(feature = "alloc")]

use pagealloc::platform::TestPlatform;
use pagealloc::types::NR_ORDERS;
use pagealloc::{AllocatorBuilder, PageAllocator, PageCensus, Policy, ZoneType};

pub type TestAllocator = PageAllocator<TestPlatform>;

/// Property-test cases: `PROPTEST_CASES` when set (for long runs), else `default`.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

/// Policy of a named preset.
pub fn preset(name: &str) -> Policy {
    pagealloc::presets::find(name).unwrap_or_else(|| panic!("no preset {name}")).policy
}

/// One zone, pagesets off: buddy mechanics exactly.
pub fn single_zone(zone_type: ZoneType, pages: u64) -> TestAllocator {
    let builder = AllocatorBuilder::single_zone(zone_type, pages).policy(preset("global-lock"));
    PageAllocator::build(builder, TestPlatform::new(1)).unwrap()
}

/// PC layout on 2 CPUs, pagesets off.
pub fn pc(total_mib: u64) -> TestAllocator {
    pc_with(total_mib, "global-lock", 2)
}

/// PC layout with a preset and CPU count.
pub fn pc_with(total_mib: u64, preset_name: &str, cpus: usize) -> TestAllocator {
    let builder = AllocatorBuilder::pc_layout(total_mib).policy(preset(preset_name));
    PageAllocator::build(builder, TestPlatform::new(cpus)).unwrap()
}

/// Frees by frame number a block the test does not own: a frame never allocated, already
/// free, inside a block, or a live block at a wrong order. The rejection is what the test
/// checks.
pub fn free_unowned<P: pagealloc::platform::Platform>(
    allocator: &PageAllocator<P>,
    pfn: u64,
    order: u8,
) -> Result<(), pagealloc::FreeError> {
    // SAFETY: deliberately outside free_pfn's contract, on frames whose state shows it
    // (the callers name no block that another owner holds at that order), so the
    // allocator must reject the free and change nothing; the tests check both.
    unsafe { allocator.free_pfn(pfn, order) }
}

/// Free blocks per order per zone: the buddyinfo numbers.
pub fn buddyinfo(allocator: &TestAllocator) -> Vec<[u64; NR_ORDERS]> {
    allocator
        .zones()
        .iter()
        .map(|zone| {
            zone.with_free_area(allocator.platform(), |area| std::array::from_fn(|order| area.blocks_of_order(order)))
        })
        .collect()
}

/// Everything observable about the allocator's state, for "nothing changed" checks.
#[derive(Debug, PartialEq, Eq)]
pub struct StateFingerprint {
    census: PageCensus,
    buddyinfo: Vec<[u64; NR_ORDERS]>,
    pageblocks: Vec<[u64; 6]>,
    free_pages: Vec<u64>,
}

pub fn fingerprint(allocator: &TestAllocator) -> StateFingerprint {
    StateFingerprint {
        census: allocator.check_invariants().expect("invariants hold"),
        buddyinfo: buddyinfo(allocator),
        pageblocks: allocator.zones().iter().map(|z| z.pageblock_counts()).collect(),
        free_pages: allocator.zones().iter().map(|z| z.free_pages()).collect(),
    }
}

/// xorshift64: a fixed sequence for a seed, so a test is the same every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}
