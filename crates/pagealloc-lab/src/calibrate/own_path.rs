//! This library's own allocation and free path per call, on this host: the `pagealloc`
//! preset on one thread, in page_fault1's pattern (a mapping's worth of order-0
//! allocations, then their frees, in the same order), the cost the simulator charges per
//! call for that preset.

use std::time::Instant;

use pagealloc::platform::StdPlatform;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, PageAllocator, ZoneType};

use crate::machine::profile::Measurement;

/// Frames of the zone: 4 GiB, room for a mapping's pages many times over.
const ZONE_FRAMES: u64 = 1 << 20;

/// Per-call allocation and free cost of the `pagealloc` preset, ns: `rounds` rounds of
/// `pages` allocations then `pages` frees, timed apart.
pub fn pagealloc_path(pages: usize, rounds: usize, repeats: usize) -> Result<(Measurement, Measurement), String> {
    let preset = pagealloc::presets::find("pagealloc").ok_or("the pagealloc preset is missing")?;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, ZONE_FRAMES).policy(preset.policy);
    let allocator = PageAllocator::build(builder, StdPlatform::new()).map_err(|error| error.to_string())?;
    let (mut alloc, mut free) = (Vec::with_capacity(repeats), Vec::with_capacity(repeats));
    let mut held: Vec<Block> = Vec::with_capacity(pages);
    for _ in 0..repeats {
        let (mut alloc_ns, mut free_ns) = (0u128, 0u128);
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..pages {
                let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).map_err(|error| error.to_string())?;
                held.push(block);
            }
            alloc_ns += start.elapsed().as_nanos();
            let start = Instant::now();
            for block in held.drain(..) {
                allocator.free_pages(block).map_err(|error| error.to_string())?;
            }
            free_ns += start.elapsed().as_nanos();
        }
        let calls = (pages * rounds) as f64;
        alloc.push(alloc_ns as f64 / calls);
        free.push(free_ns as f64 / calls);
    }
    let method = |what: &str| {
        format!(
            "the pagealloc preset on one thread, one 4 GiB Normal zone: {rounds} rounds of {pages} order-0 \
             allocations then their frees; {what} time / calls"
        )
    };
    Ok((
        Measurement::from_samples(alloc, "ns", &method("allocation")),
        Measurement::from_samples(free, "ns", &method("free")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_path_runs_and_costs_something() {
        let (alloc, free) = pagealloc_path(1024, 2, 1).unwrap();
        assert!(alloc.value > 0.0 && free.value > 0.0, "{alloc:?} {free:?}");
    }
}
