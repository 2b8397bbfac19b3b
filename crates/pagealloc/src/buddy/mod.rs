//! Buddy operations on one zone with its lock held. This file holds the zone lock and the
//! views of a zone's buddy half: `BuddyCore` (owned), `BuddyZone` (the narrow view the
//! layers above get: the pagesets refill from and drain to the buddy through it without
//! knowing `Zone`) and `LockedZone` (the lock held). The operations are by concept:
//! - `free_lists`: a block on or off its list, split (expand), smallest-first removal;
//! - `merge`: the one path by which any block returns to the buddy (`release`, free_one);
//! - `pageblock`: pageblock-wide moves; `isolate`: ranges taken out of the buddy;
//! - `fullest`: fullest-first placement; `runs`: contiguous runs freed as aligned blocks;
//! - `remote`: frees handed over by other arenas' CPUs; `parked`: parked frees collected;
//! - `warm`: reads ahead of a merge;
//! - `summary`: the lockless summary published per hold; `free_diffs`: the free count in
//!   per-CPU diffs; `sink`: the event subscriber.

mod free_diffs;
mod free_lists;
mod fullest;
mod isolate;
mod merge;
mod pageblock;
mod parked;
mod remote;
mod runs;
mod sink;
mod summary;
mod warm;

pub(crate) use isolate::RANGE_UNIT_PAGES;
pub(crate) use runs::PendingRun;
pub(crate) use sink::SinkSlot;
pub(crate) use warm::warm_merge;

use core::ops::Deref;
use core::sync::atomic::AtomicU32;

use crate::free_area::FreeArea;
use crate::platform::{LockId, Platform};
use crate::remote_frees::RemoteFrees;
use crate::sync::{CacheAligned, PlatformGuard, PlatformMutex};
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
    /// Frees other arenas' CPUs handed over (`DrainBeyondLinux::hand_remote_frees`), released by
    /// the next holder of the zone lock; on a line of its own, written by those CPUs.
    pub(crate) remote_frees: CacheAligned<RemoteFrees<AtomicU32>>,
}

impl<P: Platform> BuddyCore<P> {
    pub(crate) fn new(state: ZoneState, mem: ZoneMem) -> BuddyCore<P> {
        debug_assert_eq!(state.index, mem.zone_index);
        let lock = ZoneLock::new(state.index);
        BuddyCore { state, mem, lock, sink: SinkSlot::default(), remote_frees: CacheAligned(RemoteFrees::default()) }
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
    /// The zone's identity, parameters and flags.
    #[inline(always)]
    pub(crate) fn state(self) -> &'a ZoneState {
        &self.core.state
    }

    /// The zone's frame records and pageblock types.
    #[inline(always)]
    pub(crate) fn mem(self) -> &'a ZoneMem {
        &self.core.mem
    }

    /// Releases the frees other CPUs handed over, if any, by taking the lock (the allocator's
    /// periodic work, `drain_all`, kswapd and a request about to fail, for an owner that
    /// took no lock since); whether there were any.
    pub(crate) fn release_handed_over(self) -> bool {
        let pending = self.core.remote_frees.is_pending();
        if pending {
            drop(self.lock());
        }
        pending
    }

    /// Gives the zone's parked frees to the buddy, if its hint says there may be some
    /// (`FragBeyondLinux::parked_frees`: a drain, kswapd, a request's slow path); whether
    /// any pages came back.
    pub(crate) fn collect_parked(self) -> bool {
        if !self.core.mem.parked_hint.load(core::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        self.lock().collect_parked() != 0
    }

    /// Takes the zone lock and leaves handed-over frees pending: for the invariant checker,
    /// which counts them where they are.
    #[inline(always)]
    pub(crate) fn lock_leaving_handed_over(self) -> LockedZone<'a, P> {
        let core = self.core;
        LockedZone {
            mem: &core.mem,
            state: &core.state,
            area: core.lock.0.lock(self.platform),
            platform: self.platform,
            sink: &core.sink,
        }
    }

    /// Takes the zone lock (mirrors spin_lock_irqsave(&zone->lock)).
    #[inline]
    pub fn lock(self) -> LockedZone<'a, P> {
        let core = self.core;
        let mut locked = self.lock_leaving_handed_over();
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
        // What this hold changed leaves the counts agreeing (debug builds).
        #[cfg(debug_assertions)]
        self.area.debug_assert_counts();
        self.publish_summary();
        // `area` drops after this body: the lock is released once the summary is out.
    }
}
