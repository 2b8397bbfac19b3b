//! Memory added, taken offline and brought back at run time, in whole pageblocks of a
//! zone's span (mirrors add_memory(), offline_pages() and online_pages()). Memory added
//! fills holes of a zone's span (hot-pluggable ranges firmware declares at boot), or, with
//! the `memory-growth` feature, grows a span past its end (`grow.rs`). Offline memory stays in the span as holes whose
//! pageblocks are ISOLATE, which is how `online` tells it from a hole never added.
//! Each change re-derives watermarks, lowmem reserves and pageset bounds from the
//! managed pages (`resize`), as Linux does after onlining and offlining, and where each
//! zonelist walk starts: a zone declared empty (a hot-pluggable range) serves memory added
//! to it at once, as Linux's build_all_zonelists() on the first online makes it.

use core::ops::Range;

use super::PageAllocator;
use crate::buddy::LockedZone;
use crate::error::RangeError;
use crate::meta::MetaArena;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, ZoneType, PAGEBLOCK_PAGES};
use crate::zone::Zone;

impl<P: Platform> PageAllocator<P> {
    /// The body of [`crate::Hotplug::offline`].
    pub(crate) fn offline(&self, range: Range<Pfn>) -> Result<u64, RangeError> {
        let _guard = self.lock_ranges()?;
        let parts = self.range_parts(range.start, range.end)?;
        self.isolate_and_empty(parts)?;
        for (zone, start, end) in parts.iter() {
            let mut locked = zone.buddy(&self.platform).lock();
            // Emptied under the range lock: isolated free blocks are taken by nothing else.
            assert_eq!(locked.first_unisolated(start, end), None, "isolated range changed");
            locked.take_isolated_range(start, end);
            locked.retire_range(start, end);
            drop(locked);
            zone.state().adjust_online_pages(end - start, false);
        }
        self.resize_zones();
        Ok(range.end - range.start)
    }

    /// The body of [`crate::Hotplug::online`]: every part checked before any is admitted.
    pub(crate) fn online(&self, range: Range<Pfn>) -> Result<u64, RangeError> {
        let _guard = self.lock_ranges()?;
        let parts = self.range_parts(range.start, range.end)?;
        for (zone, start, end) in parts.iter() {
            if let Some(pfn) = Self::not_offline(&zone.buddy(&self.platform).lock(), start..end, true) {
                return Err(RangeError::NotOffline { pfn });
            }
        }
        // Nothing else changes holes under the range lock: each admit passes its check.
        parts.iter().map(|(zone, start, end)| self.admit(zone, start..end, true)).sum()
    }

    /// The body of [`crate::Hotplug::add_memory`].
    pub(crate) fn add_memory(&self, range: Range<Pfn>, zone_type: ZoneType) -> Result<u64, RangeError> {
        self.add_memory_placing(range, zone_type, None)
    }

    pub(super) fn add_memory_placing(
        &self,
        range: Range<Pfn>,
        zone_type: ZoneType,
        arena: Option<&mut MetaArena>,
    ) -> Result<u64, RangeError> {
        let _guard = self.lock_ranges()?;
        let zone = self.zone_for_added(&range, zone_type, arena)?;
        self.admit(zone, range, false)
    }

    /// Frees the holes of `range` into the zone; with `offline_only`, only memory
    /// [`Self::offline`] took.
    fn admit(&self, zone: &Zone<P>, range: Range<Pfn>, offline_only: bool) -> Result<u64, RangeError> {
        let mut locked = zone.buddy(&self.platform).lock();
        if let Some(pfn) = Self::not_offline(&locked, range.clone(), offline_only) {
            return Err(RangeError::NotOffline { pfn });
        }
        locked.admit_range(range.start, range.end);
        drop(locked);
        let pages = range.end - range.start;
        zone.state().adjust_online_pages(pages, true);
        self.resize_zones();
        Ok(pages)
    }

    /// The first frame of `range` that is not a hole; with `offline_only`, not memory
    /// [`Self::offline`] took.
    fn not_offline(locked: &LockedZone<'_, P>, range: Range<Pfn>, offline_only: bool) -> Option<Pfn> {
        if let Some(pfn) = locked.mem.first_not_hole(range.start, range.end) {
            return Some(pfn);
        }
        let mut pageblocks = range.step_by(PAGEBLOCK_PAGES as usize);
        pageblocks.find(|&block| offline_only && locked.mem.pageblock_type(block) != MigrateType::Isolate)
    }
}
