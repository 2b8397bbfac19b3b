//! The fallback of v4.20 .. v6.9, which the 2018 series measured and changed (mirrors that
//! era's __rmqueue_fallback(), steal_suitable_fallback() and move_freepages_block()).
//!
//! The largest fallback block is taken, so that a pageblock is taken over whole where
//! possible; a movable request that may not take the pageblock over takes the smallest
//! instead. Taking over moves every free page of the pageblock to the requester's lists,
//! and re-types the pageblock only if half of it is free or alike; a single block moves to
//! the requester's list alone. Either way the pages sit on lists that need not match their
//! pageblock's type until they are freed, when they return to the pageblock's type. The
//! boost rule of the series' patch 3 boosts on every fallback below pageblock order.

use super::{boost_and_flag, emit, should_try_claim, suitable_fallback, FallbackRules};
use crate::buddy::LockedZone;
use crate::events::FallbackKind;
use crate::platform::Platform;
use crate::policy::BoostRule;
use crate::request::BlockRequest;
use crate::types::{MigrateType, Pfn, MAX_ORDER, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

/// The fallback stage: take a block of another type onto `want`'s lists, then take from
/// them. Under NOFRAGMENT only whole pageblocks (patch 1 of the 2018
/// fragmentation-avoidance series).
pub(super) fn rmqueue_fallback<P: Platform>(
    ctx: &mut LockedZone<'_, P>,
    rules: &FallbackRules,
    want: BlockRequest,
) -> Option<Pfn> {
    let BlockRequest { order, migratetype: start_type, flags } = want;
    let min_order = if flags.nofragment { order.max(PAGEBLOCK_ORDER) } else { order };
    let mut found = None;
    for current_order in (min_order..=MAX_ORDER).rev() {
        let Some(fallback_type) = suitable_fallback(ctx, current_order, start_type) else { continue };
        let whole_block = should_try_claim(current_order, start_type, rules.grouping_disabled);
        if !whole_block && start_type == MigrateType::Movable && current_order > order {
            // Split the smallest block instead: a movable page in a foreign pageblock does
            // less lasting harm than taking the pageblock's largest free block.
            found = (order..=MAX_ORDER).find_map(|smallest| {
                let fallback_type = suitable_fallback(ctx, smallest, start_type)?;
                Some((smallest, fallback_type, should_try_claim(smallest, start_type, rules.grouping_disabled)))
            });
        } else {
            found = Some((current_order, fallback_type, whole_block));
        }
        break;
    }
    let (current_order, fallback_type, whole_block) = found?;
    let index = ctx.area.lists[current_order as usize][fallback_type.index()].head()?;
    let pfn = ctx.mem.pfn(index);
    let retyped = steal_suitable_fallback(ctx, rules, want, (pfn, current_order, fallback_type), whole_block);
    let kind = if retyped { FallbackKind::Claim } else { FallbackKind::Steal };
    emit(ctx, want, (pfn, current_order, fallback_type), kind);
    let taken = ctx.take_smallest(order, start_type);
    debug_assert!(taken.is_some(), "the stolen block is on the requester's list");
    taken
}

/// Moves the fallback block, or every free page of its pageblock, to `want`'s lists;
/// returns whether the pageblock now has `want`'s type.
fn steal_suitable_fallback<P: Platform>(
    ctx: &mut LockedZone<'_, P>,
    rules: &FallbackRules,
    want: BlockRequest,
    (pfn, current_order, list_type): (Pfn, u8, MigrateType),
    whole_block: bool,
) -> bool {
    let start_type = want.migratetype;
    let block_type = ctx.mem.pageblock_type(pfn);
    if block_type != MigrateType::HighAtomic {
        if current_order >= PAGEBLOCK_ORDER {
            ctx.set_pageblock_range_type(pfn, current_order, start_type);
            ctx.move_free(pfn, current_order, list_type, start_type);
            return true;
        }
        if rules.boost != BoostRule::Off && (whole_block || rules.boost == BoostRule::EveryFallback) {
            boost_and_flag(ctx.state, rules, want.flags.kswapd);
        }
        if whole_block {
            if let Some((start, end)) = ctx.whole_pageblock(pfn) {
                let (free_pages, movable_pages) = ctx.scan_pageblock(start, end);
                ctx.move_pageblock_free_to(start, end, start_type);
                let alike_pages = match (start_type, block_type) {
                    (MigrateType::Movable, _) => movable_pages,
                    (_, MigrateType::Movable) => PAGEBLOCK_PAGES - (free_pages + movable_pages),
                    _ => 0,
                };
                // The fallback block itself was among the free pages moved.
                debug_assert!(free_pages >= 1 << current_order);
                let retype = free_pages + alike_pages >= PAGEBLOCK_PAGES / 2 || rules.grouping_disabled;
                if retype {
                    ctx.mem.set_pageblock_type(start, start_type);
                }
                return retype;
            }
        }
    }
    ctx.move_free(pfn, current_order, list_type, start_type);
    false
}
