//! vm.min_free_kbytes as the kernel computes it at boot, and the THP raise.

use super::int_sqrt;
use crate::types::{NR_PCP_TYPES, PAGEBLOCK_PAGES, PAGE_SHIFT};

const MIN_FREE_KBYTES_FLOOR: u64 = 128;
const MIN_FREE_KBYTES_CEILING: u64 = 262_144;

/// min_free_kbytes = clamp(sqrt(16 * lowmem_kbytes), 128, 262144), where lowmem is what
/// `nr_free_buffer_pages()` reports (mirrors calculate_min_free_kbytes()).
pub fn min_free_kbytes_for_lowmem(lowmem_free_buffer_pages: u64) -> u64 {
    let lowmem_kbytes = lowmem_free_buffer_pages << (PAGE_SHIFT - 10);
    int_sqrt(lowmem_kbytes * 16).clamp(MIN_FREE_KBYTES_FLOOR, MIN_FREE_KBYTES_CEILING)
}

/// The khugepaged recommendation: per populated lowmem zone, 2 free pageblocks plus
/// MIGRATE_PCPTYPES^2 pageblocks for fallbacks, capped at 5% of `nr_free_buffer_pages()`
/// (which by then excludes the high watermarks). Mirrors set_recommended_min_free_kbytes().
pub fn thp_recommended_min_free_kbytes(populated_lowmem_zones: u64, lowmem_free_buffer_pages: u64) -> u64 {
    let per_zone_blocks = 2 + (NR_PCP_TYPES * NR_PCP_TYPES) as u64;
    let recommended_pages = PAGEBLOCK_PAGES * populated_lowmem_zones * per_zone_blocks;
    recommended_pages.min(lowmem_free_buffer_pages / 20) << (PAGE_SHIFT - 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_free_kbytes_follows_sqrt_rule_and_clamps() {
        // 64 GiB of lowmem: sqrt(16 * 64 Gi / 1 Ki) = sqrt(2^30) = 32768.
        assert_eq!(min_free_kbytes_for_lowmem(64 << 18), 32_768);
        assert_eq!(min_free_kbytes_for_lowmem(16), 128);
        assert_eq!(min_free_kbytes_for_lowmem(1 << 40), 262_144);
    }

    #[test]
    fn thp_raise_is_eleven_pageblocks_per_zone_capped_at_five_percent() {
        assert_eq!(thp_recommended_min_free_kbytes(3, u64::MAX / 64), 3 * 11 * 512 * 4);
        assert_eq!(thp_recommended_min_free_kbytes(3, 20_000), 1_000 * 4);
    }
}
