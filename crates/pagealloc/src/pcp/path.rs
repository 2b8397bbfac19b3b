//! The pageset fast paths (mirrors rmqueue_pcplist(), rmqueue_bulk() and
//! free_frozen_page_commit()). Cost of a hit: one trylock, one list pop or push, one frame
//! record store; everything else is out of line.

use super::call::PcpCall;
use super::drain::{drain_chunked, DrainPlan, DrainTarget, PcpGuard};
use super::select::DrainLists;
use super::{
    is_free_high, note_free_order, nr_pcp_alloc, nr_pcp_free, nr_pcp_high, pcp_type_for, pindex, thp_batch_pages,
    thp_part, DrainCause, PerCpuPages, FIRST_THP_LIST, REMOTE_EXPIRE_TICKS,
};
use crate::buddy::BuddyZone;
use crate::fallback::FallbackRules;
use crate::frame::{FrameInfo, FrameState};
use crate::list::OwnRecord;
use crate::platform::Platform;
use crate::policy::FreeSizing;
use crate::request::{AllocFlags, BlockRequest};
use crate::take::{take_blocks, TakeCount};
use crate::types::{Pfn, ZoneType, PAGEBLOCK_ORDER};
use crate::vmstat::NumaPlacement;
use crate::watermark::{watermark_ok, WatermarkView};
use crate::zone_state::zone_flags;

/// Takes up to `blocks` blocks from the buddy onto the tail of list `list_index` under one
/// zone-lock hold; returns how many (mirrors rmqueue_bulk()).
#[cold]
#[inline(never)]
fn rmqueue_bulk<P: Platform>(
    call: &PcpCall<'_, P>,
    rules: &FallbackRules,
    pcp: &mut PerCpuPages,
    list_index: usize,
    request: BlockRequest,
    blocks: u32,
) -> u32 {
    let mem = call.zone.mem();
    let records = mem.records(call.zone.platform);
    let list = &mut pcp.lists[list_index];
    let mut zone = call.zone.lock();
    take_blocks(&mut zone, rules, request, TakeCount::refill(blocks), |pfn| {
        let index = mem.index(pfn);
        let head = FrameInfo::new(FrameState::PcpHead, request.order, request.migratetype);
        mem.frames[index as usize].change(&[FrameState::Interior], head);
        // The take just wrote the block's record.
        list.push_tail(&mem.links.view(), index, OwnRecord::AlreadyWritten, &records);
    })
}

/// Refills an empty list (the slow half of the allocation fast path).
#[cold]
#[inline(never)]
fn refill<P: Platform>(
    call: &PcpCall<'_, P>,
    rules: &FallbackRules,
    pcp: &mut PerCpuPages,
    list_index: usize,
    request: BlockRequest,
) {
    debug_assert!(pcp.lists[list_index].is_empty());
    let blocks = nr_pcp_alloc(pcp, call.policy, call.zone.state.flags(), request.order);
    debug_assert!(blocks >= 1);
    let taken = rmqueue_bulk(call, rules, pcp, list_index, request, blocks);
    debug_assert!(taken <= blocks && pcp.lists[list_index].is_empty() == (taken == 0));
    pcp.count_pages += taken << request.order;
    pcp.thp_pages += thp_part(taken << request.order, request.order);
    pcp.counters.refills += 1;
    pcp.counters.refill_pages += (taken as u64) << request.order;
    pcp.note_peak();
    #[cfg(debug_assertions)]
    pcp.debug_assert_counts(call.zone.mem());
}

/// Allocates from this CPU's pageset, refilling it if the list is empty, and counts it as a
/// NUMA hit (the zone is on the preferred node) or miss. `None` when the pageset lock is busy or the buddy had nothing: the
/// caller then tries the buddy directly. `rules` is built only for a refill (the hit path
/// does not need it).
#[inline]
pub(crate) fn pcp_alloc<P: Platform>(
    call: &PcpCall<'_, P>,
    rules: impl FnOnce() -> FallbackRules,
    request: BlockRequest,
    hit: bool,
) -> Option<Pfn> {
    let PcpCall { zone, slot, policy, .. } = *call;
    let remote = slot.remote;
    let order = request.order;
    let mut pcp = slot.pageset.try_lock(zone.platform)?;
    call.touch_header();
    match policy.free_sizing {
        // An allocation between frees shrinks the next drain.
        FreeSizing::FreeFactor => pcp.free_factor >>= 1,
        FreeSizing::FreeCount => pcp.free_count_pages >>= 1,
    }
    if remote {
        pcp.expire = REMOTE_EXPIRE_TICKS;
    }
    let list_index = pindex(order, request.migratetype, policy.thp_lists);
    if pcp.lists[list_index].is_empty() {
        refill(call, &rules(), &mut pcp, list_index, request);
    } else {
        pcp.counters.alloc_hits += 1;
    }
    let mem = zone.mem();
    let index = pcp.lists[list_index].pop_head(&mem.links.view(), OwnRecord::Charge, &mem.records(zone.platform))?;
    debug_assert!(pcp.count_pages >= 1 << order, "pageset count {} below a listed block", pcp.count_pages);
    debug_assert_eq!(mem.frames[index as usize].info().order(), order, "block on the wrong order's list");
    pcp.count_pages -= 1 << order;
    pcp.thp_pages -= thp_part(1 << order, order);
    let allocated = FrameInfo::new(FrameState::AllocHead, order, request.migratetype);
    mem.frames[index as usize].hand_out(&[FrameState::PcpHead], allocated);
    let placement = NumaPlacement { hit, local: !slot.other_node };
    pcp.stats.count_alloc(1 << order, placement, call.fold_target());
    Some(mem.pfn(index))
}

