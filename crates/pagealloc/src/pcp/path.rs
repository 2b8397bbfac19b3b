//! The pageset fast paths (mirrors rmqueue_pcplist(), rmqueue_bulk() and
//! free_frozen_page_commit()).

use super::{
    free_pcppages_bulk, nr_pcp_alloc, nr_pcp_free, nr_pcp_high, pcp_type_for, pindex, take_free_high, DrainCause,
    PerCpuPages,
};
use crate::fallback::{self, FallbackEnv, RmqueueMode};
use crate::frame::{FrameInfo, FrameState};
use crate::platform::{Platform, SharedLine};
use crate::policy::{FreeSizing, PcpPolicy};
use crate::request::AllocFlags;
use crate::types::{MigrateType, Pfn, ZoneType};
use crate::zone::{zone_flags, Zone};

/// vmstat ticks a remote node's pageset may idle before it is drained.
const REMOTE_EXPIRE_TICKS: u8 = 3;

/// Which pageset a fast-path call works on.
pub(crate) struct PcpCall<'a, P: Platform> {
    pub zone: &'a Zone<P>,
    pub platform: &'a P,
    pub policy: &'a PcpPolicy,
    pub cpu: usize,
    /// The CPU is on another node than the zone (its pageset expires when idle).
    pub remote: bool,
}

/// A block request as the pageset sees it.
#[derive(Clone, Copy)]
pub(crate) struct BlockRequest {
    pub order: u8,
    pub migratetype: MigrateType,
    pub flags: AllocFlags,
}

/// Takes up to `blocks` blocks of `order` from the buddy onto the tail of list `pindex`
/// under one zone-lock hold; returns how many (mirrors rmqueue_bulk()).
#[cold]
#[inline(never)]
fn rmqueue_bulk<P: Platform>(
    call: &PcpCall<'_, P>,
    env: &FallbackEnv<'_>,
    pcp: &mut PerCpuPages,
    list_index: usize,
    request: BlockRequest,
    blocks: u32,
) -> u32 {
    let (zone, platform) = (call.zone, call.platform);
    let BlockRequest { order, migratetype, flags } = request;
    let mut area = zone.free.lock(platform);
    let mut ctx = zone.buddy(&mut area, platform);
    let mut mode = RmqueueMode::Normal;
    let mut taken = 0;
    while taken < blocks {
        let Some(pfn) = fallback::rmqueue(zone, &mut ctx, env, order, migratetype, flags, &mut mode) else { break };
        zone.mem.frame(pfn).set_info(FrameInfo::new(FrameState::PcpHead, order, migratetype));
        if let Some(tail) = pcp.lists[list_index].tail() {
            platform.touch_shared(SharedLine::frame_meta(zone.index, tail), true);
        }
        pcp.lists[list_index].push_tail(&zone.mem.frames, zone.mem.index(pfn));
        taken += 1;
    }
    ctx.area.counters.alloc_zone_pages += (taken as u64) << order;
    taken
}

/// Refills an empty list (the slow half of the allocation fast path).
#[cold]
#[inline(never)]
fn refill<P: Platform>(
    call: &PcpCall<'_, P>,
    env: &FallbackEnv<'_>,
    pcp: &mut PerCpuPages,
    list_index: usize,
    request: BlockRequest,
) {
    let blocks = nr_pcp_alloc(pcp, call.policy, call.zone.flags(), request.order);
    let taken = rmqueue_bulk(call, env, pcp, list_index, request, blocks);
    pcp.count += taken << request.order;
    pcp.counters.refills += 1;
    pcp.counters.refill_pages += (taken as u64) << request.order;
    pcp.note_peak();
}

/// Allocates from this CPU's pageset, refilling it if the list is empty. `None` when the
/// pageset lock is busy or the buddy had nothing: the caller then tries the buddy directly.
/// `env` is built only for a refill (the hit path does not need it).
#[inline]
pub(crate) fn pcp_alloc<'e, P: Platform>(
    call: &PcpCall<'_, P>,
    env: impl FnOnce() -> FallbackEnv<'e>,
    request: BlockRequest,
) -> Option<Pfn> {
    let PcpCall { zone, platform, policy, cpu, remote } = *call;
    let BlockRequest { order, migratetype, .. } = request;
    let slot = zone.pcp.get(cpu)?;
    let mut pcp = slot.pageset.try_lock(platform)?;
    platform.touch_shared(SharedLine::PcpHeader { zone: zone.index, cpu: cpu as u32 }, true);
    match policy.free_sizing {
        // An allocation between frees shrinks the next drain.
        FreeSizing::FreeFactor => pcp.free_factor >>= 1,
        FreeSizing::FreeCount => pcp.free_count >>= 1,
    }
    if remote {
        pcp.expire = REMOTE_EXPIRE_TICKS;
    }
    let list_index = pindex(order, migratetype, policy.thp_lists);
    if pcp.lists[list_index].is_empty() {
        refill(call, &env(), &mut pcp, list_index, request);
    } else {
        pcp.counters.alloc_hits += 1;
    }
    let index = pcp.lists[list_index].pop_head(&zone.mem.frames)?;
    platform.touch_shared(SharedLine::frame_meta(zone.index, index), true);
    // Unlinking rewrote the next block's link.
    if let Some(head) = pcp.lists[list_index].head() {
        platform.touch_shared(SharedLine::frame_meta(zone.index, head), true);
    }
    pcp.count -= 1 << order;
    zone.mem.frames[index as usize].set_info(FrameInfo::new(FrameState::AllocHead, order, migratetype));
    Some(zone.mem.pfn(index))
}

