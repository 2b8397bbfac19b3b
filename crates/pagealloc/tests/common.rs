//! Shared test helpers.
#![allow(dead_code)]
// Shared by the tests that need the alloc feature.
#![cfg(feature = "alloc")]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use pagealloc::allocator::{Reclaim, ReclaimRequest};
use pagealloc::platform::TestPlatform;
use pagealloc::types::NR_ORDERS;
use pagealloc::{AllocatorBuilder, Block, PageAllocator, PageCensus, Policy, ZoneType};
use pagealloc::{EventSink, ExtfragEvent};

pub type TestAllocator = PageAllocator<TestPlatform>;

/// Property-test cases: `PROPTEST_CASES` when set (for long runs), else `default`.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

/// Policy of a named preset.
pub fn preset(name: &str) -> Policy {
    pagealloc::presets::find(name).unwrap_or_else(|| panic!("no preset {name}")).policy
}

/// Builds `builder`'s machine on `cpus` test CPUs.
pub fn build_allocator(builder: AllocatorBuilder, cpus: usize) -> TestAllocator {
    PageAllocator::build(builder, TestPlatform::new(cpus)).unwrap()
}

/// One Normal zone of `pages` under `policy`, on `cpus` test CPUs.
pub fn one_normal_zone(pages: u64, policy: Policy, cpus: usize) -> TestAllocator {
    build_allocator(AllocatorBuilder::single_zone(ZoneType::Normal, pages).policy(policy), cpus)
}

/// Three nodes of `node_pages` Normal pages each from pfn 2^20: nodes 0 and 2 with two CPUs
/// each (CPUs 0-1 and 2-3), node 1 with memory only.
pub fn three_nodes_builder(node_pages: u64) -> AllocatorBuilder {
    let span = |node: u64| (1 << 20) + node * node_pages..(1 << 20) + (node + 1) * node_pages;
    AllocatorBuilder::new()
        .node(2)
        .node(0)
        .node(2)
        .zone(0, ZoneType::Normal, span(0))
        .zone(1, ZoneType::Normal, span(1))
        .zone(2, ZoneType::Normal, span(2))
}

/// What a refused operation must leave unchanged: /proc/buddyinfo and /proc/pagetypeinfo
/// after a drain of every pageset, the pages allocated and the pages managed.
pub fn refusal_snapshot(allocator: &TestAllocator) -> (String, u64, u64) {
    allocator.pagesets().drain_all();
    let mut text = String::new();
    pagealloc::views::write_buddyinfo(&mut text, allocator).unwrap();
    pagealloc::views::write_pagetypeinfo(&mut text, allocator).unwrap();
    let census = allocator.check_invariants().unwrap();
    (text, census.allocated_pages, allocator.counters().managed_pages())
}

/// One zone, pagesets off: buddy mechanics exactly.
pub fn single_zone(zone_type: ZoneType, pages: u64) -> TestAllocator {
    build_allocator(AllocatorBuilder::single_zone(zone_type, pages).policy(preset("global-lock")), 1)
}

/// PC layout on 2 CPUs, pagesets off.
pub fn pc(total_mib: u64) -> TestAllocator {
    pc_with(total_mib, "global-lock", 2)
}

/// PC layout with a preset and CPU count.
pub fn pc_with(total_mib: u64, preset_name: &str, cpus: usize) -> TestAllocator {
    build_allocator(AllocatorBuilder::pc_layout(total_mib).policy(preset(preset_name)), cpus)
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

#[path = "../src/test_rng.rs"]
mod test_rng;
#[allow(unused_imports)]
pub use test_rng::Rng;

/// Records every fallback event (`EventSink::extfrag`) the allocator reports.
#[derive(Default)]
pub struct ExtfragRecorder(Mutex<Vec<ExtfragEvent>>);

impl ExtfragRecorder {
    /// The events so far, oldest first.
    pub fn events(&self) -> Vec<ExtfragEvent> {
        self.0.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

impl EventSink for ExtfragRecorder {
    fn extfrag(&self, event: &ExtfragEvent) {
        self.0.lock().unwrap().push(*event);
    }
}

/// A reclaim client's clean page cache: pages in the order they were read in (`read`);
/// reclaim drops the oldest first and frees them through the allocator, and every request
/// is kept.
#[derive(Default)]
pub struct OldestFirstCache {
    pub pages: Mutex<VecDeque<Block>>,
    pub requests: Mutex<Vec<ReclaimRequest>>,
    /// Frees at most this many pages a request (0: as many as asked), as a cache whose
    /// pages are mostly dirty or mapped would.
    pub most_per_request: AtomicU64,
}

impl OldestFirstCache {
    /// Reads `page` into the cache, as its newest page.
    pub fn read(&self, page: Block) {
        self.pages.lock().unwrap().push_back(page);
    }
}

impl Reclaim<TestPlatform> for OldestFirstCache {
    fn reclaim(&self, allocator: &PageAllocator<TestPlatform>, request: ReclaimRequest) -> u64 {
        self.requests.lock().unwrap().push(request);
        let most = match self.most_per_request.load(Relaxed) {
            0 => request.pages,
            most => most.min(request.pages),
        };
        let mut freed = 0;
        while freed < most {
            // Taken out of the lock before the free: the client holds none of its locks
            // while it calls the allocator.
            let Some(page) = self.pages.lock().unwrap().pop_front() else { break };
            allocator.free_pages(page).expect("the cache frees what it holds");
            freed += 1;
        }
        freed
    }
}
