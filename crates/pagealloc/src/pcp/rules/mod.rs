//! How much a pageset refills, when it drains and how much: the rules of each seed stage,
//! selected by `PcpPolicy`. Pure functions of the pageset, the policy and the zone flags,
//! so each rule is unit-tested against the facts document.

use super::{pcp_flags, PerCpuPages};
use crate::policy::{FreeHighRule, FreeSizing, PcpPolicy};
use crate::types::{COSTLY_ORDER, PAGEBLOCK_ORDER};
use crate::zone_state::zone_flags;

/// `high` clamped into its bounds, stored back (the kernel re-clamps on every use). The
/// kernel's clamp(), min(max(high, high_min), high_max): where a tiny zone's high_min exceeds
/// high_max, high_max wins (Rust's `Ord::clamp` would panic there).
#[inline]
pub(crate) fn clamped_high(pcp: &mut PerCpuPages) -> u32 {
    pcp.high_pages = pcp.high_pages.max(pcp.high_min_pages).min(pcp.high_max_pages);
    pcp.high_pages
}

/// Blocks to take from the buddy when the list for `order` is empty (mirrors
/// nr_pcp_alloc(); before 2023 patch 5 a plain batch scaled down by order).
pub(crate) fn nr_pcp_alloc(pcp: &mut PerCpuPages, policy: &PcpPolicy, zone_flag_bits: u32, order: u8) -> u32 {
    let base_batch = pcp.batch_pages;
    let mut batch = base_batch;
    if policy.alloc_factor {
        let mut high = clamped_high(pcp);
        if high < base_batch {
            return 1;
        }
        if order == 0 {
            batch = base_batch << pcp.alloc_factor;
        }
        let below_high = policy.below_high && zone_flag_bits & zone_flags::BELOW_HIGH != 0;
        if policy.autotune_high && pcp.high_min_pages != pcp.high_max_pages && !below_high {
            // A larger high would have let this allocation avoid the zone.
            high = (high + batch).min(pcp.high_max_pages);
            pcp.high_pages = high;
        }
        if order == 0 {
            // Under SmallOrdersAtHighMin an order-0 refill fills the small-order room only.
            let (high, count) = if policy.high_max.bounds_small_orders() {
                (high.min(pcp.high_min_pages), pcp.small_order_pages())
            } else {
                (high, pcp.count_pages)
            };
            let max_nr_alloc = high.saturating_sub(count + base_batch).max(base_batch);
            if batch <= max_nr_alloc && pcp.alloc_factor < policy.scale_max() {
                pcp.alloc_factor += 1;
            }
            batch = batch.min(max_nr_alloc);
        }
    }
    if batch > 1 {
        batch = if order >= PAGEBLOCK_ORDER { thp_batch_pages(pcp, policy) } else { batch } >> order;
        batch = batch.max(2);
    }
    debug_assert!(batch >= 1);
    batch
}

/// Pages a pageblock-order refill or drain moves per zone-lock hold: batch, or more with
/// [`PcpPolicy::thp_batch_shift`], but at most high_max (so that one refill holds no more
/// than Linux lets a pageset keep: on many CPUs or a small zone, the shift shrinks away).
#[inline]
pub(crate) fn thp_batch_pages(pcp: &PerCpuPages, policy: &PcpPolicy) -> u32 {
    if policy.thp_batch_shift == 0 {
        return pcp.batch_pages;
    }
    // Shifted in 64 bits: the largest batch override shifted by the largest shift is 2^32.
    let shifted = u64::from(pcp.batch_pages) << policy.thp_batch_shift;
    let cap = pcp.high_max_pages.max(pcp.batch_pages);
    u32::try_from(shifted).map_or(cap, |pages| pages.min(cap))
}

/// Is this free of `order` a "free_high" that should drain the pageset (free_high in
/// free_unref_page_commit())? Reads the previous free's order from the pageset's flags; call
/// after the block is listed and before [`note_free_order`].
#[inline]
pub(crate) fn is_free_high(pcp: &PerCpuPages, policy: &PcpPolicy, order: u8) -> bool {
    if order == 0 || order > COSTLY_ORDER {
        return false;
    }
    let batch = pcp.batch_pages;
    let freeing_without_alloc = match policy.free_sizing {
        FreeSizing::FreeFactor => pcp.free_factor != 0,
        FreeSizing::FreeCount => pcp.free_count_pages != 0,
    };
    let consecutive = pcp.flags & pcp_flags::PREV_FREE_HIGH_ORDER != 0;
    let batch_cached = pcp.flags & pcp_flags::FREE_HIGH_BATCH == 0 || pcp.count_pages >= batch;
    match policy.free_high {
        FreeHighRule::Off => false,
        FreeHighRule::AnyHighOrder => freeing_without_alloc,
        FreeHighRule::Consecutive => freeing_without_alloc && consecutive,
        FreeHighRule::ConsecutiveBatch => freeing_without_alloc && consecutive && batch_cached,
        FreeHighRule::FreeCountBatch => pcp.free_count_pages >= batch && consecutive && batch_cached,
        FreeHighRule::FreeCountBatchHalfHighMin => {
            pcp.free_count_pages >= batch + pcp.high_min_pages / 2 && consecutive && batch_cached
        }
    }
}

