//! Buddy operations on one zone with its lock held: free-list add/remove, split (expand),
//! merge (free_one), smallest-first removal, and the one path by which any block returns to
//! the buddy (`release`). Pageblock-wide operations are in `pageblock`.
//!
//! `BuddyZone` is the narrow view of a zone the layers above get (memory, lock, state):
//! the pagesets refill from and drain to the buddy through it without knowing `Zone`.

mod fullest;
mod isolate;
mod merge;
mod pageblock;
mod remote;
mod runs;
mod warm;

pub(crate) use isolate::RANGE_UNIT_PAGES;
pub(crate) use runs::PendingRun;
pub(crate) use warm::warm_merge;

use core::ops::Deref;
use core::sync::atomic::AtomicU32;
use core::sync::atomic::Ordering::Relaxed;

use crate::frame::{FrameInfo, FrameState};
use crate::free_area::FreeArea;
use crate::list::Own;
use crate::platform::{LockId, Platform, SharedLine};
use crate::remote_frees::RemoteFrees;
use crate::sync::{CacheAligned, PlatformGuard, PlatformMutex};
use crate::types::{MigrateType, Pfn, MAX_ORDER, NR_ORDERS};
use crate::zone_mem::ZoneMem;
use crate::zone_state::ZoneState;

/// `zone->lock` and the free area it protects, on cache lines of their own (written constantly).
#[derive(Debug)]
pub struct ZoneLock<P: Platform>(CacheAligned<PlatformMutex<P, FreeArea>>);

impl<P: Platform> ZoneLock<P> {
    pub(crate) fn new(zone_index: u16) -> ZoneLock<P> {
        ZoneLock(CacheAligned(PlatformMutex::new(LockId::Zone(zone_index), FreeArea::default())))
    }

    /// Lock statistics (acquisitions, contended acquisitions, wait).
    pub fn stats(&self) -> crate::sync::LockStats {
        self.0.stats()
    }
}

/// A zone's buddy half, owned: its state, its memory, and the zone lock over its free area.
/// A `Zone` is this plus its pagesets.
#[derive(Debug)]
pub struct BuddyCore<P: Platform> {
    pub(crate) state: ZoneState,
    pub(crate) mem: ZoneMem,
    /// zone->lock and the free area it protects.
    pub(crate) lock: ZoneLock<P>,
    /// The allocator's event subscriber, for the tracepoints below the allocator (zone-locked
    /// takes, pageset drains).
    pub(crate) sink: SinkSlot,
    /// Frees other arenas' CPUs handed over (`DrainPolicy::hand_remote_frees`), released by
    /// the next holder of the zone lock; on a line of its own, written by those CPUs.
    pub(crate) remote_frees: CacheAligned<RemoteFrees<AtomicU32>>,
}

/// An optional shared [`EventSink`](crate::events::EventSink).
#[derive(Clone, Default)]
pub(crate) struct SinkSlot(pub Option<crate::client::Client<dyn crate::events::EventSink>>);

impl core::fmt::Debug for SinkSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.0.is_some() { "SinkSlot(Some)" } else { "SinkSlot(None)" })
    }
}

impl SinkSlot {
    /// Publishes `event` if a subscriber is set; without one, a load and a predicted branch.
    #[inline(always)]
    pub(crate) fn page(&self, event: impl FnOnce() -> crate::events::PageEvent) {
        if self.0.is_some() {
            self.publish(event());
        }
    }

    #[cold]
    #[inline(never)]
    fn publish(&self, event: crate::events::PageEvent) {
        if let Some(sink) = &self.0 {
            sink.page(&event);
        }
    }
}

impl<P: Platform> BuddyCore<P> {
    pub(crate) fn new(state: ZoneState, mem: ZoneMem) -> BuddyCore<P> {
        debug_assert_eq!(state.index, mem.zone_index);
        let lock = ZoneLock::new(state.index);
        BuddyCore { state, mem, lock, sink: SinkSlot::default(), remote_frees: CacheAligned(RemoteFrees::default()) }
    }
}

/// The buddy half reads as the zone's state: `core.node()`, `core.flags()`.
impl<P: Platform> Deref for BuddyCore<P> {
    type Target = ZoneState;
    #[inline(always)]
    fn deref(&self) -> &ZoneState {
        &self.state
    }
}

/// The view of a zone the layers above the buddy get: its buddy half on a platform; what
/// refills, drains and frees need, and nothing else. Two pointers, so it stays in registers.
pub(crate) struct BuddyZone<'a, P: Platform> {
    pub core: &'a BuddyCore<P>,
    pub platform: &'a P,
}

