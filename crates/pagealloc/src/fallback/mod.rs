//! Allocation from a zone's free lists with migratetype fallback: native type first, then
//! claiming a pageblock of another type, then stealing a block without re-typing
//! (mirrors __rmqueue(), __rmqueue_claim(), __rmqueue_steal(), try_to_claim_block(),
//! boost_watermark()). The 2018 design the seed series modified is `steal_2018`.

mod steal_2018;

use crate::buddy::LockedZone;
use crate::events::{ExtfragEvent, FallbackKind};
use crate::platform::Platform;
use crate::policy::{BoostRule, FallbackDesign};
use crate::request::BlockRequest;
use crate::sizing::mult_frac;
use crate::types::{MigrateType, Pfn, MAX_ORDER, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};
use crate::zone_state::{zone_flags, ZoneState};

/// The fallback path's rules from the allocator's policy and tunables. Fallback events go
/// to the zone's own event slot.
#[derive(Clone, Copy)]
pub(crate) struct FallbackRules {
    /// Mobility grouping is off on tiny machines: any fallback claims the pageblock.
    pub grouping_disabled: bool,
    pub watermark_boost_factor: u32,
    pub design: FallbackDesign,
    pub boost: BoostRule,
}

/// Which stage last succeeded, so a bulk refill skips stages that already failed
/// (mirrors `enum rmqueue_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RmqueueMode {
    /// Native list first, then claim, then steal.
    Normal,
    /// Claiming already failed in this bulk operation: go straight to stealing.
    Steal,
}

/// Would claiming the whole pageblock be worth trying for a fallback block of `order`
/// (mirrors should_try_claim_block())?
pub(crate) fn should_try_claim(order: u8, start_type: MigrateType, grouping_disabled: bool) -> bool {
    order >= PAGEBLOCK_ORDER
        || order >= PAGEBLOCK_ORDER / 2
        || matches!(start_type, MigrateType::Unmovable | MigrateType::Reclaimable)
        || grouping_disabled
}

/// First fallback type with a free block of exactly `order` (mirrors find_suitable_fallback()).
pub(crate) fn suitable_fallback<P: Platform>(
    zone: &LockedZone<'_, P>,
    order: u8,
    start_type: MigrateType,
) -> Option<MigrateType> {
    start_type.fallbacks().iter().copied().find(|fallback| zone.area.nr_free[order as usize][fallback.index()] > 0)
}

/// Records and publishes one fallback (the mm_page_alloc_extfrag tracepoint).
pub(crate) fn emit<P: Platform>(
    ctx: &LockedZone<'_, P>,
    want: BlockRequest,
    taken: (Pfn, u8, MigrateType),
    kind: FallbackKind,
) {
    let (pfn, fallback_order, fallback_migratetype) = taken;
    let event = ExtfragEvent {
        zone_index: ctx.state.index,
        pfn,
        order: want.order,
        fallback_order,
        start_migratetype: want.migratetype,
        fallback_migratetype,
        kind,
    };
    ctx.state.extfrag.record(&event);
    ctx.sink.extfrag(&event);
}

/// Raises the zone's watermark boost by a pageblock, up to factor% of the high watermark;
/// false when boosting is off or pointless for the zone (mirrors boost_watermark()).
fn boost_watermark(zone: &ZoneState, rules: &FallbackRules) -> bool {
    if rules.boost == BoostRule::Off || rules.watermark_boost_factor == 0 || PAGEBLOCK_PAGES * 4 > zone.managed_pages()
    {
        return false;
    }
    let max_boost = mult_frac(zone.params.watermarks().high_pages, rules.watermark_boost_factor as u64, 10_000);
    if max_boost == 0 {
        return false;
    }
    let max_boost = max_boost.max(PAGEBLOCK_PAGES);
    let boost = zone.boost_pages().saturating_add(PAGEBLOCK_PAGES).min(max_boost);
    zone.boost_pages.store(boost, core::sync::atomic::Ordering::Relaxed);
    zone.extfrag.record_boost();
    true
}

/// Boosts, and flags the zone for kswapd if the request may wake it (the wake-up itself
/// happens after the zone lock is dropped).
pub(crate) fn boost_and_flag(zone: &ZoneState, rules: &FallbackRules, may_wake_kswapd: bool) {
    if boost_watermark(zone, rules) && may_wake_kswapd {
        zone.set_flag(zone_flags::BOOSTED_WATERMARK);
    }
}

