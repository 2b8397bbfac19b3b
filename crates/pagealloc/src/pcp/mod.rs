//! Per-CPU pagesets (Linux `struct per_cpu_pages`): per zone and CPU, LIFO lists of cached
//! blocks per (order, migratetype), refilled from and drained to the buddy in batches, with
//! `high` auto-tuned between `high_min` and `high_max`.
//!
//! The owning CPU takes the pageset lock with a trylock and falls back to the buddy when it
//! fails (the thread may have migrated and another thread now uses this CPU's pageset);
//! remote drains lock normally.

mod buddy_bound;
mod call;
mod control;
mod drain;
mod drain_cause;
mod path;
mod rules;
mod select;
mod vmstat_update;

pub(crate) use buddy_bound::pcp_free_buddy_bound;
pub(crate) use call::PcpCall;
pub(crate) use control::{drain_pcp, set_bounds, set_high};
pub use drain_cause::DrainCause;
pub(crate) use path::{pcp_alloc, pcp_free};
pub(crate) use rules::{
    decay_high, is_free_high, note_free_order, nr_pcp_alloc, nr_pcp_free, nr_pcp_high, thp_batch_pages,
};
pub(crate) use vmstat_update::vmstat_update;

use crate::list::FrameList;
use crate::platform::{LockId, Platform};
use crate::sync::PlatformMutex;
use crate::types::{MigrateType, COSTLY_ORDER, NR_PCP_TYPES, PAGEBLOCK_ORDER};
use crate::vmstat::CpuZoneStats;

/// Order 0..=3 lists per PCP type, plus up to two pageblock-order (THP) lists.
pub const NR_PCP_LISTS: usize = (COSTLY_ORDER as usize + 1) * NR_PCP_TYPES + 2;
pub(crate) const FIRST_THP_LIST: usize = NR_PCP_LISTS - 2;

/// vmstat ticks a remote node's pageset may idle before it is drained.
pub(crate) const REMOTE_EXPIRE_TICKS: u8 = 3;

/// Pageset flag bits.
pub mod pcp_flags {
    /// The previous free into this pageset was of order 1..=3.
    pub const PREV_FREE_HIGH_ORDER: u8 = 1 << 0;
    /// This CPU's last-level-cache slice holds more than 3 batches: cache a batch before a
    /// free_high drain.
    pub const FREE_HIGH_BATCH: u8 = 1 << 1;
}

/// List index of (order, type) (mirrors order_to_pindex()). `pcp_type` is a PCP type.
#[inline]
pub fn pindex(order: u8, pcp_type: MigrateType, thp_lists: u8) -> usize {
    if order <= COSTLY_ORDER {
        order as usize * NR_PCP_TYPES + pcp_type.index()
    } else {
        debug_assert_eq!(order, PAGEBLOCK_ORDER);
        FIRST_THP_LIST + usize::from(thp_lists == 2 && pcp_type == MigrateType::Movable)
    }
}

/// Order of the blocks on list `index` (mirrors pindex_to_order()).
#[inline]
pub fn pindex_order(index: usize) -> u8 {
    if index < FIRST_THP_LIST {
        (index / NR_PCP_TYPES) as u8
    } else {
        PAGEBLOCK_ORDER
    }
}

/// The part of `pages`, moved in blocks of `order`, that `PerCpuPages::thp_pages` counts:
/// all of them for pageblock-order blocks, none else.
#[inline(always)]
pub(crate) fn thp_part(pages: u32, order: u8) -> u32 {
    if order >= PAGEBLOCK_ORDER {
        pages
    } else {
        0
    }
}

/// The list type a freed block joins: its pageblock's type, HIGHATOMIC and CMA on the
/// movable list; `None` for ISOLATE, which bypasses the pageset.
#[inline]
pub(crate) fn pcp_type_for(pageblock_type: MigrateType) -> Option<MigrateType> {
    match pageblock_type {
        MigrateType::Unmovable | MigrateType::Movable | MigrateType::Reclaimable => Some(pageblock_type),
        MigrateType::HighAtomic | MigrateType::Cma => Some(MigrateType::Movable),
        MigrateType::Isolate => None,
    }
}

/// Event counters of one pageset, kept under its lock (so they cost no atomics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcpCounters {
    /// Allocations served from a list that was not empty.
    pub alloc_hits: u64,
    /// Refills (rmqueue_bulk calls) and the pages they brought.
    pub refills: u64,
    pub refill_pages: u64,
    /// Frees that met the free_high condition.
    pub free_high_events: u64,
    /// Pages drained to the buddy, by cause.
    pub drained_pages: [u64; DrainCause::COUNT],
    /// Largest `count` seen, in pages.
    pub peak_pages: u64,
}