impl<P: Platform> Clone for BuddyZone<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Platform> Copy for BuddyZone<'_, P> {}

impl<P: Platform> Deref for BuddyZone<'_, P> {
    type Target = BuddyCore<P>;
    #[inline(always)]
    fn deref(&self) -> &BuddyCore<P> {
        self.core
    }
}

impl<'a, P: Platform> BuddyZone<'a, P> {
    /// Releases the frees other CPUs handed over, if any, by taking the lock (the allocator's
    /// periodic work and `drain_all`, for an owner that took no lock since).
    pub(crate) fn release_handed_over(self) {
        if self.core.remote_frees.is_pending() {
            drop(self.lock());
        }
    }

    /// Takes the zone lock (mirrors spin_lock_irqsave(&zone->lock)).
    #[inline]
    pub fn lock(self) -> LockedZone<'a, P> {
        let core = self.core;
        let mut locked = LockedZone {
            mem: &core.mem,
            state: &core.state,
            area: core.lock.0.lock(self.platform),
            platform: self.platform,
            sink: &core.sink,
        };
        // Every holder releases what other CPUs handed over: one load when nothing was. The
        // summary goes out at once, as if that were a hold of its own.
        if core.remote_frees.is_pending() {
            locked.release_remote_frees(&core.remote_frees);
            locked.publish_summary();
        }
        locked
    }
}

/// A zone with its lock held. Dropping it publishes the lockless summary, then unlocks.
pub(crate) struct LockedZone<'a, P: Platform> {
    pub(crate) mem: &'a ZoneMem,
    pub(crate) state: &'a ZoneState,
    pub(crate) area: PlatformGuard<'a, P, FreeArea>,
    pub(crate) platform: &'a P,
    pub(crate) sink: &'a SinkSlot,
}

/// The lockless free-page mirror is published once per lock hold, not per list operation:
/// other CPUs read it on every allocation (watermark checks), so a store per operation would
/// bounce its cache line on every page of a refill or drain (the reason Linux keeps
/// NR_FREE_PAGES in per-CPU diffs).
impl<P: Platform> Drop for LockedZone<'_, P> {
    fn drop(&mut self) {
        self.publish_summary();
        // `area` drops after this body: the lock is released once the summary is out.
    }
}

impl<P: Platform> LockedZone<'_, P> {
    /// Publishes the lockless summary of the free area (on drop, before the unlock).
    #[inline]
    fn publish_summary(&mut self) {
        // Writers hold the zone lock, so plain stores keep the summary exact; stores only
        // when something changed keep the line shared in the readers' caches.
        let summary = &self.mem.summary;
        let mut wrote = false;
        let free_pages =
            if self.area.free_diff.is_empty() { self.area.free_pages as i64 } else { self.account_free_diff() };
        if summary.free_pages.load(Relaxed) != free_pages {
            summary.free_pages.store(free_pages, Relaxed);
            wrote = true;
        }
        if summary.free_highatomic_pages.load(Relaxed) != self.area.free_highatomic_pages {
            summary.free_highatomic_pages.store(self.area.free_highatomic_pages, Relaxed);
            wrote = true;
        }
        for (published, &mask) in summary.nonempty_types.iter().zip(&self.area.nonempty_types) {
            if published.load(Relaxed) != mask {
                published.store(mask, Relaxed);
                wrote = true;
            }
        }
        if wrote {
            self.platform.touch_shared(SharedLine::ZoneCounters(self.mem.zone_index), true);
        }
    }
}