/// Tries to take over the pageblock of a free fallback block at `pfn` for `start_type`.
fn try_claim_block<P: Platform>(
    ctx: &mut LockedZone<'_, P>,
    rules: &FallbackRules,
    want: BlockRequest,
    (pfn, current_order, block_type): (Pfn, u8, MigrateType),
) -> Option<Pfn> {
    let BlockRequest { order, migratetype: start_type, flags } = want;
    if current_order >= PAGEBLOCK_ORDER {
        ctx.del_free(pfn, current_order, block_type);
        ctx.set_pageblock_range_type(pfn, current_order, start_type);
        ctx.expand(pfn, order, current_order, start_type);
        return Some(pfn);
    }
    boost_and_flag(ctx.state, rules, flags.kswapd);
    let (start, end) = ctx.whole_pageblock(pfn)?;
    let (free_pages, movable_pages) = ctx.scan_pageblock(start, end);
    let alike_pages = match (start_type, block_type) {
        (MigrateType::Movable, _) => movable_pages,
        (_, MigrateType::Movable) => PAGEBLOCK_PAGES - (free_pages + movable_pages),
        _ => 0,
    };
    if free_pages + alike_pages >= PAGEBLOCK_PAGES / 2 || rules.grouping_disabled {
        ctx.move_pageblock(start, end, block_type, start_type);
        debug_assert_eq!(ctx.mem.pageblock_type(start), start_type, "claimed pageblock keeps its old type");
        return ctx.take_smallest(order, start_type);
    }
    None
}

/// Claim stage: largest fallback blocks first, down to `order` (pageblock order under
/// NOFRAGMENT).
fn rmqueue_claim<P: Platform>(ctx: &mut LockedZone<'_, P>, rules: &FallbackRules, want: BlockRequest) -> Option<Pfn> {
    let BlockRequest { order, migratetype: start_type, flags } = want;
    let min_order = if order < PAGEBLOCK_ORDER && flags.nofragment { PAGEBLOCK_ORDER } else { order };
    for current_order in (min_order..=MAX_ORDER).rev() {
        if !should_try_claim(current_order, start_type, rules.grouping_disabled) {
            break;
        }
        let Some(block_type) = suitable_fallback(ctx, current_order, start_type) else { continue };
        let index = ctx.area.lists[current_order as usize][block_type.index()].head()?;
        let pfn = ctx.mem.pfn(index);
        if let Some(head) = try_claim_block(ctx, rules, want, (pfn, current_order, block_type)) {
            emit(ctx, want, (pfn, current_order, block_type), FallbackKind::Claim);
            return Some(head);
        }
    }
    None
}

/// Steal stage: the smallest fallback block that fits; the pageblock keeps its type.
fn rmqueue_steal<P: Platform>(ctx: &mut LockedZone<'_, P>, rules: &FallbackRules, want: BlockRequest) -> Option<Pfn> {
    let BlockRequest { order, migratetype: start_type, .. } = want;
    for current_order in order..=MAX_ORDER {
        let Some(block_type) = suitable_fallback(ctx, current_order, start_type) else { continue };
        let index = ctx.area.lists[current_order as usize][block_type.index()].head()?;
        let pfn = ctx.mem.pfn(index);
        ctx.del_and_expand(pfn, order, current_order, block_type);
        debug_assert_eq!(ctx.mem.pageblock_type(pfn), block_type, "a steal leaves the pageblock's type");
        if rules.boost == BoostRule::EveryFallback && current_order < PAGEBLOCK_ORDER {
            boost_and_flag(ctx.state, rules, want.flags.kswapd);
        }
        emit(ctx, want, (pfn, current_order, block_type), FallbackKind::Steal);
        return Some(pfn);
    }
    None
}

