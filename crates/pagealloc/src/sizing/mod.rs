//! Derived parameters, computed with the kernel's integer arithmetic: min_free_kbytes,
//! watermarks, lowmem reserves, per-CPU pageset batch/high bounds and vmstat thresholds.
//!
//! These are pure functions of a [`MachineSpec`] (CPUs and managed pages per zone) and the
//! [`Tunables`] (sysctls), so `pagelab zoneinfo` can describe a 224-CPU, 1 TiB machine without
//! allocating its frame metadata; a live allocator derives its own parameters through the same
//! [`MachineSizing::derive`].

mod lowmem_reserve;
mod machine;
mod min_free;
mod pcp;
mod stat_threshold;
mod tunables;
mod version;
mod watermarks;

pub use lowmem_reserve::lowmem_reserves;
pub use machine::{BootSizing, MachineSizing, MachineSpec, NodeSpec, SizingError, ZoneSizing};
pub use min_free::{min_free_kbytes_for_lowmem, thp_recommended_min_free_kbytes};
pub use pcp::{pcp_high_bounds, zone_batch_pages, zone_high_pages, PcpBounds};
pub use stat_threshold::{normal_stat_threshold, pressure_stat_threshold};
pub use tunables::Tunables;
pub use version::LinuxVersion;
pub use watermarks::{zone_watermarks, Watermarks};

/// Index (1-based) of the most significant set bit; 0 for 0 (Linux `fls()`).
#[inline]
pub(crate) const fn fls(value: u64) -> u32 {
    64 - value.leading_zeros()
}

/// `value * numerator / denominator` without overflowing the product (Linux `mult_frac()`).
#[inline]
pub(crate) const fn mult_frac(value: u64, numerator: u64, denominator: u64) -> u64 {
    let quotient = value / denominator;
    let remainder = value % denominator;
    quotient * numerator + remainder * numerator / denominator
}

/// Floor of the square root (Linux `int_sqrt()`).
pub(crate) fn int_sqrt(value: u64) -> u64 {
    if value < 2 {
        return value;
    }
    // Newton's iteration from an over-estimate converges monotonically down to the floor.
    let mut estimate = 1u64 << (fls(value).div_ceil(2));
    loop {
        let next = (estimate + value / estimate) / 2;
        if next >= estimate {
            return estimate;
        }
        estimate = next;
    }
}

/// Largest power of two <= value (value >= 1).
#[inline]
pub(crate) const fn rounddown_pow_of_two(value: u64) -> u64 {
    1 << (fls(value) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_sqrt_is_floor_sqrt() {
        for value in 0..10_000u64 {
            let root = int_sqrt(value);
            assert!(root * root <= value && (root + 1) * (root + 1) > value, "{value}");
        }
        assert_eq!(int_sqrt(u64::MAX), u32::MAX as u64);
    }

    #[test]
    fn helpers_match_kernel_definitions() {
        assert_eq!(fls(0), 0);
        assert_eq!(fls(1), 1);
        assert_eq!(fls(0x80), 8);
        assert_eq!(mult_frac(1_000_003, 10, 10_000), 1_000);
        let big = u64::MAX / 2;
        assert_eq!(mult_frac(big, 10, 10_000) as u128, big as u128 * 10 / 10_000);
        assert_eq!(rounddown_pow_of_two(96), 64);
        assert_eq!(rounddown_pow_of_two(1), 1);
    }
}