impl<P: Platform> LockedZone<'_, P> {
    /// With per-CPU free-count diffs: charges this hold's change of the free count to the
    /// current CPU's diff and returns the count to publish, which moves only when a diff
    /// passes the zone's threshold (mirrors __mod_zone_page_state(NR_FREE_PAGES)). The
    /// count stays signed: other CPUs' unfolded frees can put it below 0 for a while, and
    /// their folds bring it back.
    #[cold]
    #[inline(never)]
    fn account_free_diff(&mut self) -> i64 {
        let published = self.mem.summary.free_pages.load(Relaxed);
        let area = &mut *self.area;
        let delta = area.free_pages as i64 - area.free_pages_accounted as i64;
        area.free_pages_accounted = area.free_pages;
        if delta == 0 {
            return published;
        }
        // A CPU id past the table breaks the Platform contract; any slot stays correct.
        let cpu = self.platform.current_cpu() % area.free_diff.len();
        let threshold = self.state.vmstat.stat_threshold();
        let handed = match i32::try_from(delta) {
            Ok(delta) => i64::from(crate::vmstat::mod_diff(&mut area.free_diff[cpu], delta, threshold)),
            Err(_) => delta + i64::from(core::mem::take(&mut area.free_diff[cpu])),
        };
        if handed == 0 {
            return published;
        }
        self.platform.atomic_shared(SharedLine::ZoneCounters(self.mem.zone_index));
        self.platform.atomic_shared(SharedLine::GlobalCounters);
        published + handed
    }

    /// Folds `cpu`'s free-count diff into the published count (the NR_FREE_PAGES step of
    /// refresh_cpu_vm_stats()); nothing without per-CPU diffs. Returns the pages folded.
    pub(crate) fn fold_free_diff(&mut self, cpu: usize) -> i64 {
        let Some(diff) = self.area.free_diff.get_mut(cpu) else { return 0 };
        let folded = i64::from(core::mem::take(diff));
        if folded != 0 {
            let published = self.mem.summary.free_pages.load(Relaxed) + folded;
            self.mem.summary.free_pages.store(published, Relaxed);
            self.platform.atomic_shared(SharedLine::ZoneCounters(self.mem.zone_index));
            self.platform.atomic_shared(SharedLine::GlobalCounters);
        }
        folded
    }

    /// Starts keeping the free count in per-CPU diffs (at build, after the boot frees).
    pub(crate) fn use_free_diffs(
        &mut self,
        nr_cpus: usize,
        arena: Option<&mut crate::meta::MetaArena>,
    ) -> Result<(), crate::meta::MetaArenaFull> {
        self.area.free_diff = crate::meta::MetaSlice::new(nr_cpus.max(1), arena, |_| 0)?;
        self.area.free_pages_accounted = self.area.free_pages;
        Ok(())
    }

    #[inline]
    fn publish_counts(&mut self, order: u8, migratetype: MigrateType) {
        let bit = 1u8 << migratetype.index();
        let area = &mut *self.area;
        let mask = &mut area.nonempty_types[order as usize];
        if area.lists[order as usize][migratetype.index()].is_empty() {
            *mask &= !bit;
        } else {
            *mask |= bit;
        }
        self.platform.touch_shared(SharedLine::FreeList { zone: self.mem.zone_index, order }, true);
    }

    /// Puts a free block on its list and accounts it (mirrors __add_to_free_list()).
    #[inline]
    pub(crate) fn add_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType, to_tail: bool) {
        self.list_free(pfn, order, migratetype, to_tail);
        if self.mem.pageblock_free.is_tracked() {
            self.account_pageblock_free(pfn, order, true);
        }
    }

    /// [`Self::add_free`] but for the pageblock free counts, which the caller keeps.
    #[inline]
    fn list_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType, to_tail: bool) {
        debug_assert!(order <= MAX_ORDER && pfn & ((1 << order) - 1) == 0, "block {pfn:#x} of order {order}");
        let index = self.mem.index(pfn);
        self.mem.frames[index as usize]
            .change(&[FrameState::Interior], FrameInfo::new(FrameState::FreeHead, order, migratetype));
        let records = self.mem.records(self.platform);
        let list = &mut self.area.lists[order as usize][migratetype.index()];
        if to_tail {
            list.push_tail(&self.mem.frames.view(), index, Own::Cold, &records);
        } else {
            list.push_head(&self.mem.frames.view(), index, Own::Cold, &records);
        }
        self.area.nr_free[order as usize][migratetype.index()] += 1;
        self.area.free_pages += 1 << order;
        if migratetype.index() >= MigrateType::HighAtomic.index() {
            self.account_reserved_free(order, migratetype, true);
        }
        self.publish_counts(order, migratetype);
    }

    /// Takes a free block off its list; its head becomes interior, and the caller gives it
    /// its next state (mirrors __del_page_from_free_list()).
    #[inline]
    pub(crate) fn del_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        self.unlist_free(pfn, order, migratetype);
        if self.mem.pageblock_free.is_tracked() {
            self.account_pageblock_free(pfn, order, false);
        }
    }

    /// [`Self::del_free`] but for the pageblock free counts, which the caller keeps.
    #[inline]
    fn unlist_free(&mut self, pfn: Pfn, order: u8, migratetype: MigrateType) {
        let index = self.mem.index(pfn);
        let frame = &self.mem.frames[index as usize];
        debug_assert_eq!(frame.info().without_generation(), FrameInfo::new(FrameState::FreeHead, order, migratetype));
        debug_assert!(self.area.nr_free[order as usize][migratetype.index()] > 0);
        let records = self.mem.records(self.platform);
        self.area.lists[order as usize][migratetype.index()].remove(
            &self.mem.frames.view(),
            index,
            Own::Cold,
            &records,
        );
        frame.change(&[FrameState::FreeHead], FrameInfo::INTERIOR);
        self.area.nr_free[order as usize][migratetype.index()] -= 1;
        // Before the subtraction: an ISOLATE block's pages come back into the count first.
        if migratetype.index() >= MigrateType::HighAtomic.index() {
            self.account_reserved_free(order, migratetype, false);
        }
        self.area.free_pages -= 1 << order;
        self.publish_counts(order, migratetype);
    }

    /// The free counts of the types ordinary requests cannot take: HIGHATOMIC pages count
    /// as free and as reserve; ISOLATE pages (a range being offlined or taken whole) are
    /// not free to anyone, so they leave NR_FREE_PAGES (mirrors account_freepages()).
    #[cold]
    #[inline(never)]
    fn account_reserved_free(&mut self, order: u8, migratetype: MigrateType, added: bool) {
        let pages = 1u64 << order;
        let area = &mut *self.area;
        match (migratetype, added) {
            (MigrateType::HighAtomic, true) => area.free_highatomic_pages += pages,
            (MigrateType::HighAtomic, false) => area.free_highatomic_pages -= pages,
            (MigrateType::Isolate, true) => {
                area.free_pages -= pages;
                area.free_isolated_pages += pages;
            }
            (MigrateType::Isolate, false) => {
                area.free_pages += pages;
                area.free_isolated_pages -= pages;
            }
            _ => {}
        }
    }

    /// Moves a free block to another type's list, at the tail (mirrors move_to_free_list()).
    pub(crate) fn move_free(&mut self, pfn: Pfn, order: u8, from: MigrateType, to: MigrateType) {
        self.del_free(pfn, order, from);
        self.add_free(pfn, order, to, true);
    }

    /// Splits a block of order `high` at `pfn` down to `low`, returning the upper halves to
    /// the free lists of `migratetype`; returns the pages put back (mirrors expand()).
    #[inline]
    pub(crate) fn expand(&mut self, pfn: Pfn, low: u8, high: u8, migratetype: MigrateType) -> u64 {
        self.list_upper_halves(pfn, low, high, migratetype, Self::add_free)
    }

    /// The split loop: the upper half at each order from `high` down to `low`, put on its
    /// list by `list` (accounted per half, or not); returns the pages put back.
    #[inline(always)]
    fn list_upper_halves(
        &mut self,
        pfn: Pfn,
        low: u8,
        high: u8,
        migratetype: MigrateType,
        list: fn(&mut Self, Pfn, u8, MigrateType, bool),
    ) -> u64 {
        debug_assert!(low <= high && high <= MAX_ORDER);
        let mut order = high;
        let mut returned_pages = 0;
        while order > low {
            order -= 1;
            list(self, pfn + (1 << order), order, migratetype, false);
            returned_pages += 1 << order;
        }
        returned_pages
    }

    /// Takes the free block of `high` at `pfn` off its list and splits it down to `low`,
    /// the upper halves listed again; returns the pages put back (mirrors
    /// page_del_and_expand()). With fullest-first, the pageblock free counts change once,
    /// by the pages taken: the halves go back to the pageblocks they left.
    #[inline]
    pub(crate) fn del_and_expand(&mut self, pfn: Pfn, low: u8, high: u8, migratetype: MigrateType) -> u64 {
        self.unlist_free(pfn, high, migratetype);
        let returned_pages = self.list_upper_halves(pfn, low, high, migratetype, Self::list_free);
        if self.mem.pageblock_free.is_tracked() {
            self.account_pageblock_taken(pfn, low);
        }
        returned_pages
    }

    /// Takes the smallest free block of `migratetype` that fits `order`, splits it and
    /// returns the head pfn, interior until the caller marks it (mirrors __rmqueue_smallest()).
    #[inline]
    pub(crate) fn take_smallest(&mut self, order: u8, migratetype: MigrateType) -> Option<Pfn> {
        for current in order as usize..NR_ORDERS {
            if let Some(index) = self.area.lists[current][migratetype.index()].head() {
                let pfn = self.mem.pfn(index);
                self.del_and_expand(pfn, order, current as u8, migratetype);
                return Some(pfn);
            }
        }
        None
    }
}