/// Takes a block for `want` from the zone, falling back as needed (mirrors __rmqueue()).
/// The returned head is off every list and interior until the caller marks it.
pub(crate) fn rmqueue<P: Platform>(
    ctx: &mut LockedZone<'_, P>,
    rules: &FallbackRules,
    want: BlockRequest,
    mode: &mut RmqueueMode,
) -> Option<Pfn> {
    if *mode == RmqueueMode::Normal {
        if let Some(pfn) = ctx.take_smallest(want.order, want.migratetype) {
            return Some(pfn);
        }
    }
    if rules.design == FallbackDesign::Steal2018 {
        return steal_2018::rmqueue_fallback(ctx, rules, want);
    }
    let flags = want.flags;
    if *mode == RmqueueMode::Normal {
        if let Some(pfn) = rmqueue_claim(ctx, rules, want) {
            // The claimed pageblock now serves this type natively.
            *mode = RmqueueMode::Normal;
            return Some(pfn);
        }
    }
    if !flags.nofragment {
        if let Some(pfn) = rmqueue_steal(ctx, rules, want) {
            *mode = RmqueueMode::Steal;
            return Some(pfn);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::{PcpBounds, Watermarks};
    use crate::types::{ZoneType, MAX_NR_ZONES};
    use crate::zone_state::ZoneParams;

    fn zone(managed_pages: u64, high_pages: u64) -> ZoneState {
        let watermarks = Watermarks { min_pages: 0, low_pages: 0, high_pages, promo_pages: high_pages };
        let params = ZoneParams {
            watermarks,
            lowmem_reserve: [0; MAX_NR_ZONES],
            pcp: PcpBounds { batch_pages: 1, high_min_pages: 1, high_max_pages: 1 },
            stat_threshold: 32,
            pressure_stat_threshold: 32,
        };
        let mut state = ZoneState::new(0, 0, ZoneType::Normal, params);
        state.managed_pages = core::sync::atomic::AtomicU64::new(managed_pages);
        state
    }

    fn rules_with(boost: BoostRule, factor: u32) -> FallbackRules {
        FallbackRules {
            grouping_disabled: false,
            watermark_boost_factor: factor,
            design: FallbackDesign::ClaimOrSteal,
            boost,
        }
    }

    /// boost_watermark(): max_boost = high * factor / 10000, at least a pageblock; each
    /// event adds a pageblock up to it; nothing with factor 0, a zone under 4 pageblocks,
    /// or boosting off.
    #[test]
    fn boost_arithmetic_follows_the_kernel() {
        let rules = rules_with(BoostRule::ClaimAttempts, 15_000);
        // high 2000: max 3000 pages, so 512, 1024, 1536, 2048, 2560, then 3000.
        let big = zone(1 << 20, 2_000);
        let boosts: alloc::vec::Vec<u64> = (0..7)
            .map(|_| {
                assert!(boost_watermark(&big, &rules));
                big.boost_pages()
            })
            .collect();
        assert_eq!(boosts, [512, 1024, 1536, 2048, 2560, 3000, 3000]);
        // A small high watermark still boosts by a whole pageblock.
        let small_high = zone(1 << 20, 10);
        assert!(boost_watermark(&small_high, &rules));
        assert_eq!(small_high.boost_pages(), PAGEBLOCK_PAGES);
        // Fewer than four pageblocks, factor 0, boosting off, or a zero max: nothing.
        let tiny = zone(PAGEBLOCK_PAGES * 4 - 1, 2_000);
        assert!(!boost_watermark(&tiny, &rules));
        assert!(!boost_watermark(&big, &rules_with(BoostRule::ClaimAttempts, 0)));
        assert!(!boost_watermark(&zone(1 << 20, 2_000), &rules_with(BoostRule::Off, 15_000)));
        assert!(!boost_watermark(&zone(1 << 20, 0), &rules));
    }

    /// should_try_claim_block(): claiming is tried for blocks of pageblock order, half of it, any
    /// unmovable or reclaimable request, or with grouping off; a movable request's small
    /// block is only stolen.
    #[test]
    fn should_try_claim_follows_the_kernel() {
        assert!(should_try_claim(PAGEBLOCK_ORDER, MigrateType::Movable, false));
        assert!(should_try_claim(PAGEBLOCK_ORDER / 2, MigrateType::Movable, false));
        assert!(!should_try_claim(PAGEBLOCK_ORDER / 2 - 1, MigrateType::Movable, false));
        assert!(should_try_claim(0, MigrateType::Unmovable, false));
        assert!(should_try_claim(0, MigrateType::Reclaimable, false));
        assert!(should_try_claim(0, MigrateType::Movable, true));
    }
}
