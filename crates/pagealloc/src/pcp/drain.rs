//! Returning cached blocks to the buddy (mirrors free_pcppages_bulk(), drain_pages_zone(),
//! decay_pcp_high() and drain_zone_pages()), in the styles of each seed stage: proportional
//! or whole-list round robin, two passes or one under the zone lock, one lock hold or
//! batch-sized chunks.

use super::{decay_high, pindex_order, thp_part, PcpSlot, PerCpuPages, FIRST_THP_LIST, NR_PCP_LISTS};
use crate::buddy::{BuddyZone, PendingRun};
use crate::frame::FrameState;
use crate::list::{FrameList, Own, RecordCost};
use crate::platform::{Platform, SharedLine};
use crate::policy::PcpPolicy;
use crate::sync::PlatformGuard;
use crate::vmstat::FoldTarget;

/// vmstat ticks a remote node's pageset may idle before it is drained.
pub(crate) const REMOTE_EXPIRE_TICKS: u8 = 3;

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

/// Which of a pageset's lists a drain takes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DrainLists {
    /// Every list, as Linux drains.
    All,
    /// Only the order 0..=3 lists (`HighMaxRule::SmallOrdersAtHighMin`).
    BelowPageblock,
}

impl DrainLists {
    /// One past the last list index drained.
    #[inline]
    fn end(self) -> usize {
        match self {
            DrainLists::All => NR_PCP_LISTS,
            DrainLists::BelowPageblock => FIRST_THP_LIST,
        }
    }

    /// Pages the drained lists hold.
    #[inline]
    fn pages(self, pcp: &PerCpuPages) -> u32 {
        match self {
            DrainLists::All => pcp.count_pages,
            DrainLists::BelowPageblock => pcp.small_order_pages(),
        }
    }
}

pub(crate) type PcpGuard<'a, P> = PlatformGuard<'a, P, PerCpuPages, <P as Platform>::PcpLock>;

/// Walks the lists in the policy's order, unlinking blocks from their tails and calling
/// `take` for each, until `count` pages are taken (a high-order block may overshoot).
fn select_blocks(
    pcp: &mut PerCpuPages,
    mut count: i64,
    (start_pindex, lists): (usize, DrainLists),
    policy: &PcpPolicy,
    frames: &crate::growable::GrowableView<crate::frame::Frame>,
    records: &impl RecordCost,
    mut take: impl FnMut(u32, u8),
) {
    let drain = policy.drain;
    let nr_lists = lists.end();
    debug_assert!(start_pindex < nr_lists);
    let mut pindex = if drain.start_at_freed_list { start_pindex + nr_lists - 1 } else { start_pindex };
    let (mut min_pindex, mut max_pindex) = (0usize, nr_lists - 1);
    let mut batch_free = 0i64;
    while count > 0 {
        debug_assert!(lists.pages(pcp) > 0, "count was capped at the pages of the lists drained");
        // Next non-empty list; at most one full turn since some list holds pages.
        for _ in 0..nr_lists {
            batch_free += 1;
            pindex = (pindex + 1) % nr_lists;
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
                batch_free >= nr_lists as i64
            };
            if only_list_left {
                batch_free = count;
            }
        }
        let order = pindex_order(pindex);
        let pages = 1i64 << order;
        while let Some(index) = pcp.lists[pindex].pop_tail(frames, Own::Cold, records) {
            pcp.count_pages -= pages as u32;
            pcp.thp_pages -= thp_part(pages as u32, order);
            count -= pages;
            take(index, order);
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

/// Prefetches the metadata of the buddy a block will merge with, as the kernel did while
/// collecting pages outside the zone lock (before 2022 patch 1 at the order-0 buddy).
#[inline]
fn prefetch_buddy(frames: usize, records: &impl RecordCost, index: u32, order: u8, correct_order: bool) {
    let buddy_index = index ^ (1 << if correct_order { order } else { 0 });
    if (buddy_index as usize) < frames {
        records.touch(buddy_index, false);
    }
}

/// Frees up to `count` pages from the pageset's `lists` into the buddy under one zone-lock
/// hold, starting with list `start_pindex`; returns pages freed.
pub(crate) fn free_pcppages_bulk<P: Platform>(
    zone: BuddyZone<'_, P>,
    pcp: &mut PerCpuPages,
    count: u32,
    (start_pindex, lists): (usize, DrainLists),
    policy: &PcpPolicy,
    cause: DrainCause,
) -> u32 {
    let count = count.min(lists.pages(pcp));
    if count == 0 {
        return 0;
    }
    let before = pcp.count_pages;
    let (mem, records) = (&zone.core.mem, zone.core.mem.records(zone.platform));
    let frames = &mem.frames.view();
    if policy.drain.two_pass {
        // Pass 1 under the PCP lock only: unlink into a private list (the frames keep their
        // PCP state, which records the order), prefetching buddies.
        let mut collected = FrameList::EMPTY;
        let mut prefetch_left = pcp.batch_pages;
        select_blocks(pcp, count as i64, (start_pindex, lists), policy, frames, &records, |index, order| {
            // The unlink just wrote the block's own record.
            collected.push_tail(frames, index, Own::Warm, &records);
            if prefetch_left > 0 {
                prefetch_buddy(frames.len(), &records, index, order, policy.drain.prefetch_correct_buddy);
                prefetch_left -= 1;
            }
        });
        // Pass 2 under the zone lock.
        let mut locked = zone.lock();
        while let Some(index) = collected.pop_head(frames, Own::Warm, &records) {
            let info = frames[index as usize].info();
            debug_assert_eq!(info.state(), FrameState::PcpHead);
            let pfn = mem.pfn(index);
            locked.trace_pcpu_drain(pfn, info.order());
            locked.release(pfn, info.order(), FrameState::PcpHead);
        }
    } else {
        let mut locked = zone.lock();
        let mut run = PendingRun::new(policy.drain.coalesce_runs);
        select_blocks(pcp, count as i64, (start_pindex, lists), policy, frames, &records, |index, order| {
            locked.drain_into_run(&mut run, mem.pfn(index), order);
        });
        locked.release_run(&mut run);
    }
    let freed = before - pcp.count_pages;
    debug_assert!(freed >= count, "took {freed} of {count} pages");
    pcp.counters.drained_pages[cause as usize] += freed as u64;
    freed
}

/// How much a chunked drain frees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DrainTarget {
    /// This many pages (or until the pageset is empty); a chunk that ends inside a
    /// high-order block counts what it freed, so the drain as a whole overshoots by at most
    /// one block, as one unchunked free_pcppages_bulk() call does.
    Pages(u32),
    /// This many pages in chunks that each count as their request, as decay_pcp_high()
    /// loops (`to_drain -= to_drain_batched`): with high-order blocks, every chunk may
    /// overshoot.
    RequestedChunks(u32),
    /// Everything, re-reading the count at each chunk.
    All,
}

/// One drain: what to free, in zone-lock holds of at most `chunk_pages` (`None`: a single
/// hold), starting at list `start_pindex`, from `lists`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DrainPlan {
    pub target: DrainTarget,
    pub chunk_pages: Option<u32>,
    pub start_pindex: usize,
    pub cause: DrainCause,
    pub lists: DrainLists,
}

