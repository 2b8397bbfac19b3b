//! A zone's own zone-locked take and give-back: one block from the buddy under the zone
//! lock, counted (mirrors rmqueue_buddy()), and a block given back to the buddy (the
//! zone-locked half of __free_pages_ok()). The allocator above picks the zone, tries the
//! CPU's pageset first (rmqueue()) and wakes kswapd.

use super::Zone;
use crate::fallback::FallbackRules;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::request::BlockRequest;
use crate::take::{take_blocks, TakeCount};
use crate::types::Pfn;
use crate::vmstat::{self, FoldTarget, GlobalVmstat, NumaPlacement};

/// What a zone's take needs from the allocator: the platform and the machine-wide vmstat
/// counters. Two pointers, passed by value.
pub(crate) struct ZoneCall<'a, P: Platform> {
    pub platform: &'a P,
    pub global: &'a GlobalVmstat,
}

impl<P: Platform> Clone for ZoneCall<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Platform> Copy for ZoneCall<'_, P> {}

impl<P: Platform> Zone<P> {
    /// Takes one block from the buddy under the zone lock and counts it (mirrors
    /// rmqueue_buddy() and the zone_statistics() of its caller).
    #[inline(never)]
    pub(crate) fn rmqueue_buddy<'e>(
        &self,
        call: ZoneCall<'_, P>,
        rules: impl FnOnce() -> FallbackRules<'e>,
        block: BlockRequest,
        placement: NumaPlacement,
    ) -> Option<Pfn> {
        let rules = rules();
        let mut taken = None;
        {
            let mut locked = self.buddy(call.platform).lock();
            take_blocks(&mut locked, &rules, block, TakeCount::SINGLE, |pfn| {
                let allocated = FrameInfo::new(FrameState::AllocHead, block.order, block.migratetype);
                self.mem().frame(pfn).hand_out(&[FrameState::Interior], allocated);
                taken = Some(pfn);
            });
        }
        let pfn = taken?;
        self.state().vmstat.count_pgalloc(1 << block.order);
        let target = FoldTarget {
            zone: &self.state().vmstat,
            zone_index: self.state().index,
            global: call.global,
            platform: call.platform,
        };
        vmstat::count_unbuffered(&target, &placement.events(), call.global.numa_mode());
        Some(pfn)
    }

    /// Gives a block back to the buddy under the zone lock, merging, and counts it.
    #[inline(never)]
    pub(crate) fn free_to_buddy(&self, platform: &P, pfn: Pfn, order: u8) {
        self.buddy(platform).lock().release(pfn, order, FrameState::Interior);
        self.state().vmstat.count_pgfree(1 << order);
    }
}
