//! The periodic work on one pageset (the pageset half of refresh_cpu_vm_stats()): vmstat
//! diffs folded, an auto-tuned high decayed with its excess drained (decay_pcp_high()),
//! and a remote node's idle pageset drained.

use super::drain::{drain_chunked, free_pcppages_bulk, DrainPlan, DrainTarget};
use super::drain_cause::DrainCause;
use super::select::DrainLists;
use super::{decay_high, PcpSlot};
use crate::buddy::BuddyZone;
use crate::platform::Platform;
use crate::policy::PcpPolicy;
use crate::vmstat::FoldTarget;

/// The periodic work on one pageset (mirrors the pageset half of refresh_cpu_vm_stats()):
/// fold the CPU's vmstat diffs into `fold`; decay an auto-tuned high and drain the excess;
/// drain a remote node's pageset that idled for three ticks. Returns pages drained.
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
    // On a tiny zone high_min can exceed high_max; the decay floors high at high_min,
    // above high_max, and its next use clamps it back to high_max.
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