/// Records the order of this free for the next one's [`is_free_high`]: whether it was of
/// order 1..=3 (PCPF_PREV_FREE_HIGH_ORDER).
#[inline]
pub(crate) fn note_free_order(pcp: &mut PerCpuPages, order: u8) {
    if order == 0 || order > COSTLY_ORDER {
        pcp.flags &= !pcp_flags::PREV_FREE_HIGH_ORDER;
    } else {
        pcp.flags |= pcp_flags::PREV_FREE_HIGH_ORDER;
    }
}

/// Zone flags under which a free may retune high (nr_pcp_high()'s shrink branches).
const RETUNING_ZONE_FLAGS: u32 = zone_flags::RECLAIM_ACTIVE | zone_flags::BELOW_HIGH;

/// Effective high for a free, retuning `pcp.high_pages` on the way (mirrors nr_pcp_high()). The
/// pageset drains when count >= the returned value.
#[inline]
pub(crate) fn nr_pcp_high(pcp: &mut PerCpuPages, policy: &PcpPolicy, zone_flag_bits: u32, free_high: bool) -> u32 {
    // The common case inline: below high, high not above high_max, and nothing that retunes
    // high on a free. Every branch of the full rule returns `pcp.high_pages` unchanged here,
    // so this is a shortcut, not a different rule. A high the periodic decay left above
    // high_max takes the full rule, which clamps it as nr_pcp_high() does on every call.
    let high = pcp.high_pages;
    if !free_high && pcp.count_pages < high && high <= pcp.high_max_pages && zone_flag_bits & RETUNING_ZONE_FLAGS == 0 {
        return high;
    }
    nr_pcp_high_retune(pcp, policy, zone_flag_bits, free_high)
}

#[inline(never)]
fn nr_pcp_high_retune(pcp: &mut PerCpuPages, policy: &PcpPolicy, zone_flag_bits: u32, free_high: bool) -> u32 {
    let batch = pcp.batch_pages;
    let reclaim_active = zone_flag_bits & zone_flags::RECLAIM_ACTIVE != 0;
    if !policy.autotune_high {
        let high = pcp.high_pages;
        if high == 0 || free_high {
            return 0;
        }
        return if reclaim_active { (batch << 2).min(high) } else { high };
    }
    let high = clamped_high(pcp);
    if high == 0 {
        return 0;
    }
    let high_min = pcp.high_min_pages;
    if free_high {
        pcp.high_pages = high.saturating_sub(batch << policy.scale_max()).max(high_min);
        return 0;
    }
    // How much has been freed recently: the free_count counter (patch 9 on), or before it the
    // drain-scaled batch (batch << free_factor).
    let recently_freed = match policy.free_sizing {
        FreeSizing::FreeCount => pcp.free_count_pages,
        FreeSizing::FreeFactor => batch.checked_shl(pcp.free_factor as u32).unwrap_or(u32::MAX).min(pcp.high_max_pages),
    };
    let shrink_by = recently_freed.max(batch);
    if reclaim_active {
        pcp.high_pages = high.saturating_sub(shrink_by).max(high_min);
        return (batch * 4).min(pcp.high_pages);
    }
    if high_min == pcp.high_max_pages {
        return high;
    }
    if policy.below_high && zone_flag_bits & zone_flags::BELOW_HIGH != 0 {
        pcp.high_pages = high.saturating_sub(shrink_by).max(high_min);
        return pcp.count_pages.max(high_min);
    }
    if pcp.count_pages >= high {
        let need_high = recently_freed.saturating_add(batch);
        // Grow for next time; this free still drains against the old high.
        if pcp.high_pages < need_high {
            // The kernel's clamp(), min(max()): on a tiny zone high_min may exceed high_max,
            // where Rust's Ord::clamp would panic.
            pcp.high_pages = need_high.max(high_min).min(pcp.high_max_pages);
        }
    }
    high
}

/// Pages to drain once count >= high (mirrors nr_pcp_free()).
pub(crate) fn nr_pcp_free(pcp: &mut PerCpuPages, policy: &PcpPolicy, high: u32, free_high: bool) -> u32 {
    let batch = pcp.batch_pages;
    if free_high {
        return if policy.free_high_capped {
            pcp.count_pages.min(batch << policy.scale_max())
        } else {
            pcp.count_pages
        };
    }
    if high < batch {
        return 1;
    }
    let (min_nr_free, max_nr_free) = (batch, high - batch);
    // The kernel's clamp() with lo > hi yields hi; so does min(max()).
    let clamp = |value: u64| value.max(min_nr_free as u64).min(max_nr_free as u64) as u32;
    match policy.free_sizing {
        FreeSizing::FreeFactor => {
            // Double the drain each time pages are freed without an allocation between.
            let scaled = (batch as u64) << pcp.free_factor;
            if scaled < max_nr_free as u64 && pcp.free_factor < policy.scale_max() {
                pcp.free_factor += 1;
            }
            clamp(scaled)
        }
        FreeSizing::FreeCount => clamp(pcp.free_count_pages as u64),
    }
}

/// Periodic decay of an auto-tuned high towards high_min; returns pages to drain now
/// (mirrors decay_pcp_high()).
pub(crate) fn decay_high(pcp: &mut PerCpuPages, policy: &PcpPolicy) -> u32 {
    if policy.autotune_high && pcp.high_pages > pcp.high_min_pages {
        let by_count = pcp.count_pages.saturating_sub(pcp.batch_pages << policy.scale_max());
        let by_eighth = pcp.high_pages - (pcp.high_pages >> 3);
        pcp.high_pages = by_count.max(by_eighth).max(pcp.high_min_pages);
    }
    pcp.count_pages.saturating_sub(pcp.high_pages)
}

#[cfg(test)]
mod tests;
