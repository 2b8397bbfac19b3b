//! One zone's pages out of the buddy and not allocated, for the counters and the views
//! (the readings themselves are [`crate::Counters`]'s).

use super::PageAllocator;
use crate::platform::Platform;

impl<P: Platform> PageAllocator<P> {
    /// Pages held in one zone's pagesets now, over all CPUs, those its stack of handed-over
    /// frees holds, and those parked in its pageblocks: out of the buddy on their way back
    /// to it.
    pub(super) fn zone_pcp_pages(&self, zone: &crate::zone::Zone<P>) -> u64 {
        let held = |slot: &crate::pcp::PcpSlot<P>| {
            slot.inspect(&self.platform, |p| u64::from(p.count_pages() + p.buddy_bound_pages()))
        };
        zone.pcp.iter().map(held).sum::<u64>() + u64::from(zone.handed_over_pages()) + zone.parked_pages()
    }
}
