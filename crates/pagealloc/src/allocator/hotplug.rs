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
use crate::error::RangeError;
use crate::meta::MetaArena;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, ZoneType, PAGEBLOCK_PAGES};
use crate::zone::Zone;

impl<P: Platform> PageAllocator<P> {
    /// Takes `range` (whole pageblocks of one zone) out of use: isolates it, moves
    /// every allocated block out through the migration client ([`Self::set_migrate`]),
    /// and turns its frames into holes. Returns the pages taken; `managed_pages()` and the
    /// zone's watermarks drop by them until [`Self::online`] brings the range back. Fails,
    /// with the range as it was, if a block cannot move (unmovable, or refused by the
    /// client; with no client at all, [`RangeError::NoMigrationClient`]), if a pageblock
    /// is a reserve, or if part of the range is not online.
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 8192), TestPlatform::new(2)).unwrap();
    /// let start = allocator.zones()[0].start_pfn().next_multiple_of(1024);
    /// assert_eq!(allocator.offline(start..start + 2048).unwrap(), 2048);
    /// allocator.online(start..start + 2048).unwrap();
    /// allocator.check_invariants().unwrap();
    /// ```
    pub fn offline(&self, range: Range<Pfn>) -> Result<u64, RangeError> {
        let _guard = self.lock_ranges()?;
        let zone = self.range_zone(range.start, range.end)?;
        self.isolate_and_empty(zone, range.start, range.end)?;
        let mut locked = zone.buddy(&self.platform).lock();
        // Emptied under the range lock: isolated free blocks are taken by nothing else.
        assert_eq!(locked.first_unisolated(range.start, range.end), None, "isolated range changed");
        locked.take_isolated_range(range.start, range.end);
        locked.retire_range(range.start, range.end);
        drop(locked);
        let pages = range.end - range.start;
        zone.state().adjust_online_pages(pages, false);
        self.resize_zones();
        Ok(pages)
    }

    /// Returns an offline `range` to use (free MOVABLE memory); refuses a range with a
    /// part that is online, or a hole that was never added ([`Self::add_memory`]).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let start = allocator.zones()[0].start_pfn().next_multiple_of(1024);
    /// assert!(allocator.online(start..start + 1024).is_err(), "online memory cannot come online again");
    /// allocator.offline(start..start + 1024).unwrap();
    /// assert_eq!(allocator.online(start..start + 1024).unwrap(), 1024);
    /// ```
    pub fn online(&self, range: Range<Pfn>) -> Result<u64, RangeError> {
        let _guard = self.lock_ranges()?;
        let zone = self.range_zone(range.start, range.end)?;
        self.admit(zone, range, true)
    }

    /// Adds `range` (whole pageblocks) as free MOVABLE memory to the zone of type
    /// `zone_type`: holes (or offline memory) of the zone's span, or, with the
    /// `memory-growth` feature, memory past every span of the type, which the zone starting
    /// nearest below it grows to take ([`Self::add_memory_in`] places the new records in
    /// caller memory instead of the heap).
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// // A zone spanning 16 MiB with its upper 8 MiB absent at build.
    /// let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, 0..4096).hole(2048..4096);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// assert_eq!(allocator.add_memory(2048..4096, ZoneType::Normal).unwrap(), 2048);
    /// assert_eq!(allocator.managed_pages(), 4096);
    /// ```
    pub fn add_memory(&self, range: Range<Pfn>, zone_type: ZoneType) -> Result<u64, RangeError> {
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
        if let Some(pfn) = locked.mem.first_not_hole(range.start, range.end) {
            return Err(RangeError::NotOffline { pfn });
        }
        if offline_only {
            let hole = range
                .clone()
                .step_by(PAGEBLOCK_PAGES as usize)
                .find(|&block| locked.mem.pageblock_type(block) != MigrateType::Isolate);
            if let Some(pfn) = hole {
                return Err(RangeError::NotOffline { pfn });
            }
        }
        locked.admit_range(range.start, range.end);
        drop(locked);
        let pages = range.end - range.start;
        zone.state().adjust_online_pages(pages, true);
        self.resize_zones();
        Ok(pages)
    }
}
