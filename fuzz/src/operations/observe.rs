//! What the harness reads off the allocator beyond the checker's census: a fingerprint of
//! everything observable, for "nothing changed" checks after a refused request or a foreign
//! free, and the pages cached on pagesets, for checking what drains return.

use pagealloc::platform::TestPlatform;
use pagealloc::types::NR_ORDERS;
use pagealloc::{PageAllocator, PageCensus};

/// Everything observable about an allocator, for "nothing changed" checks.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Fingerprint {
    /// The checker's census, when the fingerprint is a full one.
    census: Option<PageCensus>,
    pub(super) buddyinfo: Vec<[u64; NR_ORDERS]>,
    pageblocks: Vec<[u64; 6]>,
    free_pages: Vec<u64>,
    pageset_pages: Vec<Vec<u32>>,
    boost: Vec<u64>,
    highatomic: Vec<u64>,
}

pub(super) fn fingerprint(allocator: &PageAllocator<TestPlatform>, full: bool) -> Fingerprint {
    let platform = allocator.platform();
    let zones = allocator.zones();
    Fingerprint {
        census: full.then(|| allocator.check_invariants().unwrap_or_else(|v| panic!("{v}"))),
        buddyinfo: zones
            .iter()
            .map(|z| z.with_free_area(platform, |area| std::array::from_fn(|order| area.blocks_of_order(order))))
            .collect(),
        pageblocks: zones.iter().map(|z| z.pageblock_counts()).collect(),
        free_pages: zones.iter().map(|z| z.free_pages()).collect(),
        pageset_pages: zones.iter().map(|z| pageset_pages(allocator, z.state().index())).collect(),
        boost: zones.iter().map(|z| z.state().boost_pages()).collect(),
        highatomic: zones.iter().map(|z| z.state().reserved_highatomic_pages()).collect(),
    }
}

/// Pages on each CPU's pageset of a zone.
fn pageset_pages(allocator: &PageAllocator<TestPlatform>, zone: u16) -> Vec<u32> {
    let zone = &allocator.zones()[usize::from(zone)];
    zone.pagesets().iter().map(|slot| slot.inspect(allocator.platform(), |pcp| pcp.count_pages())).collect()
}

/// Pages on one CPU's pagesets, over every zone.
pub(super) fn cpu_pageset_pages(allocator: &PageAllocator<TestPlatform>, cpu: usize) -> u64 {
    allocator
        .zones()
        .iter()
        .map(|zone| pageset_pages(allocator, zone.state().index()).get(cpu).map_or(0, |&p| p as u64))
        .sum()
}
