//! The per-CPU diff of one counter: what an update leaves on the CPU and what it hands to
//! the shared counter. Invariant for every function here: (shared + what it returns) + the
//! new diff == shared + the old diff + the update, and |diff| <= threshold afterwards.
//! Thresholds go up to 32765 (the NUMA counters' separate class had one that large), so a
//! diff is an i16 where Linux's zone stats use an s8.

/// Adds `delta`; when the diff would pass the threshold, hands all of it to the shared
/// counter and keeps nothing (mirrors __mod_zone_page_state()). Returns what to add to the
/// shared counter (0: nothing, the common case).
#[inline]
pub fn mod_diff(diff: &mut i16, delta: i32, threshold: u16) -> i32 {
    debug_assert!(threshold <= i16::MAX as u16);
    let sum = i32::from(*diff) + delta;
    if sum.abs() > i32::from(threshold) {
        *diff = 0;
        sum
    } else {
        *diff = sum as i16;
        0
    }
}

/// Adds one; on passing the threshold, hands the diff plus half a threshold to the shared
/// counter and leaves minus half a threshold here, so a run of increments folds about once
/// per 1.5 thresholds instead of once per threshold (mirrors __inc_zone_state()'s overstep).
#[inline]
pub fn inc_diff(diff: &mut i16, threshold: u16) -> i32 {
    debug_assert!(threshold <= i16::MAX as u16);
    let value = i32::from(*diff) + 1;
    if value > i32::from(threshold) {
        let overstep = i32::from(threshold >> 1);
        *diff = -overstep as i16;
        value + overstep
    } else {
        *diff = value as i16;
        0
    }
}

/// Subtracts one, the mirror of [`inc_diff`] (mirrors __dec_zone_state()).
#[inline]
pub fn dec_diff(diff: &mut i16, threshold: u16) -> i32 {
    debug_assert!(threshold <= i16::MAX as u16);
    let value = i32::from(*diff) - 1;
    if value < -i32::from(threshold) {
        let overstep = i32::from(threshold >> 1);
        *diff = overstep as i16;
        value - overstep
    } else {
        *diff = value as i16;
        0
    }
}

/// Adds one to an increment-only diff; past the threshold, hands all of it over and keeps
/// nothing (mirrors __inc_numa_state() of v4.14 .. v5.13, whose u16 diffs had no overstep).
/// `threshold` is at most U16_MAX - 2, so the diff never wraps.
#[inline]
pub fn inc_event_diff(diff: &mut u16, threshold: u16) -> u32 {
    debug_assert!(threshold <= u16::MAX - 2);
    let value = *diff + 1;
    if value > threshold {
        *diff = 0;
        u32::from(value)
    } else {
        *diff = value;
        0
    }
}

/// Takes the whole diff for the shared counter (the periodic fold, mirrors the per-item step
/// of refresh_cpu_vm_stats()).
#[inline]
pub fn fold_diff(diff: &mut i16) -> i32 {
    i32::from(core::mem::take(diff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mod_folds_everything_past_the_threshold_and_nothing_at_it() {
        let mut diff = 0;
        assert_eq!(mod_diff(&mut diff, 125, 125), 0);
        assert_eq!(diff, 125, "at the threshold: kept");
        assert_eq!(mod_diff(&mut diff, 1, 125), 126);
        assert_eq!(diff, 0);
        assert_eq!(mod_diff(&mut diff, -126, 125), -126);
        assert_eq!(mod_diff(&mut diff, -3, 0), -3, "threshold 0 folds every update");
    }

    #[test]
    fn inc_and_dec_overstep_by_half_a_threshold() {
        // t = 32: the 33rd increment hands 33 + 16 = 49 over and leaves -16.
        let mut diff = 0;
        let handed: i32 = (0..33).map(|_| inc_diff(&mut diff, 32)).sum();
        assert_eq!((handed, diff), (49, -16));
        // The next fold comes after 49 more increments (from -16 to 33): 1.5 thresholds.
        let handed: i32 = (0..49).map(|_| inc_diff(&mut diff, 32)).sum();
        assert_eq!((handed, diff), (49, -16));
        // Decrements mirror it: from 0, the 33rd hands over -33 - 16 and leaves +16.
        let mut diff = 0;
        let handed: i32 = (0..33).map(|_| dec_diff(&mut diff, 32)).sum();
        assert_eq!((handed, diff), (-49, 16));
        // t = 1: 0 -> 1 -> folds 2 + 0, leaves 0.
        let mut diff = 0;
        assert_eq!((inc_diff(&mut diff, 1), inc_diff(&mut diff, 1), diff), (0, 2, 0));
    }

    #[test]
    fn event_diffs_fold_everything_past_the_threshold_without_overstep() {
        let mut diff = 0u16;
        let handed: u32 = (0..65_533).map(|_| inc_event_diff(&mut diff, 65_533)).sum();
        assert_eq!((handed, diff), (0, 65_533), "at the threshold: kept");
        assert_eq!((inc_event_diff(&mut diff, 65_533), diff), (65_534, 0));
        let mut diff = 0u16;
        assert_eq!((inc_event_diff(&mut diff, 1), inc_event_diff(&mut diff, 1), diff), (0, 2, 0));
    }

    #[test]
    fn every_sequence_conserves_the_count_and_bounds_the_diff() {
        // A fixed pseudo-random walk over all three updates and thresholds 0..=125.
        let mut rng = crate::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
        for threshold in [0u16, 1, 2, 7, 32, 125, 32_765] {
            let (mut shared, mut diff, mut truth) = (0i64, 0i16, 0i64);
            for _ in 0..10_000 {
                let handed = match rng.below(3) {
                    0 => {
                        truth += 1;
                        inc_diff(&mut diff, threshold)
                    }
                    1 => {
                        truth -= 1;
                        dec_diff(&mut diff, threshold)
                    }
                    _ => {
                        let delta = (rng.0 >> 8) as i32 % 600 - 300;
                        truth += i64::from(delta);
                        mod_diff(&mut diff, delta, threshold)
                    }
                };
                shared += i64::from(handed);
                assert_eq!(shared + i64::from(diff), truth);
                assert!(diff.unsigned_abs() <= threshold, "diff {diff} past {threshold}");
            }
            shared += i64::from(fold_diff(&mut diff));
            assert_eq!((shared, diff), (truth, 0));
        }
    }
}
