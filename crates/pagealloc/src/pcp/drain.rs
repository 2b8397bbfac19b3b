//! Returning cached blocks to the buddy (mirrors free_pcppages_bulk() and the chunked
//! loop of drain_zone_pages() and decay_pcp_high()), in the styles of each seed stage:
//! two passes or one under the zone lock, one lock hold or batch-sized chunks.

use super::drain_cause::DrainCause;
use super::select::{prefetch_buddy, select_blocks, DrainLists};
use super::PerCpuPages;
use crate::buddy::{BuddyZone, PendingRun};
use crate::frame::FrameState;
use crate::list::{FrameList, OwnRecord};
use crate::platform::Platform;
use crate::policy::PcpPolicy;
use crate::sync::PlatformGuard;

pub(crate) type PcpGuard<'a, P> = PlatformGuard<'a, P, PerCpuPages, <P as Platform>::PcpLock>;

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
    let (mem, records) = (zone.mem(), zone.mem().records(zone.platform));
    let (frames, links) = (&mem.frames.view(), &mem.links.view());
    if policy.drain.two_pass {
        // Pass 1 under the PCP lock only: unlink into a private list (the frames keep their
        // PCP state, which records the order), prefetching buddies.
        let mut collected = FrameList::EMPTY;
        let mut prefetch_left = pcp.batch_pages;
        select_blocks(pcp, count as i64, (start_pindex, lists), policy, links, &records, |index, order| {
            // The unlink just wrote the block's own record.
            collected.push_tail(links, index, OwnRecord::AlreadyWritten, &records);
            if prefetch_left > 0 {
                prefetch_buddy(frames.len(), &records, index, order, policy.drain.prefetch_correct_buddy);
                prefetch_left -= 1;
            }
        });
        // Pass 2 under the zone lock.
        let mut locked = zone.lock();
        while let Some(index) = collected.pop_head(links, OwnRecord::AlreadyWritten, &records) {
            let info = frames[index as usize].info();
            debug_assert_eq!(info.state(), FrameState::PcpHead);
            let pfn = mem.pfn(index);
            locked.trace_pcpu_drain(pfn, info.order());
            locked.release(pfn, info.order(), FrameState::PcpHead);
        }
    } else {
        let mut locked = zone.lock();
        let mut run = PendingRun::new(policy.drain.beyond_linux.coalesce_runs);
        select_blocks(pcp, count as i64, (start_pindex, lists), policy, links, &records, |index, order| {
            locked.drain_into_run(&mut run, mem.pfn(index), order);
        });
        locked.release_run(&mut run);
    }
    let freed = before - pcp.count_pages;
    debug_assert!(freed >= count, "took {freed} of {count} pages");
    pcp.counters.drained_pages[cause as usize] += freed as u64;
    #[cfg(debug_assertions)]
    pcp.debug_assert_counts(mem);
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
