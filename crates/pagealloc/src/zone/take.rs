//! A zone's own take and give-back: one block for an allocation, from the CPU's pageset
//! when the order is cached there, else from the buddy under the zone lock, counted (mirrors
//! rmqueue() and rmqueue_buddy()); and a block given back to the buddy (the zone-locked half
//! of __free_pages_ok()). The allocator above picks the zone, and wakes kswapd when a take
//! here boosted the zone's watermark (the zone answers; waking is the node's).

use super::Zone;
use crate::fallback::FallbackRules;
use crate::frame::{FrameInfo, FrameState};
use crate::pcp::{self, PcpCall};
use crate::platform::Platform;
use crate::policy::PcpPolicy;
use crate::request::{AllocFlags, BlockRequest};
use crate::take::{take_blocks, TakeCount};
use crate::types::Pfn;
use crate::vmstat::{self, FoldTarget, GlobalVmstat, NumaPlacement};
use crate::zone_state::zone_flags;

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
    /// `cpu`'s pageset of this zone, if pagesets are on for it.
    #[inline]
    pub(crate) fn pcp_call<'a>(
        &'a self,
        call: ZoneCall<'a, P>,
        policy: &'a PcpPolicy,
        cpu: usize,
    ) -> Option<PcpCall<'a, P>> {
        let slot = self.pcp.get(cpu)?;
        Some(PcpCall { zone: self.buddy(call.platform), slot, policy, cpu, global: call.global })
    }

    /// Takes one block for an allocation on `cpu`: from its pageset when `policy` caches
    /// the order there, else from the buddy (mirrors rmqueue()). `hit`: the zone is on the
    /// preferred node; `local`, asked only on a buddy take: it is on `cpu`'s node (both
    /// described nodes: per-CPU arenas of one node are that node).
    #[inline(always)]
    pub(crate) fn rmqueue(
        &self,
        call: ZoneCall<'_, P>,
        (policy, cpu): (&PcpPolicy, usize),
        rules: impl Fn() -> FallbackRules,
        block: BlockRequest,
        (hit, local): (bool, impl FnOnce() -> bool),
    ) -> Option<Pfn> {
        let pcp_order = policy.caches_order(block.order);
        if pcp_order {
            if let Some(pcp_call) = self.pcp_call(call, policy, cpu) {
                if let Some(pfn) = pcp::pcp_alloc(&pcp_call, &rules, block, hit) {
                    return Some(pfn);
                }
            }
        }
        self.rmqueue_buddy(call, &rules, (block, TakeCount::single(pcp_order)), NumaPlacement { hit, local: local() })
    }

    /// After a take: whether it boosted the zone's watermark and kswapd, allowed by
    /// `flags`, should be woken for it; the mark is cleared so one waker answers
    /// (rmqueue()'s ZONE_BOOSTED_WATERMARK test).
    #[inline]
    pub(crate) fn take_boost_wakeup(&self, flags: AllocFlags) -> bool {
        flags.kswapd
            && self.state().flags() & zone_flags::BOOSTED_WATERMARK != 0
            && self.state().clear_flag(zone_flags::BOOSTED_WATERMARK)
    }

    /// Takes one block from the buddy under the zone lock and counts it (mirrors
    /// rmqueue_buddy() and the zone_statistics() of its caller).
    #[inline(never)]
    pub(crate) fn rmqueue_buddy(
        &self,
        call: ZoneCall<'_, P>,
        rules: impl FnOnce() -> FallbackRules,
        (block, count): (BlockRequest, TakeCount),
        placement: NumaPlacement,
    ) -> Option<Pfn> {
        let rules = rules();
        let mut taken = None;
        {
            let mut locked = self.buddy(call.platform).lock();
            take_blocks(&mut locked, &rules, block, count, |pfn| {
                debug_assert!(taken.is_none(), "a single take handed out two blocks");
                let allocated = FrameInfo::new(FrameState::AllocHead, block.order, block.migratetype);
                self.mem().frame(pfn).hand_out(&[FrameState::Interior], allocated);
                taken = Some(pfn);
            });
        }
        let pfn = taken?;
        debug_assert!(self.mem().contains(pfn) && pfn & ((1 << block.order) - 1) == 0, "took {pfn:#x}");
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
        debug_assert!(self.mem().contains(pfn) && pfn & ((1 << order) - 1) == 0, "freeing {pfn:#x} order {order}");
        debug_assert_eq!(self.mem().frame(pfn).info().state(), FrameState::Interior, "an unclaimed block");
        self.buddy(platform).lock().release(pfn, order, FrameState::Interior);
        self.state().vmstat.count_pgfree(1 << order);
    }
}
