//! Deferral: after a run fails for an order, the next 2^shift attempts at that order or above
//! are skipped, the shift growing per failure up to [`COMPACT_MAX_DEFER_SHIFT`] (mirrors
//! defer_compaction(), compaction_deferred() and compaction_defer_reset()).

use core::sync::atomic::Ordering::Relaxed;

use super::COMPACT_MAX_DEFER_SHIFT;
use crate::zone_state::CompactCursors;

impl CompactCursors {
    /// A run for `order` failed: skip more attempts before the next.
    pub(crate) fn defer(&self, order: u8) {
        self.considered.store(0, Relaxed);
        let shift = (self.defer_shift.load(Relaxed) + 1).min(COMPACT_MAX_DEFER_SHIFT);
        self.defer_shift.store(shift, Relaxed);
        if u32::from(order) < self.order_failed.load(Relaxed) {
            self.order_failed.store(u32::from(order), Relaxed);
        }
    }

    /// Should an attempt for `order` be skipped? Counts the attempt.
    pub(crate) fn deferred(&self, order: u8) -> bool {
        if u32::from(order) < self.order_failed.load(Relaxed) {
            return false;
        }
        let limit = 1u32 << self.defer_shift.load(Relaxed);
        let considered = self.considered.load(Relaxed) + 1;
        if considered >= limit {
            self.considered.store(limit, Relaxed);
            return false;
        }
        self.considered.store(considered, Relaxed);
        true
    }

    /// A run for `order` succeeded (and, with `allocated`, so did the allocation).
    pub(crate) fn defer_reset(&self, order: u8, allocated: bool) {
        if allocated {
            self.considered.store(0, Relaxed);
            self.defer_shift.store(0, Relaxed);
        }
        if u32::from(order) >= self.order_failed.load(Relaxed) {
            self.order_failed.store(u32::from(order) + 1, Relaxed);
        }
    }

    /// Where the migration scanner resumes (0: at the zone start; compact_cached_migrate_pfn).
    pub fn cached_migrate_pfn(&self) -> u64 {
        self.migrate_pfn.load(Relaxed)
    }

    /// Where the free scanner resumes (0: at the zone's last pageblock; compact_cached_free_pfn).
    pub fn cached_free_pfn(&self) -> u64 {
        self.free_pfn.load(Relaxed)
    }

    /// 2^shift attempts are skipped after a failure (compact_defer_shift).
    pub fn defer_shift(&self) -> u32 {
        self.defer_shift.load(Relaxed)
    }

    /// The lowest order a run failed at since the last success (compact_order_failed).
    pub fn order_failed(&self) -> u32 {
        self.order_failed.load(Relaxed)
    }

    /// Forgets the scanner positions: the next run starts at both ends.
    pub(crate) fn reset_scanners(&self) {
        self.migrate_pfn.store(0, Relaxed);
        self.free_pfn.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_skip_doubling_numbers_of_attempts_and_success_resets() {
        let cursors = CompactCursors::default();
        assert!(!cursors.deferred(9), "never failed: not deferred");
        cursors.defer(9);
        // order_failed stays 0 (as the kernel initialises it), so shift 1: one attempt skipped.
        assert!(cursors.deferred(9));
        assert!(!cursors.deferred(9));
        cursors.defer(9);
        cursors.defer(9);
        let skipped = (0..10).take_while(|_| cursors.deferred(9)).count();
        assert_eq!(skipped, 7, "shift 3: 2^3 - 1 attempts skipped, the 8th runs");
        for _ in 0..10 {
            cursors.defer(9);
        }
        assert_eq!(cursors.defer_shift.load(Relaxed), COMPACT_MAX_DEFER_SHIFT);
        cursors.defer_reset(9, true);
        assert!(!cursors.deferred(9));
        assert_eq!(cursors.order_failed.load(Relaxed), 10);
        assert!(!cursors.deferred(3), "orders below the failed one are never deferred");
    }
}
