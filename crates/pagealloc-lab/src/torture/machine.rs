//! The machine a torture run drives: every zone type a request can name (DMA, DMA32, Normal,
//! Movable), so DMA requests, lowmem reserves and zone fallbacks all see traffic, on the
//! real-thread platform; and, unless turned off, a second node with memory and no CPUs (a
//! Normal zone above node 0's), whose kswapd and kcompactd node 0's first CPU runs.

use std::ops::Range;

use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::platform::{Platform, StdPlatform};
use pagealloc::presets::Preset;
use pagealloc::sizing::Tunables;
use pagealloc::{AllocatorBuilder, PageAllocator, Pfn, ZoneType};

const PAGES_PER_MIB: u64 = 256;
/// vm.stat_interval of the run: short, so each CPU's vmstat pass (pageset decay and remote
/// drains) runs many times in a few seconds, racing the workers.
const STAT_INTERVAL_MS: u32 = 10;

/// Zone spans for `memory_mib` (at least 64): 16 MiB of DMA with pfn 0 reserved as on a PC,
/// then the rest split 1:2:1 over DMA32 (above 16 MiB), Normal (from 4 GiB) and Movable
/// (right after Normal).
fn zone_spans(memory_mib: u64) -> [(ZoneType, Range<Pfn>); 4] {
    let rest_pages = (memory_mib - 16) * PAGES_PER_MIB;
    let (dma32_pages, normal_pages) = (rest_pages / 4, rest_pages / 2);
    let movable_pages = rest_pages - dma32_pages - normal_pages;
    let normal_end = NORMAL_START_PFN + normal_pages;
    [
        (ZoneType::Dma, 0..DMA32_START_PFN),
        (ZoneType::Dma32, DMA32_START_PFN..DMA32_START_PFN + dma32_pages),
        (ZoneType::Normal, NORMAL_START_PFN..normal_end),
        (ZoneType::Movable, normal_end..normal_end + movable_pages),
    ]
}

/// A fresh allocator for one preset's run, on the platform of the real machine's CPUs
/// (workers outnumber them and share their pagesets): node 0 with every CPU and
/// `memory_mib`, and a memory-only node 1 of `memory_only_mib` unless that is 0.
pub fn build(preset: &Preset, memory_mib: u64, memory_only_mib: u64) -> Result<PageAllocator<StdPlatform>, String> {
    let platform = StdPlatform::new();
    let tunables = Tunables { stat_interval_ms: STAT_INTERVAL_MS, ..Tunables::default() };
    let mut builder =
        AllocatorBuilder::new().node(platform.nr_cpus() as u32).reserve(0..1).tunables(tunables).policy(preset.policy);
    let spans = zone_spans(memory_mib);
    let node0_end = spans[3].1.end;
    for (zone_type, span) in spans {
        builder = builder.zone(0, zone_type, span);
    }
    if memory_only_mib > 0 {
        builder = builder.node(0).zone(1, ZoneType::Normal, node0_end..node0_end + memory_only_mib * PAGES_PER_MIB);
    }
    PageAllocator::build(builder, platform).map_err(|error| format!("building the machine: {error}"))
}

/// Every zone's pfn span, for the ownership shadow; with `memory-growth`, the highest zone's
/// reaches as far as the growths the workers make can take it.
pub fn spans(allocator: &PageAllocator<StdPlatform>) -> Vec<Range<Pfn>> {
    let highest = allocator.zones().iter().map(|zone| zone.start_pfn()).max();
    let room = |zone: &pagealloc::zone::Zone<StdPlatform>| {
        let grows = cfg!(feature = "memory-growth") && Some(zone.start_pfn()) == highest;
        if grows {
            super::ranges::GROWTH_ROOM_PAGES
        } else {
            0
        }
    };
    allocator
        .zones()
        .iter()
        .map(|zone| zone.start_pfn()..zone.start_pfn() + zone.spanned_pages() + room(zone))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_builds_four_zones_that_check_clean() {
        for memory_mib in [64, 512, 4096] {
            let allocator = build(pagealloc::presets::find("mainline").unwrap(), memory_mib, 0).unwrap();
            assert_eq!(allocator.zones().len(), 4, "{memory_mib} MiB");
            assert_eq!(allocator.counters().managed_pages(), memory_mib * PAGES_PER_MIB - 1, "all but pfn 0");
            let census = allocator.check_invariants().unwrap();
            assert_eq!(census.free_pages, allocator.counters().managed_pages());
        }
    }

    #[test]
    fn a_memory_only_node_sits_above_node_0_and_borrows_its_first_cpu() {
        let allocator = build(pagealloc::presets::find("mainline").unwrap(), 64, 32).unwrap();
        assert_eq!(allocator.nodes().len(), 2);
        assert_eq!((allocator.nodes()[1].cpu_count(), allocator.nodes()[1].background_cpu()), (0, Some(0)));
        let zone = &allocator.zones()[4];
        assert_eq!(
            (zone.state().node(), zone.state().zone_type(), zone.state().managed_pages()),
            (1, ZoneType::Normal, 32 * PAGES_PER_MIB)
        );
        assert!(zone.start_pfn() >= allocator.zones()[3].start_pfn() + allocator.zones()[3].spanned_pages());
        allocator.check_invariants().unwrap();
    }
}
