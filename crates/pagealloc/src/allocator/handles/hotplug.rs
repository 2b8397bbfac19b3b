//! CPU and memory hotplug, as the platform reports it.

use core::ops::Range;

use crate::allocator::PageAllocator;
use crate::error::RangeError;
use crate::meta::MetaArena;
use crate::metadata_memory::MetadataMemory;
use crate::pcp::DrainCause;
use crate::platform::Platform;
use crate::types::{Pfn, ZoneType};

/// CPU and memory hotplug: a CPU gone offline (mirrors page_alloc_cpu_dead()) or back
/// online, memory
/// added, taken offline and brought back online in whole pageblocks (mirrors add_memory(),
/// offline_pages() and online_pages()). From [`PageAllocator::hotplug`].
#[derive(Clone, Copy)]
pub struct Hotplug<'a, P: Platform> {
    pub(super) allocator: &'a PageAllocator<P>,
}

impl<P: Platform> PageAllocator<P> {
    /// CPU and memory hotplug: CPUs going offline, memory added, offlined and onlined.
    #[inline]
    pub fn hotplug(&self) -> Hotplug<'_, P> {
        Hotplug { allocator: self }
    }
}

impl<P: Platform> Hotplug<'_, P> {
    /// A CPU went offline: return its cached pages (mirrors page_alloc_cpu_dead()), and
    /// hand the background work it ran (its node's or arena's kswapd and kcompactd, and
    /// those of memory-only nodes it stood in for) to an online CPU: one of the same
    /// described node if any is online, else the nearest node's
    /// ([`crate::allocator::Node::background_cpu`]), as the scheduler runs kswapd elsewhere
    /// once its node's CPUs are all offline. The harness then stops calling
    /// [`crate::Background::run_due_work`] for the CPU; a CPU it still calls runs its own
    /// node's work as before. With every CPU offline (Linux keeps one online) the work
    /// stays where the build put it. Returns the pages drained; 0, and nothing changed,
    /// for a CPU the allocator does not know.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::{Platform, TestPlatform};
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap();
    /// let cpu = allocator.platform().current_cpu();
    /// assert!(allocator.hotplug().cpu_offline(cpu) > 0); // its pageset goes back to the buddy
    /// ```
    #[inline]
    pub fn cpu_offline(&self, cpu: usize) -> u64 {
        let allocator = self.allocator;
        let drained = allocator.drain_cpu_pagesets(cpu, DrainCause::CpuOffline);
        if allocator.cpus.set(cpu, false) {
            allocator.assign_background_cpus();
        }
        drained
    }

    /// A CPU came back online: its node's background work, and that of the memory-only
    /// nodes it is nearest to, runs on it again; its pagesets, emptied when it went
    /// offline, fill as it allocates. False, and nothing changed, for a CPU the allocator
    /// does not know.
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// // Two nodes of one CPU each.
    /// let builder = AllocatorBuilder::new().node(1).node(1)
    ///     .zone(0, ZoneType::Normal, 0x10_0000..0x10_1000)
    ///     .zone(1, ZoneType::Normal, 0x20_0000..0x20_1000);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// allocator.hotplug().cpu_offline(1);
    /// assert_eq!(allocator.nodes()[1].background_cpu(), Some(0)); // CPU 0 runs node 1's kswapd
    /// assert!(allocator.hotplug().cpu_online(1));
    /// assert_eq!(allocator.nodes()[1].background_cpu(), None); // back on its own CPU
    /// assert!(!allocator.hotplug().cpu_online(2)); // no such CPU
    /// ```
    #[inline]
    pub fn cpu_online(&self, cpu: usize) -> bool {
        let allocator = self.allocator;
        if !allocator.cpus.set(cpu, true) {
            return false;
        }
        allocator.assign_background_cpus();
        true
    }

    /// Takes `range` (whole pageblocks of one zone, or of contiguous per-CPU arenas of one
    /// node's zone) out of use: isolates it, moves
    /// every allocated block out through the migration client ([`PageAllocator::set_migrate`]),
    /// and turns its frames into holes. Returns the pages taken; `managed_pages()` and the
    /// zone's watermarks drop by them until [`Self::online`] brings the range back. Fails,
    /// with the range as it was, if a block cannot move (unmovable, or refused by the
    /// client; with no client at all, [`RangeError::NoMigrationClient`]), if a pageblock
    /// is a reserve, if part of the range is not online, or if a frame is reserved memory
    /// ([`RangeError::ReservedFrame`]: reservations stay reserved).
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 8192), TestPlatform::new(2)).unwrap();
    /// let start = allocator.zones()[0].start_pfn().next_multiple_of(1024);
    /// assert_eq!(allocator.hotplug().offline(start..start + 2048).unwrap(), 2048);
    /// allocator.hotplug().online(start..start + 2048).unwrap();
    /// allocator.check_invariants().unwrap();
    /// ```
    #[inline]
    pub fn offline(&self, range: Range<Pfn>) -> Result<u64, RangeError> {
        let allocator = self.allocator;
        let _guard = allocator.lock_ranges()?;
        let parts = allocator.range_parts(range.start, range.end)?;
        allocator.isolate_and_empty(parts)?;
        for (zone, start, end) in parts.iter() {
            let mut locked = zone.buddy(&allocator.platform).lock();
            // Emptied under the range lock: isolated free blocks are taken by nothing else.
            assert_eq!(locked.first_unisolated(start, end), None, "isolated range changed");
            locked.take_isolated_range(start, end);
            locked.retire_range(start, end);
            drop(locked);
            zone.state().adjust_online_pages(end - start, false);
        }
        allocator.resize_zones();
        Ok(range.end - range.start)
    }

    /// Returns an offline `range` to use (free MOVABLE memory); refuses a range with a
    /// part that is online or reserved, or a hole that was never added ([`Self::add_memory`]).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let start = allocator.zones()[0].start_pfn().next_multiple_of(1024);
    /// assert!(allocator.hotplug().online(start..start + 1024).is_err(), "online memory cannot come online again");
    /// allocator.hotplug().offline(start..start + 1024).unwrap();
    /// assert_eq!(allocator.hotplug().online(start..start + 1024).unwrap(), 1024);
    /// ```
    #[inline]
    pub fn online(&self, range: Range<Pfn>) -> Result<u64, RangeError> {
        let allocator = self.allocator;
        let _guard = allocator.lock_ranges()?;
        let parts = allocator.range_parts(range.start, range.end)?;
        for (zone, start, end) in parts.iter() {
            PageAllocator::<P>::not_offline(&zone.buddy(&allocator.platform).lock(), start..end, true)?;
        }
        // Nothing else changes holes under the range lock: each admit passes its check.
        parts.iter().map(|(zone, start, end)| allocator.admit(zone, start..end, true)).sum()
    }

    /// Adds `range` (whole pageblocks) as free MOVABLE memory to the zone of type
    /// `zone_type`: holes (or offline memory) of the zone's span, or, with the
    /// `memory-growth` feature, memory past every span of the type, which the zone starting
    /// nearest below it grows to take ([`Self::add_memory_in`] places the new records in
    /// caller memory instead of the heap). Only holes are added: a range holding online
    /// memory is [`RangeError::NotOffline`], one holding memory reserved at boot (the
    /// allocator's own records among it) [`RangeError::ReservedFrame`], and nothing is added.
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// // A zone spanning 16 MiB with its upper 8 MiB absent at build.
    /// let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, 0..4096).hole(2048..4096);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// assert_eq!(allocator.hotplug().add_memory(2048..4096, ZoneType::Normal).unwrap(), 2048);
    /// assert_eq!(allocator.counters().managed_pages(), 4096);
    /// ```
    #[inline]
    pub fn add_memory(&self, range: Range<Pfn>, zone_type: ZoneType) -> Result<u64, RangeError> {
        let allocator = self.allocator;
        let _guard = allocator.lock_ranges()?;
        let zone = allocator.zone_for_added(&range, zone_type, None)?;
        allocator.admit(zone, range, false)
    }

    /// Adds `range` (whole pageblocks) as free MOVABLE memory of the zone of `zone_type`,
    /// placing the records a growth of the zone's span needs in `metadata` (which the
    /// allocator keeps for its lifetime). For builds without a heap; with one,
    /// [`Self::add_memory`] places them on the heap. [`Self::add_memory_metadata_bytes`]
    /// says how much to give. Metadata given with its address inside `range` itself would
    /// be handed out as free pages: that is [`RangeError::MetadataInRange`], and nothing is
    /// added; in free memory of a zone it is [`RangeError::MetadataInFreeMemory`] (take it
    /// from the allocator first and never free it). Its frames in a hole of a span become
    /// reserved memory, counted present, which no later add hands out; frames outside every
    /// span are the caller's to keep out of later adds.
    ///
    /// ```
    /// # #[cfg(feature = "memory-growth")] {
    /// use core::mem::MaybeUninit;
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, 0x100000..0x100000 + 4096);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// let dimm = 0x100000 + 8192..0x100000 + 16384;
    /// let bytes = allocator.hotplug().add_memory_metadata_bytes(dimm.clone(), ZoneType::Normal).unwrap();
    /// let heap = Box::leak(vec![MaybeUninit::uninit(); bytes as usize].into_boxed_slice());
    /// // SAFETY: heap memory is no frame the allocator manages.
    /// let memory = unsafe { pagealloc::MetadataMemory::outside_managed_memory(heap) };
    /// assert_eq!(allocator.hotplug().add_memory_in(dimm, ZoneType::Normal, memory).unwrap(), 8192);
    /// assert_eq!(allocator.zones()[0].spanned_pages(), 16384);
    /// # }
    /// ```
    #[inline]
    pub fn add_memory_in(
        &self,
        range: Range<Pfn>,
        zone_type: ZoneType,
        metadata: MetadataMemory,
    ) -> Result<u64, RangeError> {
        let allocator = self.allocator;
        let records = metadata.frames();
        if let Some(frames) = records.clone().filter(|frames| frames.start < range.end && range.start < frames.end) {
            return Err(RangeError::MetadataInRange { pfn: frames.start.max(range.start) });
        }
        let _guard = allocator.lock_ranges()?;
        if let Some(frames) = &records {
            allocator.check_records_not_free(frames)?;
        }
        let mut arena = MetaArena::new(metadata.bytes);
        let zone = allocator.zone_for_added(&range, zone_type, Some(&mut arena))?;
        // After a growth, which used the records, the add cannot fail: the growth checked
        // the range's part inside the old span, and the rest is new holes.
        let pages = allocator.admit(zone, range, false)?;
        if let Some(frames) = records {
            allocator.reserve_record_holes(frames);
        }
        Ok(pages)
    }

    /// Bytes [`Self::add_memory_in`] needs for `range`: 0 when it lies in a span already.
    #[inline]
    pub fn add_memory_metadata_bytes(&self, range: Range<Pfn>, zone_type: ZoneType) -> Result<u64, RangeError> {
        let allocator = self.allocator;
        let _guard = allocator.lock_ranges()?;
        match allocator.range_zone(range.start, range.end) {
            Ok(_) => Ok(0),
            Err(RangeError::OutsideZone { .. }) => {
                let zone = allocator.zone_to_grow(&range, zone_type)?;
                let locked = zone.buddy(&allocator.platform).lock();
                let buckets = locked.area.fullness.as_ref().map_or(0, |buckets| buckets.directory_bytes());
                Ok(zone.mem().growth_bytes(range.end) + buckets)
            }
            Err(other) => Err(other),
        }
    }
}
