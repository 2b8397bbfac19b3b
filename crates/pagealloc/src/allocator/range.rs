//! Emptying a range of a zone, or of contiguous arenas (`range_parts`): isolate its
//! pageblocks, drain the pagesets, move every allocated block out through the migration
//! client, and check that the range is all isolated free memory (mirrors start_isolate_page_range(), has_unmovable_pages(),
//! __alloc_contig_migrate_range() and test_pages_isolated()). Memory offline and
//! contiguous allocations build on it; one range operation runs at a time.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use super::range_parts::RangeParts;
use super::{Migrate, MigrateSource, PageAllocator};
use crate::buddy::RANGE_UNIT_PAGES;
use crate::error::RangeError;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::request::AllocRequest;
use crate::types::{MigrateType, Pfn};
use crate::zone::Zone;

/// Drain-migrate-check passes before a range that keeps getting blocks back is given up
/// (frees that read the pageblock type before the isolation can still reach a pageset).
const ISOLATION_PASSES: usize = 5;

/// Held while a range operation runs (mirrors mem_hotplug_lock, taken without waiting).
pub(super) struct RangeGuard<'a>(&'a core::sync::atomic::AtomicBool);

impl Drop for RangeGuard<'_> {
    fn drop(&mut self) {
        debug_assert!(self.0.load(Relaxed));
        self.0.store(false, Release);
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Starts a range operation, or says another is running.
    pub(super) fn lock_ranges(&self) -> Result<RangeGuard<'_>, RangeError> {
        self.range_op.compare_exchange(false, true, Acquire, Relaxed).map_err(|_| RangeError::Concurrent)?;
        Ok(RangeGuard(&self.range_op))
    }

    /// The zone whose span holds `[start, end)`, whole pageblocks.
    pub(super) fn range_zone(&self, start: Pfn, end: Pfn) -> Result<&Zone<P>, RangeError> {
        if start >= end || !start.is_multiple_of(RANGE_UNIT_PAGES) || !end.is_multiple_of(RANGE_UNIT_PAGES) {
            return Err(RangeError::Misaligned { start, end });
        }
        let zone = self.zone_of_pfn(start).ok_or(RangeError::OutsideZone { pfn: start })?;
        if !zone.mem().contains(end - 1) {
            return Err(RangeError::OutsideZone { pfn: zone.mem().end_pfn() });
        }
        Ok(zone)
    }

    /// The first frame of `[start, end)` that stops the range from being emptied, read
    /// without the lock: a hole, or an allocated block no client can move (mirrors
    /// has_unmovable_pages()). Blocks across the range's edges are checked under the lock
    /// that isolates it.
    pub(super) fn check_movable(&self, zone: &Zone<P>, start: Pfn, end: Pfn) -> Result<(), RangeError> {
        let mut pfn = start;
        while pfn < end {
            let info = zone.mem().frame(pfn).info();
            let movable = info.migratetype() == MigrateType::Movable;
            match info.state() {
                FrameState::Reserved => return Err(RangeError::ReservedFrame { pfn }),
                FrameState::Hole => return Err(RangeError::NotOnline { pfn }),
                FrameState::AllocHead if !movable => return Err(RangeError::Unmovable { pfn }),
                FrameState::AllocHead if self.migrate.is_none() => return Err(RangeError::NoMigrationClient { pfn }),
                FrameState::Interior => pfn += 1,
                _ => pfn += 1 << info.order(),
            }
        }
        Ok(())
    }

    /// Isolates every part of `range` and empties it; on success every frame of the range
    /// is free on the ISOLATE lists. On failure every part's isolation is undone.
    pub(super) fn isolate_and_empty(&self, range: RangeParts<'_, P>) -> Result<(), RangeError> {
        for (zone, start, end) in range.iter() {
            self.check_movable(zone, start, end)?;
        }
        // Undone on failure, and on a panic of the migration client unwinding through.
        let mut isolation = Isolation { range, isolated_end: range.start };
        for (zone, start, end) in range.iter() {
            let mut locked = zone.buddy(&self.platform).lock();
            if let Some(pfn) = locked.unisolatable_pageblock(start, end) {
                return Err(RangeError::ReservedPageblock { pfn });
            }
            if let Some(pfn) = locked.straddling_block(start, end) {
                return Err(RangeError::Busy { pfn });
            }
            locked.isolate_range(start, end);
            isolation.isolated_end = end;
        }
        self.empty_isolated(range)?;
        core::mem::forget(isolation);
        Ok(())
    }

    /// Passes of drain, migrate and check over every part, until all are empty at once: a
    /// part emptied earlier may get a block back from a pageset while a later one empties.
    fn empty_isolated(&self, range: RangeParts<'_, P>) -> Result<(), RangeError> {
        let mut busy_pfn = range.start;
        for _ in 0..ISOLATION_PASSES {
            self.pagesets().drain_all();
            for (zone, start, end) in range.iter() {
                self.migrate_out(zone, (start, end), (range.start, range.end))?;
            }
            let busy = range
                .iter()
                .find_map(|(zone, start, end)| zone.buddy(&self.platform).lock().first_unisolated(start, end));
            match busy {
                None => return Ok(()),
                Some(pfn) => busy_pfn = pfn,
            }
        }
        Err(RangeError::Busy { pfn: busy_pfn })
    }

    /// Moves every allocated block of `zone`'s isolated part `[start, end)` of the range
    /// `whole` out of the range.
    fn migrate_out(&self, zone: &Zone<P>, (start, end): (Pfn, Pfn), whole: (Pfn, Pfn)) -> Result<(), RangeError> {
        let mut pfn = start;
        while pfn < end {
            let info = zone.mem().frame(pfn).info();
            match info.state() {
                FrameState::AllocHead => {
                    let client = self.migrate.as_deref().ok_or(RangeError::NoMigrationClient { pfn })?;
                    if info.migratetype() != MigrateType::Movable {
                        return Err(RangeError::Unmovable { pfn });
                    }
                    self.migrate_block(client, zone, (pfn, info), whole)?;
                    pfn += 1 << info.order();
                }
                FrameState::FreeHead | FrameState::PcpHead | FrameState::Parked => pfn += 1 << info.order(),
                FrameState::Interior | FrameState::Reserved | FrameState::Hole => pfn += 1,
            }
        }
        Ok(())
    }

    /// Moves the block at `pfn` (its head word `info` as seen) to a block allocated outside
    /// the range `[start, end)`, which may span zones (mirrors alloc_migration_target() and
    /// migrate_pages()).
    fn migrate_block(
        &self,
        client: &dyn Migrate<P>,
        zone: &Zone<P>,
        (pfn, info): (Pfn, FrameInfo),
        (start, end): (Pfn, Pfn),
    ) -> Result<(), RangeError> {
        let order = info.order();
        let request = AllocRequest::USER_MOVABLE.on_node(self.nodes[zone.state().node as usize].home);
        let target = self.alloc_pages(order, request).map_err(|_| RangeError::MigrationFailed { pfn })?;
        if (start..end).contains(&target.pfn()) {
            // A block freed into a pageset before the isolation came back: it belongs to
            // the range (the free lands on its ISOLATE list); the next pass moves `pfn`.
            self.free_pages(target).expect("a block just allocated frees");
            return Ok(());
        }
        let source = MigrateSource { pfn, order, zone_index: zone.state().index, generation: info.generation() };
        // Freed back should the client panic holding it.
        let lent = LentTarget { allocator: self, pfn: target.pfn(), order, head: target.expected_head() };
        let moved = client.migrate(self, source, target);
        core::mem::forget(lent);
        match moved {
            Ok(old) => self.free_pages(old).map_err(|_| RangeError::MigrationFailed { pfn }),
            Err(target) => {
                self.free_pages(target).expect("a refused target frees");
                // A block the client no longer owns was freed meanwhile: the check sees it.
                if zone.mem().frame(pfn).info() == info {
                    Err(RangeError::MigrationFailed { pfn })
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// A range's isolation, undone when dropped: on an error, or when a migration client's
/// panic unwinds through the range operation (mirrors undo_isolate_page_range()). The
/// parts below `isolated_end` are isolated.
struct Isolation<'a, P: Platform> {
    range: RangeParts<'a, P>,
    isolated_end: Pfn,
}

impl<P: Platform> Drop for Isolation<'_, P> {
    fn drop(&mut self) {
        for (zone, start, end) in self.range.iter().take_while(|&(_, start, _)| start < self.isolated_end) {
            zone.buddy(self.range.platform()).lock().unisolate_range(start, end);
        }
    }
}

/// A migration target lent to the client. Dropped only when the client panics holding it:
/// the block goes back to the allocator if its head is still as handed out (a client that
/// freed or kept it, against the contract, has it refused later as stale or double).
struct LentTarget<'a, P: Platform> {
    allocator: &'a PageAllocator<P>,
    pfn: Pfn,
    order: u8,
    head: FrameInfo,
}

impl<P: Platform> Drop for LentTarget<'_, P> {
    fn drop(&mut self) {
        let Some(zone) = self.allocator.zone_of_pfn(self.pfn) else { return };
        let generation = Some(self.head.generation());
        let _ = self.allocator.free_checked(zone, self.pfn, self.order, generation);
    }
}