impl core::ops::AddAssign for PcpCounters {
    fn add_assign(&mut self, other: PcpCounters) {
        self.alloc_hits += other.alloc_hits;
        self.refills += other.refills;
        self.refill_pages += other.refill_pages;
        self.free_high_events += other.free_high_events;
        self.peak_pages += other.peak_pages;
        for (sum, pages) in self.drained_pages.iter_mut().zip(other.drained_pages) {
            *sum += pages;
        }
    }
}

/// One zone's pageset on one CPU.
#[derive(Debug)]
pub struct PerCpuPages {
    pub(crate) lists: [FrameList; NR_PCP_LISTS],
    /// Pages cached (an order-n block counts 2^n).
    pub(crate) count_pages: u32,
    /// The part of `count_pages` in pageblock-order blocks (`HighMaxRule::SmallOrdersAtHighMin`
    /// bounds the rest).
    pub(crate) thp_pages: u32,
    /// Drain when a free brings `count_pages` to this (auto-tuned between the bounds).
    pub(crate) high_pages: u32,
    pub(crate) high_min_pages: u32,
    pub(crate) high_max_pages: u32,
    /// Refill and drain unit.
    pub(crate) batch_pages: u32,
    pub(crate) flags: u8,
    /// log2 multiplier of order-0 refills.
    pub(crate) alloc_factor: u8,
    /// log2 multiplier of drains (v5.14 .. v6.6 sizing).
    pub(crate) free_factor: u8,
    /// vmstat ticks left before a remote-node pageset is drained.
    pub(crate) expire: u8,
    /// Pages freed since the last allocation, decaying (Linux `free_count`).
    pub(crate) free_count_pages: u32,
    pub(crate) counters: PcpCounters,
    /// This CPU's vmstat counters for the zone.
    pub(crate) stats: CpuZoneStats,
    /// Frees bound for the buddy (fullest-first placement), not counted in `count_pages`
    /// and never allocated from; see `buddy_bound`.
    pub(crate) buddy_bound: FrameList,
    pub(crate) buddy_bound_pages: u32,
}

impl PerCpuPages {
    pub(crate) fn new(batch: u32, high_min: u32, high_max: u32, free_high_batch: bool) -> PerCpuPages {
        // high_min may exceed high_max on a tiny zone (its low-watermark share beats
        // managed/8's); the first use clamps high to high_max, as the kernel's clamp() does.
        debug_assert!(batch >= 1);
        PerCpuPages {
            lists: [FrameList::EMPTY; NR_PCP_LISTS],
            count_pages: 0,
            thp_pages: 0,
            high_pages: high_min,
            high_min_pages: high_min,
            high_max_pages: high_max,
            batch_pages: batch,
            flags: if free_high_batch { pcp_flags::FREE_HIGH_BATCH } else { 0 },
            alloc_factor: 0,
            free_factor: 0,
            expire: 0,
            free_count_pages: 0,
            counters: PcpCounters::default(),
            stats: CpuZoneStats::default(),
            buddy_bound: FrameList::EMPTY,
            buddy_bound_pages: 0,
        }
    }

    /// Debug builds: the counts agree with what the lists hold, as a refill or a drain
    /// must leave them (the invariant checker's pageset count check, run where they
    /// change). Absent from release builds, with its calls.
    #[cfg(debug_assertions)]
    pub(crate) fn debug_assert_counts(&self, mem: &crate::zone_mem::ZoneMem) {
        let (mut pages, mut thp_pages) = (0u32, 0u32);
        for (list_index, list) in self.lists.iter().enumerate() {
            let order = pindex_order(list_index);
            let listed = list.iter(&mem.links, mem.links.len()).count() as u32;
            pages += listed << order;
            if order >= PAGEBLOCK_ORDER {
                thp_pages += listed << order;
            }
        }
        assert_eq!(pages, self.count_pages, "pageset pages counted");
        assert_eq!(thp_pages, self.thp_pages, "pageset pageblock-order pages counted");
        assert!(self.buddy_bound.is_empty() == (self.buddy_bound_pages == 0), "buddy-bound list and count");
    }

