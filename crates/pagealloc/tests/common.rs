//! Shared test helpers.
#![allow(dead_code)]

use pagealloc::platform::TestPlatform;
use pagealloc::types::NR_ORDERS;
use pagealloc::{AllocatorBuilder, PageAllocator, PageCensus, ZoneType};

pub type TestAllocator = PageAllocator<TestPlatform>;

pub fn single_zone(zone_type: ZoneType, pages: u64) -> TestAllocator {
    PageAllocator::build(AllocatorBuilder::single_zone(zone_type, pages), TestPlatform::new(1)).unwrap()
}

pub fn pc(total_mib: u64) -> TestAllocator {
    PageAllocator::build(AllocatorBuilder::pc_layout(total_mib), TestPlatform::new(2)).unwrap()
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
