//! Zone watermarks from min_free_kbytes (mirrors __setup_per_zone_wmarks()).

use super::mult_frac;
use crate::types::{ZoneType, PAGE_SHIFT};

/// A zone's watermarks in pages, without boost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermarks {
    pub min_pages: u64,
    pub low_pages: u64,
    pub high_pages: u64,
    /// Promotion watermark (NUMA memory tiering).
    pub promo_pages: u64,
}

/// Computes one zone's watermarks. `lowmem_managed_pages` is the managed total of the zones
/// (of all nodes) across which pages_min is shared in proportion to size. Unless
/// `movable_shares_min_free` (Linux < 6.6), Movable zones get a small fixed min
/// (clamp(managed/1024, 32, 128), even when empty) but the proportional spacing.
pub fn zone_watermarks(
    min_free_kbytes: u64,
    zone_type: ZoneType,
    managed_pages: u64,
    lowmem_managed_pages: u64,
    watermark_scale_factor: u32,
    movable_shares_min_free: bool,
) -> Watermarks {
    let pages_min = min_free_kbytes >> (PAGE_SHIFT - 10);
    let proportional_min = if lowmem_managed_pages == 0 {
        0
    } else {
        ((pages_min as u128 * managed_pages as u128) / lowmem_managed_pages as u128) as u64
    };
    let min_pages = if zone_type == ZoneType::Movable && !movable_shares_min_free {
        (managed_pages / 1024).clamp(32, 128)
    } else {
        proportional_min
    };
    let spacing = (proportional_min >> 2).max(mult_frac(managed_pages, watermark_scale_factor as u64, 10_000));
    let low_pages = min_pages + spacing;
    let high_pages = low_pages + spacing;
    let marks = Watermarks { min_pages, low_pages, high_pages, promo_pages: high_pages + spacing };
    assert!(
        marks.min_pages <= marks.low_pages
            && marks.low_pages <= marks.high_pages
            && marks.high_pages <= marks.promo_pages
    );
    // A zone's share of min_free_kbytes is at most the whole of it.
    assert!(managed_pages > lowmem_managed_pages || proportional_min <= pages_min);
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_64gib_zone() {
        // A 64 GiB Normal zone alone, min_free_kbytes 32768 (what calculate_min_free_kbytes()
        // gives for 64 GiB).
        let managed = 16 << 20;
        let marks = zone_watermarks(32_768, ZoneType::Normal, managed, managed, 10, false);
        assert_eq!(marks.min_pages, 8192);
        assert_eq!(marks.low_pages, 8192 + 16777);
        assert_eq!(marks.high_pages, 8192 + 2 * 16777);
    }

    #[test]
    fn movable_zone_min_is_clamped_fixed_value() {
        let marks = zone_watermarks(45_056, ZoneType::Movable, 0, 4 << 20, 10, false);
        assert_eq!(marks, Watermarks { min_pages: 32, low_pages: 32, high_pages: 32, promo_pages: 32 });
        let marks = zone_watermarks(45_056, ZoneType::Movable, 1 << 20, 4 << 20, 10, false);
        assert_eq!(marks.min_pages, 128);
        // share 2816 pages, spacing max(2816 / 4, 1 Mi * 10 / 10000) = max(704, 1048).
        assert_eq!(marks.low_pages - marks.min_pages, 1048);
        let old = zone_watermarks(45_056, ZoneType::Movable, 1 << 20, 4 << 20, 10, true);
        assert_eq!(old.min_pages, 11_264u64 * (1 << 20) / (4 << 20));
    }
}
