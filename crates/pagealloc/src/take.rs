//! The one path that takes blocks out of a zone under its lock, shared by single
//! allocations and pageset refills (mirrors the common core of rmqueue_buddy() and
//! rmqueue_bulk()).

use crate::buddy::LockedZone;
use crate::events::PageEvent;
use crate::fallback::{self, FallbackRules, RmqueueMode};
use crate::platform::Platform;
use crate::request::BlockRequest;
use crate::types::{MigrateType, Pfn, PAGEBLOCK_ORDER};

/// How many blocks a take wants, whether it may use the high-order atomic reserve, and
/// whether pagesets cache its order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TakeCount {
    pub blocks: u32,
    /// A single allocation reaches into the HIGHATOMIC lists (first with ALLOC_HIGHATOMIC,
    /// last for a non-blocking caller); a pageset refill never does.
    pub reserves: bool,
    /// Pagesets cache the order: with a mergeable type, the take's tracepoint reports a
    /// percpu_refill, whoever takes (as `mm_page_alloc_zone_locked` does).
    pub pcp_order: bool,
}

impl TakeCount {
    /// One block for an allocation.
    pub const fn single(pcp_order: bool) -> TakeCount {
        TakeCount { blocks: 1, reserves: true, pcp_order }
    }

    /// `blocks` blocks for a pageset refill.
    pub const fn refill(blocks: u32) -> TakeCount {
        TakeCount { blocks, reserves: false, pcp_order: true }
    }
}

/// Takes up to `count.blocks` blocks for `request` under the held zone lock, handing each
/// head (interior, off every list) to `deliver`, which gives it its next state. Returns how
/// many were taken and counts their pages as allocated from the zone.
#[inline]
pub(crate) fn take_blocks<P: Platform>(
    zone: &mut LockedZone<'_, P>,
    rules: &FallbackRules,
    request: BlockRequest,
    count: TakeCount,
    mut deliver: impl FnMut(Pfn),
) -> u32 {
    let mut mode = RmqueueMode::Normal;
    let mut taken = 0;
    // Bounded by count.blocks.
    while taken < count.blocks {
        let wanted = count.blocks - taken;
        let Some((first, migratetype, run_blocks)) =
            take_one(zone, rules, request, (count.reserves, wanted), &mut mode)
        else {
            break;
        };
        debug_assert!(run_blocks >= 1 && run_blocks <= wanted);
        debug_assert!(run_blocks == 1 || request.order == 0, "a run of blocks above order 0");
        // A run of order-0 blocks (fullest-first) is delivered block by block, as taken.
        for pfn in first..first + u64::from(run_blocks) {
            debug_assert!(zone.mem.contains(pfn) && pfn & ((1 << request.order) - 1) == 0, "took {pfn:#x}");
            debug_assert_eq!(
                zone.mem.frame(pfn).info().state(),
                crate::frame::FrameState::Interior,
                "taken head not interior"
            );
            zone.sink.page(|| PageEvent::ZoneLocked {
                pfn,
                order: request.order,
                migratetype,
                percpu_refill: count.pcp_order && migratetype.is_mergeable(),
            });
            deliver(pfn);
        }
        taken += run_blocks;
    }
    zone.area.counters.alloc_zone_pages += (taken as u64) << request.order;
    debug_assert!(taken <= count.blocks);
    taken
}

#[inline]
/// One block, or with fullest-first placement a run of up to `wanted` order-0 blocks from
/// one free block (a refill then takes a pageblock's free blocks whole, not page by page):
/// (first pfn, migratetype, blocks in the run).
fn take_one<P: Platform>(
    zone: &mut LockedZone<'_, P>,
    rules: &FallbackRules,
    request: BlockRequest,
    (reserves, wanted): (bool, u32),
    mode: &mut RmqueueMode,
) -> Option<(Pfn, MigrateType, u32)> {
    debug_assert!(wanted >= 1, "a take of no blocks");
    let highatomic = |pfn| (pfn, MigrateType::HighAtomic, 1);
    if reserves && request.flags.highatomic {
        if let Some(pfn) = zone.take_smallest(request.order, MigrateType::HighAtomic) {
            return Some(highatomic(pfn));
        }
    }
    let requested = |pfn| (pfn, request.migratetype, 1);
    if request.order == PAGEBLOCK_ORDER {
        if let Some(pfn) = zone.take_parked_pageblock(request.migratetype) {
            return Some(requested(pfn));
        }
    }
    if request.order == 0 && zone.area.fullness.is_some() {
        if let Some((pfn, run_order)) = zone.take_fullest(request.migratetype, wanted) {
            return Some((pfn, request.migratetype, 1 << run_order));
        }
    }
    let pfn = fallback::rmqueue(zone, rules, request, mode);
    // Failing now is worse than failing a future high-order atomic request.
    if pfn.is_none() && reserves && request.flags.non_block {
        return zone.take_smallest(request.order, MigrateType::HighAtomic).map(highatomic);
    }
    pfn.map(requested)
}