/// Frees a block (already claimed from its allocated state by the caller) into this CPU's
/// pageset, draining if over high. Returns false if the block must go to the buddy
/// instead (pageset busy, or an isolated pageblock).
#[inline]
pub(crate) fn pcp_free<P: Platform>(call: &PcpCall<'_, P>, pfn: Pfn, order: u8) -> bool {
    let PcpCall { zone, platform, policy, cpu, remote } = *call;
    let Some(pcp_type) = pcp_type_for(zone.mem.pageblock_type(pfn)) else { return false };
    let Some(slot) = zone.pcp.get(cpu) else { return false };
    let Some(mut pcp) = slot.pageset.try_lock(platform) else { return false };
    platform.touch_shared(SharedLine::PcpHeader { zone: zone.index, cpu: cpu as u32 }, true);
    if policy.alloc_factor {
        pcp.alloc_factor >>= 1;
    }
    if remote {
        pcp.expire = REMOTE_EXPIRE_TICKS;
    }
    let list_index = pindex(order, pcp_type, policy.thp_lists);
    let index = zone.mem.index(pfn);
    platform.touch_shared(SharedLine::frame_meta(zone.index, index), true);
    zone.mem.frames[index as usize].set_info(FrameInfo::new(FrameState::PcpHead, order, pcp_type));
    if let Some(head) = pcp.lists[list_index].head() {
        platform.touch_shared(SharedLine::frame_meta(zone.index, head), true);
    }
    pcp.lists[list_index].push_head(&zone.mem.frames, index);
    pcp.count += 1 << order;
    pcp.note_peak();

    let free_high = take_free_high(&mut pcp, policy, order);
    if free_high {
        pcp.counters.free_high_events += 1;
    }
    if policy.free_sizing == FreeSizing::FreeCount && pcp.free_count < pcp.batch << policy.scale_max() {
        pcp.free_count += 1 << order;
    }
    let high = nr_pcp_high(&mut pcp, policy, zone.flags(), free_high);
    if pcp.count >= high {
        drain_over_high(call, slot, pcp, list_index, high, free_high);
        // Only a drain can lift the zone back over its high watermark.
        if policy.below_high && zone.flags() & zone_flags::BELOW_HIGH != 0 {
            clear_below_high_if_recovered(zone);
        }
    }
    true
}

/// Drains a pageset that a free pushed over its effective high (the slow half of the free
/// fast path).
#[cold]
#[inline(never)]
fn drain_over_high<'a, P: Platform>(
    call: &PcpCall<'a, P>,
    slot: &'a super::PcpSlot<P>,
    mut pcp: crate::sync::PlatformGuard<'a, P, PerCpuPages, P::PcpLock>,
    list_index: usize,
    high: u32,
    free_high: bool,
) {
    let PcpCall { zone, platform, policy, .. } = *call;
    let mut to_free = nr_pcp_free(&mut pcp, policy, high, free_high);
    let cause = if free_high { DrainCause::FreeHigh } else { DrainCause::High };
    if !policy.drain.chunked {
        free_pcppages_bulk(zone, platform, &mut pcp, to_free, list_index, policy, cause);
        return;
    }
    // Batch-sized zone-lock holds; between them the pageset lock is dropped so a remote
    // drainer or the CPU's next user is not held up. Bounded by to_free.
    loop {
        let chunk = to_free.min(pcp.batch.max(1));
        let freed = free_pcppages_bulk(zone, platform, &mut pcp, chunk, list_index, policy, cause);
        to_free = to_free.saturating_sub(freed.max(1));
        if to_free == 0 || pcp.count == 0 {
            return;
        }
        drop(pcp);
        match slot.pageset.try_lock(platform) {
            Some(again) => pcp = again,
            None => return,
        }
    }
}

/// The zone is back above its high watermark: stop shrinking pagesets.
#[cold]
#[inline(never)]
fn clear_below_high_if_recovered<P: Platform>(zone: &Zone<P>) {
    let flags = AllocFlags::fast_path(&crate::request::AllocRequest::KERNEL);
    let high = zone.watermarks_with_boost().high_pages;
    if crate::watermark::watermark_ok(zone, 0, high, ZoneType::Movable, flags, zone.free_pages()) {
        zone.clear_flag(zone_flags::BELOW_HIGH);
    }
}