    pub fn count_pages(&self) -> u32 {
        self.count_pages
    }
    /// Pages cached in blocks of orders 0..=3.
    pub fn small_order_pages(&self) -> u32 {
        self.count_pages - self.thp_pages
    }
    /// Pages cached in pageblock-order blocks.
    pub fn thp_pages(&self) -> u32 {
        self.thp_pages
    }
    /// Pages waiting on the buddy-bound list (fullest-first placement).
    pub fn buddy_bound_pages(&self) -> u32 {
        self.buddy_bound_pages
    }
    pub fn high_pages(&self) -> u32 {
        self.high_pages
    }
    pub fn high_min_pages(&self) -> u32 {
        self.high_min_pages
    }
    pub fn high_max_pages(&self) -> u32 {
        self.high_max_pages
    }
    pub fn batch_pages(&self) -> u32 {
        self.batch_pages
    }
    pub fn flags(&self) -> u8 {
        self.flags
    }
    pub fn alloc_factor(&self) -> u8 {
        self.alloc_factor
    }
    pub fn free_count_pages(&self) -> u32 {
        self.free_count_pages
    }
    pub fn counters(&self) -> PcpCounters {
        self.counters
    }
    pub fn stats(&self) -> &CpuZoneStats {
        &self.stats
    }

    #[inline]
    pub(crate) fn note_peak(&mut self) {
        self.counters.peak_pages = self.counters.peak_pages.max(self.count_pages as u64);
    }
}

/// A pageset with its lock, on its own cache lines.
#[derive(Debug)]
#[repr(align(64))]
pub struct PcpSlot<P: Platform> {
    pub(crate) pageset: PlatformMutex<P, PerCpuPages, P::PcpLock>,
    /// The CPU is on another node than the zone (with per-CPU arenas, another arena): fixed
    /// at build, read on every fast-path call without a lookup of the CPU's node. Rules
    /// about whose memory a pageset holds ask this: remote pagesets expire, and frees into
    /// another arena skip the pageset.
    pub(crate) remote: bool,
    /// The CPU is on another described node than the zone (arenas of one node are one):
    /// NUMA locality, what numa_local and numa_other count.
    pub(crate) other_node: bool,
}

impl<P: Platform> PcpSlot<P> {
    /// `(remote, other_node)`: the CPU is on another node (arena) than the zone, and on
    /// another described node; the second implies the first.
    pub(crate) fn new(
        zone_index: u16,
        cpu: u32,
        (remote, other_node): (bool, bool),
        pageset: PerCpuPages,
    ) -> PcpSlot<P> {
        debug_assert!(remote || !other_node, "another described node is another node");
        PcpSlot { pageset: PlatformMutex::new(LockId::Pcp { zone: zone_index, cpu }, pageset), remote, other_node }
    }

    /// Runs `f` on the pageset under its lock (views, tests).
    pub fn inspect<R>(&self, platform: &P, f: impl FnOnce(&PerCpuPages) -> R) -> R {
        f(&self.pageset.lock(platform))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_indices_cover_every_cached_order_and_type_once() {
        let mut seen = [false; NR_PCP_LISTS];
        for order in 0..=COSTLY_ORDER {
            for pcp_type in [MigrateType::Unmovable, MigrateType::Movable, MigrateType::Reclaimable] {
                let index = pindex(order, pcp_type, 2);
                assert!(!seen[index]);
                seen[index] = true;
                assert_eq!(pindex_order(index), order);
            }
        }
        assert_eq!(pindex(PAGEBLOCK_ORDER, MigrateType::Unmovable, 2), 12);
        assert_eq!(pindex(PAGEBLOCK_ORDER, MigrateType::Movable, 2), 13);
        assert_eq!(pindex(PAGEBLOCK_ORDER, MigrateType::Movable, 1), 12);
        assert_eq!(pindex_order(13), PAGEBLOCK_ORDER);
    }

    #[test]
    fn thp_part_counts_only_pageblock_order_blocks() {
        for order in 0..=COSTLY_ORDER {
            assert_eq!(thp_part(1 << order, order), 0);
            assert_eq!(thp_part(63 << order, order), 0);
        }
        assert_eq!(thp_part(1 << PAGEBLOCK_ORDER, PAGEBLOCK_ORDER), 1 << PAGEBLOCK_ORDER);
        assert_eq!(thp_part(7 << PAGEBLOCK_ORDER, PAGEBLOCK_ORDER), 7 << PAGEBLOCK_ORDER);
    }

    #[test]
    fn special_types_map_to_lists_as_in_linux() {
        assert_eq!(pcp_type_for(MigrateType::HighAtomic), Some(MigrateType::Movable));
        assert_eq!(pcp_type_for(MigrateType::Cma), Some(MigrateType::Movable));
        assert_eq!(pcp_type_for(MigrateType::Isolate), None);
    }
}
