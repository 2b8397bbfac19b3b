//! The free-page count kept in per-CPU diffs (`FreePagesCount::PerCpuDiffs`): each hold's
//! change charged to the current CPU's diff, published when a diff passes the zone's
//! threshold, folded by the periodic vmstat work (mirrors NR_FREE_PAGES under
//! __mod_zone_page_state() and refresh_cpu_vm_stats()).

use core::sync::atomic::Ordering::Relaxed;

use super::LockedZone;
use crate::platform::{Platform, SharedLine};

impl<P: Platform> LockedZone<'_, P> {
    /// With per-CPU free-count diffs: charges this hold's change of the free count to the
    /// current CPU's diff and returns the count to publish, which moves only when a diff
    /// passes the zone's threshold (mirrors __mod_zone_page_state(NR_FREE_PAGES)). The
    /// count stays signed: other CPUs' unfolded frees can put it below 0 for a while, and
    /// their folds bring it back.
    #[cold]
    #[inline(never)]
    pub(super) fn account_free_diff(&mut self) -> i64 {
        let published = self.mem.summary.free_pages.load(Relaxed);
        let area = &mut *self.area;
        let delta = area.free_pages as i64 - area.free_pages_accounted as i64;
        area.free_pages_accounted = area.free_pages;
        if delta == 0 {
            return published;
        }
        // A CPU id past the table breaks the Platform contract; any slot stays correct.
        let cpu = self.platform.current_cpu() % area.free_diff.len();
        let threshold = self.state.vmstat.stat_threshold();
        let handed = match i32::try_from(delta) {
            Ok(delta) => i64::from(crate::vmstat::mod_diff(&mut area.free_diff[cpu], delta, threshold)),
            Err(_) => delta + i64::from(core::mem::take(&mut area.free_diff[cpu])),
        };
        // What the diff keeps stays within the threshold; the rest is handed on.
        debug_assert!(area.free_diff[cpu].unsigned_abs() <= threshold, "free diff past its threshold");
        if handed == 0 {
            return published;
        }
        self.platform.atomic_shared(SharedLine::ZoneCounters(self.mem.zone_index));
        self.platform.atomic_shared(SharedLine::GlobalCounters);
        published + handed
    }

    /// Folds `cpu`'s free-count diff into the published count (the NR_FREE_PAGES step of
    /// refresh_cpu_vm_stats()); nothing without per-CPU diffs. Returns the pages folded.
    pub(crate) fn fold_free_diff(&mut self, cpu: usize) -> i64 {
        let Some(diff) = self.area.free_diff.get_mut(cpu) else { return 0 };
        let folded = i64::from(core::mem::take(diff));
        if folded != 0 {
            let published = self.mem.summary.free_pages.load(Relaxed) + folded;
            self.mem.summary.free_pages.store(published, Relaxed);
            self.platform.atomic_shared(SharedLine::ZoneCounters(self.mem.zone_index));
            self.platform.atomic_shared(SharedLine::GlobalCounters);
        }
        folded
    }

    /// Starts keeping the free count in per-CPU diffs (at build, after the boot frees).
    pub(crate) fn use_free_diffs(
        &mut self,
        nr_cpus: usize,
        arena: Option<&mut crate::meta::MetaArena>,
    ) -> Result<(), crate::meta::MetaArenaFull> {
        self.area.free_diff = crate::meta::MetaSlice::new(nr_cpus.max(1), arena, |_| 0)?;
        self.area.free_pages_accounted = self.area.free_pages;
        debug_assert!(self.area.free_diff.len() == nr_cpus.max(1), "a free diff per CPU");
        Ok(())
    }
}
