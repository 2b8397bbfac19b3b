//! Returning cached blocks to the buddy (mirrors free_pcppages_bulk(), drain_pages_zone()),
//! in the styles of each seed stage: proportional or whole-list round robin, two passes or
//! one under the zone lock.

use super::{pindex_order, PcpSlot, PerCpuPages, NR_PCP_LISTS};
use crate::buddy::BuddyCtx;
use crate::frame::{FrameInfo, FrameState};
use crate::list::FrameList;
use crate::platform::{Platform, SharedLine};
use crate::policy::PcpPolicy;
use crate::zone::Zone;

/// Why pages left a pageset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainCause {
    /// A free pushed count over high.
    High = 0,
    /// A free_high free.
    FreeHigh = 1,
    /// Periodic decay of high.
    Decay = 2,
    /// drain_local_pages / drain_all_pages.
    Explicit = 3,
    /// A remote node's pageset expired.
    RemoteExpire = 4,
    /// The CPU went offline.
    CpuOffline = 5,
}

impl DrainCause {
    pub const COUNT: usize = 6;
    pub const ALL: [DrainCause; DrainCause::COUNT] = [
        DrainCause::High,
        DrainCause::FreeHigh,
        DrainCause::Decay,
        DrainCause::Explicit,
        DrainCause::RemoteExpire,
        DrainCause::CpuOffline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DrainCause::High => "high",
            DrainCause::FreeHigh => "free_high",
            DrainCause::Decay => "decay",
            DrainCause::Explicit => "drain",
            DrainCause::RemoteExpire => "remote_expire",
            DrainCause::CpuOffline => "cpu_offline",
        }
    }
}

/// Walks the lists in the policy's order, calling `take` for each block taken from a tail
/// (with the block whose link the unlink rewrote), until `count` pages are taken (a
/// high-order block may overshoot).
fn select_blocks(
    pcp: &mut PerCpuPages,
    mut count: i64,
    start_pindex: usize,
    policy: &PcpPolicy,
    mut take: impl FnMut(&mut PerCpuPages, u32, u8, Option<u32>),
    frames: &[crate::frame::Frame],
) {
    let drain = policy.drain;
    let mut pindex = if drain.start_at_freed_list { start_pindex + NR_PCP_LISTS - 1 } else { start_pindex };
    let (mut min_pindex, mut max_pindex) = (0usize, NR_PCP_LISTS - 1);
    let mut batch_free = 0i64;
    while count > 0 {
        debug_assert!(pcp.count > 0, "count was capped at pcp.count");
        // Next non-empty list; at most one full turn since some list holds pages.
        for _ in 0..NR_PCP_LISTS {
            batch_free += 1;
            pindex = (pindex + 1) % NR_PCP_LISTS;
            if !pcp.lists[pindex].is_empty() {
                break;
            }
            if drain.track_active_range {
                if pindex == max_pindex {
                    max_pindex = max_pindex.saturating_sub(1);
                }
                if pindex == min_pindex {
                    min_pindex += 1;
                }
            }
        }
        if drain.proportional {
            let only_list_left = if drain.track_active_range {
                batch_free >= max_pindex.saturating_sub(min_pindex) as i64
            } else {
                batch_free >= NR_PCP_LISTS as i64
            };
            if only_list_left {
                batch_free = count;
            }
        }
        let order = pindex_order(pindex);
        let pages = 1i64 << order;
        while let Some(index) = pcp.lists[pindex].pop_tail(frames) {
            pcp.count -= pages as u32;
            count -= pages;
            let new_tail = pcp.lists[pindex].tail();
            take(pcp, index, order, new_tail);
            if drain.proportional {
                batch_free -= 1;
                if batch_free == 0 {
                    break;
                }
            }
            if count <= 0 || pcp.lists[pindex].is_empty() {
                break;
            }
        }
    }
}

/// Charges writes of the metadata of `indices` (list links rewritten by an unlink or link).
#[inline]
fn touch_frames<P: Platform>(zone: &Zone<P>, platform: &P, indices: impl IntoIterator<Item = u32>) {
    for index in indices {
        platform.touch_shared(SharedLine::frame_meta(zone.index, index), true);
    }
}

