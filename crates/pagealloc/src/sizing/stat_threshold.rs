//! vmstat per-CPU fold thresholds (mirrors calculate_normal_threshold() and
//! calculate_pressure_threshold()).

use super::fls;

const MAX_STAT_THRESHOLD: u64 = 125;

/// Normal threshold: grows with log2 of CPUs and of zone size (in 128 MiB units), at most 125.
pub fn normal_stat_threshold(managed_pages: u64, online_cpus: u32) -> u32 {
    let mem_units = managed_pages >> (27 - crate::types::PAGE_SHIFT);
    let threshold = 2 * fls(online_cpus as u64) as u64 * (1 + fls(mem_units) as u64);
    let threshold = threshold.min(MAX_STAT_THRESHOLD) as u32;
    assert!(threshold as u64 <= MAX_STAT_THRESHOLD && (online_cpus == 0 || threshold >= 2));
    threshold
}

/// Threshold while kswapd is awake: small enough that the summed per-CPU drift cannot hide
/// a breach of the min watermark: (low - min) / CPUs, in 1..=125.
pub fn pressure_stat_threshold(low_pages: u64, min_pages: u64, online_cpus: u32) -> u32 {
    debug_assert!(min_pages <= low_pages, "min {min_pages} over low {low_pages}");
    let distance = low_pages.saturating_sub(min_pages);
    (distance / online_cpus.max(1) as u64).clamp(1, MAX_STAT_THRESHOLD) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_threshold_examples() {
        // 2 CPUs (fls 2), 4 GiB zone = 32 units (fls 6): 2*2*7 = 28.
        assert_eq!(normal_stat_threshold(1 << 20, 2), 28);
        // 224 CPUs (fls 8), 64 GiB (512 units, fls 10): 2*8*11 = 176 -> 125.
        assert_eq!(normal_stat_threshold(16 << 20, 224), 125);
        // Tiny DMA zone: 2*fls(4)=6 * (1+0).
        assert_eq!(normal_stat_threshold(3_977, 4), 6);
    }

    #[test]
    fn pressure_threshold_is_clamped() {
        assert_eq!(pressure_stat_threshold(100, 90, 64), 1);
        assert_eq!(pressure_stat_threshold(24_969, 8_192, 64), 125);
        assert_eq!(pressure_stat_threshold(8_192 + 640, 8_192, 64), 10);
    }
}
