//! lowmem_reserve ("protection"): pages a lower zone keeps from allocations that could have
//! used a higher zone (mirrors setup_per_zone_lowmem_reserve()).

use crate::types::MAX_NR_ZONES;

/// For one node: `reserve[i][j]` protects zone i against requests whose highest zone is j,
/// equal to the managed pages of zones i+1..=j divided by zone i's ratio. Zero when zone i is
/// empty or its ratio is 0; with `skip_empty_upper` (Linux 6.10-6.13) also zero for an empty
/// upper zone j.
pub fn lowmem_reserves(
    managed_pages: &[u64; MAX_NR_ZONES],
    ratios: &[u32; MAX_NR_ZONES],
    skip_empty_upper: bool,
) -> [[u64; MAX_NR_ZONES]; MAX_NR_ZONES] {
    let mut reserves = [[0u64; MAX_NR_ZONES]; MAX_NR_ZONES];
    for lower in 0..MAX_NR_ZONES - 1 {
        let ratio = ratios[lower] as u64;
        let cleared = ratio == 0 || managed_pages[lower] == 0;
        let mut upper_pages = 0u64;
        for upper in lower + 1..MAX_NR_ZONES {
            upper_pages += managed_pages[upper];
            let upper_empty = skip_empty_upper && managed_pages[upper] == 0;
            reserves[lower][upper] = if cleared || upper_empty { 0 } else { upper_pages / ratio };
            // More zones above can only add protection (the skip aside).
            assert!(upper_empty || reserves[lower][upper] >= reserves[lower][upper - 1]);
        }
        assert_eq!(reserves[lower][lower], 0, "a zone never protects itself");
    }
    reserves
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_sum_upper_zones_over_ratio() {
        let managed = [3_977, 765_000, 7_400_000, 0, 0];
        let ratios = [256, 256, 32, 0, 0];
        let all = (765_000 + 7_400_000) / 256;
        let reserves = lowmem_reserves(&managed, &ratios, false);
        assert_eq!(reserves[0], [0, 765_000 / 256, all, all, all]);
        assert_eq!(reserves[1], [0, 0, 7_400_000 / 256, 7_400_000 / 256, 7_400_000 / 256]);
        assert_eq!(reserves[2], [0; 5]);
        let reserves = lowmem_reserves(&managed, &ratios, true);
        assert_eq!(reserves[0], [0, 765_000 / 256, all, 0, 0]);
    }

    #[test]
    fn empty_lower_zone_reserves_nothing() {
        let reserves = lowmem_reserves(&[0, 100_000, 900_000, 0, 0], &[256, 256, 32, 0, 0], false);
        assert_eq!(reserves[0], [0; 5]);
    }
}