/// Prefetches the metadata of the buddy a block will merge with, as the kernel did while
/// collecting pages outside the zone lock (before 2022 patch 1 at the order-0 buddy).
#[inline]
fn prefetch_buddy<P: Platform>(zone: &Zone<P>, platform: &P, index: u32, order: u8, correct_order: bool) {
    let buddy_index = index ^ (1 << if correct_order { order } else { 0 });
    if (buddy_index as usize) < zone.mem.frames.len() {
        platform.touch_shared(SharedLine::frame_meta(zone.index, buddy_index), false);
    }
}

/// Frees up to `count` pages from the pageset into the buddy under one zone-lock hold,
/// starting with list `start_pindex`; returns pages freed.
pub(crate) fn free_pcppages_bulk<P: Platform>(
    zone: &Zone<P>,
    platform: &P,
    pcp: &mut PerCpuPages,
    count: u32,
    start_pindex: usize,
    policy: &PcpPolicy,
    cause: DrainCause,
) -> u32 {
    let count = count.min(pcp.count);
    if count == 0 {
        return 0;
    }
    let before = pcp.count;
    let frames = &zone.mem.frames;
    let release = |ctx: &mut BuddyCtx<'_, P>, index: u32, order: u8| {
        let pfn = zone.mem.pfn(index);
        frames[index as usize].set_info(FrameInfo::INTERIOR);
        // Re-read under the zone lock: the pageblock may have changed type meanwhile.
        let migratetype = zone.mem.pageblock_type(pfn);
        ctx.free_one(pfn, order, migratetype);
    };
    if policy.drain.two_pass {
        // Pass 1 under the PCP lock only: unlink into a private list (the frames keep their
        // PCP state, which records the order), prefetching buddies.
        let mut collected = FrameList::EMPTY;
        let mut prefetch_left = pcp.batch;
        select_blocks(
            pcp,
            count as i64,
            start_pindex,
            policy,
            |_, index, order, new_tail| {
                // Unlinking rewrote the block's own links and the new tail's; linking it into
                // the private list rewrites that list's tail.
                touch_frames(zone, platform, [index].into_iter().chain(new_tail).chain(collected.tail()));
                collected.push_tail(frames, index);
                if prefetch_left > 0 {
                    prefetch_buddy(zone, platform, index, order, policy.drain.prefetch_correct_buddy);
                    prefetch_left -= 1;
                }
            },
            frames,
        );
        // Pass 2 under the zone lock.
        let mut area = zone.free.lock(platform);
        let mut ctx = zone.buddy(&mut area, platform);
        while let Some(index) = collected.pop_head(frames) {
            touch_frames(zone, platform, collected.head());
            let info = frames[index as usize].info();
            debug_assert_eq!(info.state(), FrameState::PcpHead);
            release(&mut ctx, index, info.order());
        }
        ctx.area.counters.freed_to_zone_pages += (before - pcp.count) as u64;
    } else {
        let mut area = zone.free.lock(platform);
        let mut ctx = zone.buddy(&mut area, platform);
        select_blocks(
            pcp,
            count as i64,
            start_pindex,
            policy,
            |_, index, order, new_tail| {
                touch_frames(zone, platform, [index].into_iter().chain(new_tail));
                release(&mut ctx, index, order)
            },
            frames,
        );
        ctx.area.counters.freed_to_zone_pages += (before - pcp.count) as u64;
    }
    let freed = before - pcp.count;
    pcp.counters.drained_pages[cause as usize] += freed as u64;
    freed
}

/// Empties one CPU's pageset of a zone, in chunks of `batch << scale_max` per lock hold
/// when the scale is bounded (mirrors drain_pages_zone()).
pub(crate) fn drain_pcp<P: Platform>(
    zone: &Zone<P>,
    platform: &P,
    slot: &PcpSlot<P>,
    policy: &PcpPolicy,
    cause: DrainCause,
) -> u32 {
    let mut freed = 0;
    // Bounded: each round frees at least one page or stops.
    loop {
        let mut pcp = slot.pageset.lock(platform);
        if let crate::platform::LockId::Pcp { zone, cpu } = slot.pageset.id() {
            // A remote drain pulls the pageset's header into the draining CPU's cache.
            platform.touch_shared(SharedLine::PcpHeader { zone, cpu }, true);
        }
        if pcp.count == 0 {
            return freed;
        }
        let chunk = match policy.batch_scale_max {
            Some(scale) => pcp.count.min(pcp.batch << scale),
            None => pcp.count,
        };
        let count = pcp.count;
        let done = free_pcppages_bulk(zone, platform, &mut pcp, chunk, 0, policy, cause);
        freed += done;
        if done == 0 || done >= count {
            return freed;
        }
    }
}
