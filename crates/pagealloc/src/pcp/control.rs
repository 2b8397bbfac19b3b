//! Operations on a pageset from outside its CPU's fast path: its bounds and high set
//! (pageset_update()), and an explicit drain of the whole pageset (drain_pages_zone()).

use super::drain::{drain_chunked, DrainPlan, DrainTarget, PcpGuard};
use super::drain_cause::DrainCause;
use super::select::DrainLists;
use super::PcpSlot;
use crate::buddy::BuddyZone;
use crate::platform::{Platform, SharedLine};
use crate::policy::PcpPolicy;

/// Takes a pageset's lock for another CPU (or the periodic work), pulling its header into
/// the caller's cache.
pub(super) fn lock_remote<'a, P: Platform>(slot: &'a PcpSlot<P>, platform: &'a P) -> PcpGuard<'a, P> {
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