/// Frees a block (already claimed from its allocated state by the caller; `pageblock` is
/// its pageblock's index) into this CPU's pageset, draining if over high. Returns false if the block must go to the buddy
/// instead (pageset busy, or an isolated pageblock).
#[inline]
pub(crate) fn pcp_free<P: Platform>(call: &PcpCall<'_, P>, pfn: Pfn, pageblock: usize, order: u8) -> bool {
    let PcpCall { zone, slot, policy, .. } = *call;
    let remote = slot.remote;
    let mem = zone.mem();
    debug_assert_eq!(pageblock, mem.pageblock_index(pfn));
    let Some(pcp_type) = pcp_type_for(mem.pageblock_type_at(pageblock)) else { return false };
    let Some(mut pcp) = slot.pageset.try_lock(zone.platform) else { return false };
    call.touch_header();
    if policy.alloc_factor {
        pcp.alloc_factor >>= 1;
    }
    if remote {
        pcp.expire = REMOTE_EXPIRE_TICKS;
    }
    let list_index = pindex(order, pcp_type, policy.thp_lists);
    let index = mem.index(pfn);
    mem.frames[index as usize].change(&[FrameState::Interior], FrameInfo::new(FrameState::PcpHead, order, pcp_type));
    pcp.lists[list_index].push_head(&mem.links.view(), index, OwnRecord::Charge, &mem.records(zone.platform));
    pcp.count_pages += 1 << order;
    pcp.thp_pages += thp_part(1 << order, order);
    pcp.note_peak();
    pcp.stats.count_free(1 << order, zone.platform);

    let free_high = is_free_high(&pcp, policy, order);
    note_free_order(&mut pcp, order);
    if free_high {
        pcp.counters.free_high_events += 1;
    }
    if policy.free_sizing == FreeSizing::FreeCount && pcp.free_count_pages < pcp.batch_pages << policy.scale_max() {
        pcp.free_count_pages += 1 << order;
    }
    let high = nr_pcp_high(&mut pcp, policy, zone.state.flags(), free_high);
    // At most the larger bound (a tiny zone's high_min may exceed high_max; high is then
    // re-clamped on its next use, as in the kernel).
    debug_assert!(pcp.high_pages <= pcp.high_max_pages.max(pcp.high_min_pages));
    let over_high = pcp.count_pages >= high;
    if over_high || (policy.high_max.bounds_small_orders() && pcp.small_order_pages() >= pcp.high_min_pages) {
        drain_over_high(call, pcp, (list_index, order), high, free_high, !over_high);
        // Only a drain can lift the zone back over its high watermark.
        if policy.below_high && zone.state.flags() & zone_flags::BELOW_HIGH != 0 {
            clear_below_high_if_recovered(zone);
        }
    }
    true
}

/// Drains a pageset that a free pushed over its effective high (the slow half of the free
/// fast path): batch-sized chunks between which the lock is retried, or one hold.
/// `small_orders`: only the order 0..=3 lists were over their bound (high_min, under
/// `HighMaxRule::SmallOrdersAtHighMin`), and only they drain.
#[cold]
#[inline(never)]
fn drain_over_high<'a, P: Platform>(
    call: &PcpCall<'a, P>,
    mut pcp: PcpGuard<'a, P>,
    (list_index, order): (usize, u8),
    high: u32,
    free_high: bool,
    small_orders: bool,
) {
    let PcpCall { zone, slot, policy, .. } = *call;
    let mut chunk_pages = pcp.batch_pages.max(1);
    let (to_free, start_pindex, lists) = if small_orders {
        debug_assert!(!free_high && pcp.small_order_pages() >= pcp.high_min_pages);
        let high_min = pcp.high_min_pages;
        let to_free = nr_pcp_free(&mut pcp, policy, high_min, false).min(pcp.small_order_pages());
        let start_pindex = if list_index < FIRST_THP_LIST { list_index } else { 0 };
        (to_free, start_pindex, DrainLists::BelowPageblock)
    } else {
        let mut to_free = nr_pcp_free(&mut pcp, policy, high, free_high);
        debug_assert!(to_free <= pcp.count_pages.max(pcp.batch_pages << policy.scale_max()));
        if order >= PAGEBLOCK_ORDER && policy.thp_batch_shift > 0 {
            // Several pageblock-order blocks per hold, as their refills take them.
            chunk_pages = thp_batch_pages(&pcp, policy);
            to_free = to_free.max(chunk_pages).min(pcp.count_pages);
        }
        (to_free, list_index, DrainLists::All)
    };
    let plan = DrainPlan {
        target: DrainTarget::Pages(to_free),
        chunk_pages: policy.drain.chunked.then_some(chunk_pages),
        start_pindex,
        cause: if free_high { DrainCause::FreeHigh } else { DrainCause::High },
        lists,
    };
    drain_chunked(zone, pcp, plan, policy, || slot.pageset.try_lock(zone.platform));
}

/// The zone is back above its high watermark: stop shrinking pagesets.
#[cold]
#[inline(never)]
fn clear_below_high_if_recovered<P: Platform>(zone: BuddyZone<'_, P>) {
    let flags = AllocFlags::fast_path(&crate::request::AllocRequest::KERNEL);
    let high = zone.state.watermarks_with_boost().high_pages;
    let view = WatermarkView { state: zone.state(), mem: zone.mem() };
    if watermark_ok(view, 0, high, ZoneType::Movable, flags, zone.mem.free_pages()) {
        zone.state.clear_flag(zone_flags::BELOW_HIGH);
    }
}