/// The one chunked-drain loop. Between chunks the pageset lock is dropped, so a remote
/// drainer or the CPU's next user is not held up, and re-taken with `relock`; `None` from
/// it ends the drain. Returns pages freed and the guard, if still held. Bounded: every
/// chunk frees pages or ends the loop.
pub(crate) fn drain_chunked<'a, P: Platform>(
    zone: BuddyZone<'_, P>,
    mut pcp: PcpGuard<'a, P>,
    plan: DrainPlan,
    policy: &PcpPolicy,
    mut relock: impl FnMut() -> Option<PcpGuard<'a, P>>,
) -> (u32, Option<PcpGuard<'a, P>>) {
    let mut freed_pages = 0;
    debug_assert!(plan.chunk_pages != Some(0), "a zero chunk would never progress");
    let mut to_free = match plan.target {
        DrainTarget::Pages(pages) | DrainTarget::RequestedChunks(pages) => pages,
        DrainTarget::All => pcp.count_pages,
    };
    loop {
        let chunk = plan.chunk_pages.map_or(to_free, |chunk| to_free.min(chunk));
        let freed = free_pcppages_bulk(zone, &mut pcp, chunk, (plan.start_pindex, plan.lists), policy, plan.cause);
        freed_pages += freed;
        let counted = if let DrainTarget::RequestedChunks(_) = plan.target { chunk } else { freed };
        to_free = to_free.saturating_sub(counted);
        if plan.chunk_pages.is_none() || freed == 0 || to_free == 0 || pcp.count_pages == 0 {
            return (freed_pages, Some(pcp));
        }
        drop(pcp);
        pcp = match relock() {
            Some(again) => again,
            None => return (freed_pages, None),
        };
        if plan.target == DrainTarget::All {
            to_free = pcp.count_pages;
        }
    }
}

/// Takes a pageset's lock for another CPU (or the periodic work), pulling its header into
/// the caller's cache.
fn lock_remote<'a, P: Platform>(slot: &'a PcpSlot<P>, platform: &'a P) -> PcpGuard<'a, P> {
    let pcp = slot.pageset.lock(platform);
    if let crate::platform::LockId::Pcp { zone, cpu } = slot.pageset.id() {
        platform.touch_shared(SharedLine::PcpHeader { zone, cpu }, true);
    }
    pcp
}

