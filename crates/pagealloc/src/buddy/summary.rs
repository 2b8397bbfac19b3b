//! The lockless summary of a zone's free area (free pages, high-atomic pages, which lists
//! are non-empty), published once per zone-lock hold for the readers that check
//! watermarks without the lock.

use core::sync::atomic::Ordering::Relaxed;

use super::LockedZone;
use crate::platform::{Platform, SharedLine};

impl<P: Platform> LockedZone<'_, P> {
    /// Publishes the lockless summary of the free area (on drop, before the unlock).
    #[inline]
    pub(super) fn publish_summary(&mut self) {
        // Writers hold the zone lock, so plain stores keep the summary exact; stores only
        // when something changed keep the line shared in the readers' caches.
        let summary = &self.mem.summary;
        let mut wrote = false;
        let free_pages =
            if self.area.free_diff.is_empty() { self.area.free_pages as i64 } else { self.account_free_diff() };
        if summary.free_pages.load(Relaxed) != free_pages {
            summary.free_pages.store(free_pages, Relaxed);
            wrote = true;
        }
        if summary.free_highatomic_pages.load(Relaxed) != self.area.free_highatomic_pages {
            summary.free_highatomic_pages.store(self.area.free_highatomic_pages, Relaxed);
            wrote = true;
        }
        for (published, &mask) in summary.nonempty_types.iter().zip(&self.area.nonempty_types) {
            if published.load(Relaxed) != mask {
                published.store(mask, Relaxed);
                wrote = true;
            }
        }
        if wrote {
            self.platform.touch_shared(SharedLine::ZoneCounters(self.mem.zone_index), true);
        }
        // Only zone-lock holders write the summary: it now is what this hold leaves.
        debug_assert!(
            self.mem.summary.free_highatomic_pages.load(Relaxed) == self.area.free_highatomic_pages,
            "published highatomic pages differ"
        );
        debug_assert!(
            !self.area.free_diff.is_empty() || self.mem.summary.free_pages.load(Relaxed) == self.area.free_pages as i64,
            "published free pages differ from the free area's"
        );
    }
}
