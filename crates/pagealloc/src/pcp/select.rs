//! Which blocks a drain takes from a pageset: the lists drained, the walk over them in
//! the policy's order (proportional or whole-list round robin), and the read-ahead of each
//! block's buddy while collecting (mirrors the selection half of free_pcppages_bulk()).

use super::{pindex_order, thp_part, PerCpuPages, FIRST_THP_LIST, NR_PCP_LISTS};
use crate::list::{OwnRecord, RecordCost};
use crate::policy::PcpPolicy;

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
    pub(super) fn end(self) -> usize {
        match self {
            DrainLists::All => NR_PCP_LISTS,
            DrainLists::BelowPageblock => FIRST_THP_LIST,
        }
    }

    /// Pages the drained lists hold.
    #[inline]
    pub(super) fn pages(self, pcp: &PerCpuPages) -> u32 {
        match self {
            DrainLists::All => pcp.count_pages,
            DrainLists::BelowPageblock => pcp.small_order_pages(),
        }
    }
}

/// Walks the lists in the policy's order, unlinking blocks from their tails and calling
/// `take` for each, until `count` pages are taken (a high-order block may overshoot).
pub(super) fn select_blocks(
    pcp: &mut PerCpuPages,
    mut count: i64,
    (start_pindex, lists): (usize, DrainLists),
    policy: &PcpPolicy,
    links: &crate::growable::GrowableView<crate::frame::FrameLinks>,
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
        while let Some(index) = pcp.lists[pindex].pop_tail(links, OwnRecord::Charge, records) {
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
pub(super) fn prefetch_buddy(frames: usize, records: &impl RecordCost, index: u32, order: u8, correct_order: bool) {
    let buddy_index = index ^ (1 << if correct_order { order } else { 0 });
    if (buddy_index as usize) < frames {
        records.touch(buddy_index, false);
    }
}
