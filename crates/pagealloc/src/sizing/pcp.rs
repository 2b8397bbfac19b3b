//! Per-CPU pageset batch and high bounds (mirrors zone_batchsize(), zone_highsize() and
//! zone_set_pageset_high_and_batch()).

use super::{rounddown_pow_of_two, Tunables};

/// Refill/drain chunk: b = min(managed / 4096, 64) pages (the kernel's "0.1% of the zone or
/// 1 MiB, divided by 4"), then rounddown_pow_of_two(b + b/2) - 1, at least 1: 63 pages for
/// any zone over ~1 GiB. The 2^n - 1 shape avoids cache-colour aliasing between tasks.
pub fn zone_batch_pages(managed_pages: u64) -> u64 {
    const ONE_MIB_PAGES: u64 = (1 << 20) / crate::types::PAGE_SIZE_BYTES;
    let quarter = (managed_pages >> 10).min(ONE_MIB_PAGES) / 4;
    let quarter = quarter.max(1);
    let batch_pages = (rounddown_pow_of_two(quarter + quarter / 2) - 1).max(1);
    // 2^n - 1, and at most the kernel's 63 for any zone size.
    assert!((1..=63).contains(&batch_pages) && (batch_pages + 1).is_power_of_two());
    batch_pages
}

/// One CPU's share of a zone's PCP budget: the low watermark (fraction 0) or managed/fraction,
/// split over the node's CPUs (all online CPUs for a CPU-less node), at least 4 batches.
pub fn zone_high_pages(
    low_watermark_pages: u64,
    managed_pages: u64,
    batch_pages: u64,
    node_cpus: u32,
    online_cpus: u32,
    high_fraction: u32,
) -> u64 {
    let total_pages = if high_fraction == 0 { low_watermark_pages } else { managed_pages / high_fraction as u64 };
    let split_cpus = if node_cpus == 0 { online_cpus.max(1) } else { node_cpus };
    let high_pages = (total_pages / split_cpus as u64).max(batch_pages * 4);
    assert!(high_pages >= batch_pages * 4, "a pageset holds at least four batches");
    high_pages
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcpBounds {
    pub batch_pages: u64,
    pub high_min_pages: u64,
    pub high_max_pages: u64,
}

/// batch, high_min and high_max of every pageset of a zone. With the default fraction 0,
/// high moves between the low-watermark share and managed/8's share; a fraction >= 8 pins
/// both bounds, which turns auto-tuning off.
pub fn pcp_high_bounds(
    tunables: &Tunables,
    managed_pages: u64,
    low_watermark_pages: u64,
    node_cpus: u32,
    online_cpus: u32,
) -> PcpBounds {
    let batch_pages = zone_batch_pages(managed_pages);
    let high =
        |fraction| zone_high_pages(low_watermark_pages, managed_pages, batch_pages, node_cpus, online_cpus, fraction);
    let (high_min_pages, high_max_pages) = match tunables.percpu_pagelist_high_fraction {
        0 => (high(0), high(Tunables::MIN_PERCPU_PAGELIST_HIGH_FRACTION)),
        fraction => (high(fraction), high(fraction)),
    };
    // high_min may exceed high_max on a tiny zone (its low watermark's share beats
    // managed/8's); both hold at least four batches.
    assert!(high_min_pages >= batch_pages * 4 && high_max_pages >= batch_pages * 4);
    PcpBounds { batch_pages, high_min_pages, high_max_pages }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_is_63_above_about_a_gibibyte() {
        assert_eq!(zone_batch_pages(16 << 20), 63);
        assert_eq!(zone_batch_pages(1 << 18), 63);
        // DMA: 3977 >> 12 = 0, clamped to 1, 2^0 - 1 = 0, at least 1.
        assert_eq!(zone_batch_pages(3_977), 1);
        assert_eq!(zone_batch_pages(8 << 12), 7); // 8 -> 12 -> 8 - 1
        assert_eq!(zone_batch_pages(2 << 12), 1); // 2 -> 3 -> 2 - 1
    }

    #[test]
    fn worked_example_64gib_64cpus() {
        // A 64 GiB Normal zone alone on 64 CPUs (zone_highsize()): high_min is the low
        // watermark's share, 24969 / 64 = 390; high_max is managed / 8 / 64 = 32768.
        let bounds = pcp_high_bounds(&Tunables::default(), 16 << 20, 24_969, 64, 64);
        assert_eq!(bounds, PcpBounds { batch_pages: 63, high_min_pages: 390, high_max_pages: 32_768 });
    }

    #[test]
    fn fixed_fraction_pins_both_bounds() {
        let tunables = Tunables { percpu_pagelist_high_fraction: 8, ..Tunables::default() };
        let bounds = pcp_high_bounds(&tunables, 16 << 20, 24_969, 64, 64);
        assert_eq!(bounds.high_min_pages, bounds.high_max_pages);
        assert_eq!(bounds.high_min_pages, 32_768);
    }

    #[test]
    fn high_is_at_least_four_batches() {
        let bounds = pcp_high_bounds(&Tunables::default(), 16 << 20, 24_969, 1024, 1024);
        assert_eq!(bounds.high_min_pages, 4 * 63);
    }
}