/// Sets a pageset's high, clamped to its bounds (the value auto-tuning would have reached);
/// returns the high set.
pub(crate) fn set_high<P: Platform>(slot: &PcpSlot<P>, platform: &P, high_pages: u64) -> u32 {
    let mut pcp = lock_remote(slot, platform);
    pcp.high_pages = high_pages.min(u64::from(u32::MAX)) as u32;
    super::rules::clamped_high(&mut pcp)
}

/// Sets a pageset's batch and high bounds, with high clamped into them (mirrors
/// pageset_update(); Linux clamps high at its next use, here at once so that it never sits
/// outside its bounds). A buddy-bound list that the smaller batch makes full is flushed, as
/// the free that filled it would have. The FREE_HIGH_BATCH flag stays: it follows the cache
/// size, which memory hotplug does not change.
pub(crate) fn set_bounds<P: Platform>(
    zone: BuddyZone<'_, P>,
    slot: &PcpSlot<P>,
    (batch, high_min, high_max): (u32, u32, u32),
    policy: &PcpPolicy,
) {
    debug_assert!(batch >= 1, "a zero batch would never refill");
    let mut pcp = lock_remote(slot, zone.platform);
    pcp.batch_pages = batch;
    pcp.high_min_pages = high_min;
    pcp.high_max_pages = high_max;
    super::rules::clamped_high(&mut pcp);
    if pcp.buddy_bound_pages >= batch {
        super::buddy_bound::flush_buddy_bound(zone, &mut pcp, policy);
    }
}

/// Empties one CPU's pageset of a zone, in chunks of `batch << scale_max` per lock hold
/// when the scale is bounded (mirrors drain_pages_zone()).
pub(crate) fn drain_pcp<P: Platform>(
    zone: BuddyZone<'_, P>,
    slot: &PcpSlot<P>,
    policy: &PcpPolicy,
    cause: DrainCause,
) -> u32 {
    let platform = zone.platform;
    let mut pcp = lock_remote(slot, platform);
    let flushed = super::buddy_bound::flush_buddy_bound(zone, &mut pcp, policy);
    if pcp.count_pages == 0 {
        return flushed;
    }
    let chunk_pages = policy.batch_scale_max.map(|scale| pcp.batch_pages << scale);
    let plan = DrainPlan { target: DrainTarget::All, chunk_pages, start_pindex: 0, cause, lists: DrainLists::All };
    let (freed, _) = drain_chunked(zone, pcp, plan, policy, || Some(lock_remote(slot, platform)));
    flushed + freed
}

/// The periodic work on one pageset (mirrors the pageset half of refresh_cpu_vm_stats()):
/// fold the CPU's vmstat diffs into `fold`; decay an auto-tuned high and drain the excess; drain a remote node's pageset that idled
/// for three ticks. Returns pages drained.
pub(crate) fn vmstat_update<P: Platform>(
    zone: BuddyZone<'_, P>,
    slot: &PcpSlot<P>,
    policy: &PcpPolicy,
    remote: bool,
    fold: &FoldTarget<'_, P>,
) -> u64 {
    let platform = zone.platform;
    let mut pageset = slot.pageset.lock(platform);
    pageset.stats.fold(fold);
    // Buddy-bound frees wait at most a vmstat interval.
    let mut drained = u64::from(super::buddy_bound::flush_buddy_bound(zone, &mut pageset, policy));
    let excess = decay_high(&mut pageset, policy);
    // On a tiny zone high_min can exceed high_max; high then stays at high_max, as the
    // kernel's clamp() leaves it.
    debug_assert!(
        pageset.high_pages >= pageset.high_min_pages.min(pageset.high_max_pages) && excess <= pageset.count_pages,
        "after decay: high {} high_min {} high_max {} count {} excess {excess}",
        pageset.high_pages,
        pageset.high_min_pages,
        pageset.high_max_pages,
        pageset.count_pages
    );
    if excess > 0 {
        // Mainline frees the excess in batch-sized chunks, each under its own hold of the
        // pageset lock; earlier kernels in one hold.
        let chunk_pages = policy.drain.chunked.then(|| pageset.batch_pages.max(1));
        let plan = DrainPlan {
            target: DrainTarget::RequestedChunks(excess),
            chunk_pages,
            start_pindex: 0,
            cause: DrainCause::Decay,
            lists: DrainLists::All,
        };
        let (freed, guard) = drain_chunked(zone, pageset, plan, policy, || Some(slot.pageset.lock(platform)));
        drained += freed as u64;
        pageset = guard.expect("blocking relocks always succeed");
    }
    if !remote || pageset.expire == 0 || pageset.count_pages == 0 {
        pageset.expire = 0;
        return drained;
    }
    pageset.expire -= 1;
    if pageset.expire == 0 {
        let batch = pageset.batch_pages;
        drained += free_pcppages_bulk(zone, &mut pageset, batch, (0, DrainLists::All), policy, DrainCause::RemoteExpire)
            as u64;
    }
    drained
}
