//! Frees bound for the buddy, batched (beyond Linux; fullest-first placement and per-CPU
//! arenas): a page of a pageblock with `FragBeyondLinux::buddy_bound_free_pages` free (a quarter
//! pageblock), or of another CPU's arena, must reach the buddy, where it can merge, rather
//! than be handed out again from (or held in) a pageset;
//! but a zone-lock hold per such free makes two CPUs queue on the lock. So these frees wait
//! on a list of their own in the pageset, which allocations never take from, and go to the
//! buddy a few per lock hold (`FLUSH_PAGES`).

use super::call::PcpCall;
use super::{pcp_type_for, PerCpuPages};
use crate::buddy::{BuddyZone, PendingRun};
use crate::frame::{FrameInfo, FrameState};
use crate::list::OwnRecord;
use crate::platform::{Platform, SharedLine};
use crate::policy::PcpPolicy;
use crate::remote_frees::Chain;
use crate::types::Pfn;

/// Puts a claimed block (of pageblock index `pageblock`) on this CPU's buddy-bound list; a
/// batch of them goes to the buddy at once, or, for another CPU's arena, to its owner.
/// False (the caller frees to the buddy directly) when the pageset is busy or the pageblock
/// is isolated.
pub(crate) fn pcp_free_buddy_bound<P: Platform>(call: &PcpCall<'_, P>, pfn: Pfn, pageblock: usize, order: u8) -> bool {
    let PcpCall { zone, slot, .. } = *call;
    let mem = zone.mem();
    debug_assert_eq!(pageblock, mem.pageblock_index(pfn));
    let Some(pcp_type) = pcp_type_for(mem.pageblock_type_at(pageblock)) else { return false };
    let Some(mut pcp) = slot.pageset.try_lock(zone.platform) else { return false };
    let index = mem.index(pfn);
    mem.frames[index as usize].change(&[FrameState::Interior], FrameInfo::new(FrameState::PcpHead, order, pcp_type));
    pcp.buddy_bound.push_head(&mem.links.view(), index, OwnRecord::Charge, &mem.records(zone.platform));
    pcp.buddy_bound_pages += 1 << order;
    pcp.stats.count_free(1 << order, zone.platform);
    if pcp.buddy_bound_pages >= FLUSH_PAGES.min(pcp.batch_pages) {
        if slot.remote && call.policy.drain.beyond_linux.hand_remote_frees {
            hand_buddy_bound(zone, &mut pcp);
            return true;
        }
        if call.policy.drain.beyond_linux.warm_merges {
            warm_buddy_bound(zone, &pcp);
        }
        flush_buddy_bound(zone, &mut pcp, call.policy);
    }
    true
}

/// Buddy-bound pages that make a flush. Small, since a page waiting here is missing from
/// its pageblock's free count (the sizes measured: docs/decisions.md).
const FLUSH_PAGES: u32 = 8;

/// Reads the records the flush's merges will touch before it takes the zone lock
/// (`DrainBeyondLinux::warm_merges`). The list is short (`FLUSH_PAGES`) and was just written.
fn warm_buddy_bound<P: Platform>(zone: BuddyZone<'_, P>, pcp: &PerCpuPages) {
    let mem = zone.mem();
    let (frames, records) = (mem.frames.view(), mem.records(zone.platform));
    for index in pcp.buddy_bound.iter(&mem.links.view(), FLUSH_PAGES as usize) {
        crate::buddy::warm_merge(mem, &records, mem.pfn(index), frames[index as usize].info().order());
    }
}

/// Hands the buddy-bound list, frees into another CPU's arena, to that arena's next zone-lock
/// holder (`DrainBeyondLinux::hand_remote_frees`): one push, no lock. With [`pending_bound`]
/// pages pending (an owner that took no lock since), this CPU takes the lock, which
/// releases them.
#[inline(never)]
fn hand_buddy_bound<P: Platform>(zone: BuddyZone<'_, P>, pcp: &mut PerCpuPages) {
    let Some((head, tail)) = pcp.buddy_bound.take_all() else { return };
    let pages = core::mem::take(&mut pcp.buddy_bound_pages);
    pcp.counters.drained_pages[super::DrainCause::High as usize] += u64::from(pages);
    zone.platform.touch_shared(SharedLine::RemoteFrees(zone.mem.zone_index), true);
    let pending = zone.core.remote_frees.push(Chain { head, tail, pages }, &zone.mem().links);
    if u64::from(pending) >= pending_bound(zone, pcp) {
        drop(zone.lock());
    }
}

/// The pages an arena may have pending before a pusher releases them: its low watermark, at
/// least a batch. Pages pending are out of the buddy, as a pageset's are, and Linux bounds
/// all pagesets of a zone together by its low watermark (mirrors zone_highsize()), so that
/// a watermark check errs by no more than the reserve itself. A release of that many merges
/// in one hold what a release per batch would merge in many, each taking the owner's lock
/// and its free-list lines from it.
fn pending_bound<P: Platform>(zone: BuddyZone<'_, P>, pcp: &PerCpuPages) -> u64 {
    zone.state().params.watermarks().low_pages.max(u64::from(pcp.batch_pages.max(1)))
}

/// Returns every buddy-bound block to the buddy in one zone-lock hold (each a
/// `mm_page_pcpu_drain`), contiguous runs coalesced if the policy says so; the pages returned.
pub(crate) fn flush_buddy_bound<P: Platform>(zone: BuddyZone<'_, P>, pcp: &mut PerCpuPages, policy: &PcpPolicy) -> u32 {
    if pcp.buddy_bound_pages == 0 {
        return 0;
    }
    let mem = zone.mem();
    let records = mem.records(zone.platform);
    let mut locked = zone.lock();
    let mut run = PendingRun::new(policy.drain.beyond_linux.coalesce_runs);
    while let Some(index) = pcp.buddy_bound.pop_head(&mem.links.view(), OwnRecord::Charge, &records) {
        let (pfn, order) = (mem.pfn(index), mem.frames[index as usize].info().order());
        locked.drain_into_run(&mut run, pfn, order);
    }
    locked.release_run(&mut run);
    drop(locked);
    let flushed = core::mem::take(&mut pcp.buddy_bound_pages);
    pcp.counters.drained_pages[super::DrainCause::High as usize] += u64::from(flushed);
    flushed
}
