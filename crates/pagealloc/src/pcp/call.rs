//! Which pageset a fast-path call works on (the arguments rmqueue_pcplist() and
//! free_frozen_page_commit() share), for the pageset's fast and buddy-bound paths.

use super::PcpSlot;
use crate::buddy::BuddyZone;
use crate::platform::{Platform, SharedLine};
use crate::policy::PcpPolicy;
use crate::vmstat::{FoldTarget, GlobalVmstat};

/// Which pageset a fast-path call works on, and the zone's buddy half behind it.
pub(crate) struct PcpCall<'a, P: Platform> {
    pub zone: BuddyZone<'a, P>,
    pub slot: &'a PcpSlot<P>,
    pub policy: &'a PcpPolicy,
    pub cpu: usize,
    /// The global vmstat counters, and how NUMA events are kept.
    pub global: &'a GlobalVmstat,
}

impl<P: Platform> PcpCall<'_, P> {
    #[inline(always)]
    pub(super) fn touch_header(&self) {
        let zone = self.zone.mem.zone_index;
        self.zone.platform.touch_shared(SharedLine::PcpHeader { zone, cpu: self.cpu as u32 }, true);
    }

    /// Where this pageset's vmstat diffs fold.
    #[inline(always)]
    pub(super) fn fold_target(&self) -> FoldTarget<'_, P> {
        let zone = self.zone;
        FoldTarget {
            zone: &zone.state().vmstat,
            zone_index: zone.mem.zone_index,
            global: self.global,
            platform: zone.platform,
        }
    }
}
