//! Contiguous runs of any length, beyond MAX_ORDER (huge pages of 1 GiB, device buffers):
//! a candidate range is isolated and emptied by migration, then the run is handed out as
//! the largest aligned blocks that tile it, and the rest of the isolated blocks goes back
//! (mirrors alloc_contig_pages(), alloc_contig_range() and free_contig_range()).

use super::range_parts::RangeParts;
use super::PageAllocator;
use crate::buddy::RANGE_UNIT_PAGES;
use crate::error::{AllocError, FreeError, RangeError};
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::request::AllocRequest;
use crate::types::{MigrateType, Pfn, ZoneType, MAX_ORDER};
use crate::zone::Zone;

/// A contiguous run from [`PageAllocator::alloc_contig`]: `pages` frames from `pfn`, held
/// as the largest aligned blocks that tile it. Give it back with
/// [`PageAllocator::free_contig`]; a run dropped instead is leaked, as a dropped block is.
#[must_use = "a run not freed is leaked"]
#[derive(Debug, PartialEq, Eq)]
pub struct ContigRun {
    pfn: Pfn,
    pages: u64,
    zone_index: u16,
    allocator_id: u32,
}

impl ContigRun {
    pub fn pfn(&self) -> Pfn {
        self.pfn
    }
    pub fn pages(&self) -> u64 {
        self.pages
    }
    /// The zone of the run's first frame; with per-CPU arenas a run may go on into the
    /// arenas after it ([`PageAllocator::contig_blocks`] names each block's).
    pub fn zone_index(&self) -> u16 {
        self.zone_index
    }
}

/// The largest aligned blocks (at most MAX_ORDER) that tile `[start, end)`, in order.
pub(crate) fn tiling_blocks(start: Pfn, end: Pfn) -> impl Iterator<Item = (Pfn, u8)> {
    let mut pfn = start;
    core::iter::from_fn(move || {
        if pfn >= end {
            return None;
        }
        let aligned = if pfn == 0 { u32::from(MAX_ORDER) } else { pfn.trailing_zeros() };
        let fits = 63 - (end - pfn).leading_zeros();
        let order = aligned.min(fits).min(u32::from(MAX_ORDER)) as u8;
        let block = (pfn, order);
        pfn += 1 << order;
        Some(block)
    })
}

impl<P: Platform> PageAllocator<P> {
    /// Allocates `pages` contiguous frames starting at a multiple of `align_pages` (a power
    /// of two), from the zones `request` may use, by isolating a candidate range and
    /// moving its movable blocks out through the migration client. Candidates are tried
    /// from each zone's start; ranges with holes, unmovable blocks or reserves are skipped.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 16384), TestPlatform::new(2)).unwrap();
    /// let run = allocator.alloc_contig(3000, 2048, AllocRequest::KERNEL).unwrap();
    /// assert_eq!((run.pfn() % 2048, run.pages()), (0, 3000));
    /// allocator.free_contig(run).unwrap();
    /// allocator.pagesets().drain_all(); // its small blocks went to this CPU's pageset
    /// assert_eq!(allocator.counters().buddy_free_pages(), allocator.counters().managed_pages());
    /// ```
    pub fn alloc_contig(&self, pages: u64, align_pages: u64, request: AllocRequest) -> Result<ContigRun, AllocError> {
        if pages == 0 {
            return Err(AllocError::EmptyRun);
        }
        if !align_pages.is_power_of_two() {
            return Err(AllocError::ContigUnavailable { pages });
        }
        let _guard = self.lock_ranges().map_err(|_| AllocError::ContigUnavailable { pages })?;
        let cpu = self.platform.current_cpu();
        let node = match request.node {
            None => self.node_of_cpu(cpu),
            Some(home) => self.node_for_request(home, cpu)?,
        };
        let node = &self.nodes[node as usize];
        for &zone_index in node.zonelist_from(request.highest_zone) {
            let zone = &self.zones[zone_index as usize];
            let allowed = zone.state().zone_type != ZoneType::Device
                && (zone.state().zone_type != ZoneType::Movable || request.migratetype == MigrateType::Movable);
            if allowed && zone.state().is_populated() {
                if let Some(pfn) = self.contig_in_zone(zone, pages, align_pages) {
                    return Ok(ContigRun { pfn, pages, zone_index, allocator_id: self.id });
                }
            }
        }
        Err(AllocError::ContigUnavailable { pages })
    }

    /// Tries each aligned candidate starting in `zone` in turn, running on into the arenas
    /// that follow it if they are parts of the same zone (`range_parts`); the run's first
    /// pfn on success.
    fn contig_in_zone(&self, zone: &Zone<P>, pages: u64, align_pages: u64) -> Option<Pfn> {
        let group_end = self.span_group_end(zone);
        let mut start = zone.mem().start_pfn.next_multiple_of(align_pages);
        while start < zone.mem().end_pfn() && start.checked_add(pages)? <= group_end {
            let end = start + pages;
            let unit_start = start - start % RANGE_UNIT_PAGES;
            let unit_end = end.next_multiple_of(RANGE_UNIT_PAGES);
            let blocker = if unit_start < zone.mem().start_pfn || unit_end > group_end {
                Some(start)
            } else {
                let parts = self.range_parts(unit_start, unit_end).expect("units inside the zone's arenas");
                match self.isolate_and_empty(parts) {
                    Ok(()) => {
                        self.take_contig(parts, (start, end));
                        return Some(start);
                    }
                    Err(
                        RangeError::NotOnline { pfn }
                        | RangeError::ReservedFrame { pfn }
                        | RangeError::Unmovable { pfn }
                        | RangeError::NoMigrationClient { pfn },
                    ) => Some(pfn),
                    Err(_) => None,
                }
            };
            // Past the frame that stopped this candidate, or to the next one.
            let next = blocker.map_or(start, |pfn| pfn.max(start)) + 1;
            start = next.next_multiple_of(align_pages);
        }
        None
    }

    /// Hands out `[start, end)` of the emptied, isolated units `units` as allocated
    /// unmovable blocks, and frees the rest of the units as MOVABLE memory, part by part
    /// (arena boundaries are max-order aligned: no block crosses one).
    fn take_contig(&self, units: RangeParts<'_, P>, (start, end): (Pfn, Pfn)) {
        for (zone, unit_start, unit_end) in units.iter() {
            let (run_start, run_end) = (start.clamp(unit_start, unit_end), end.clamp(unit_start, unit_end));
            let mut locked = zone.buddy(&self.platform).lock();
            assert_eq!(locked.first_unisolated(unit_start, unit_end), None, "range emptied under the range lock");
            locked.take_isolated_range(unit_start, unit_end);
            for unit in (unit_start..unit_end).step_by(RANGE_UNIT_PAGES as usize) {
                locked.mem.set_pageblock_type(unit, MigrateType::Movable);
            }
            for (pfn, order) in tiling_blocks(run_start, run_end) {
                // Unmovable: compaction and range operations leave the run where it is.
                zone.mem().frame(pfn).hand_out(
                    &[FrameState::Interior],
                    FrameInfo::new(FrameState::AllocHead, order, MigrateType::Unmovable),
                );
            }
            for (pfn, order) in tiling_blocks(unit_start, run_start).chain(tiling_blocks(run_end, unit_end)) {
                locked.free_one(pfn, order, MigrateType::Movable);
            }
            locked.area.counters.alloc_zone_pages += run_end - run_start;
        }
    }

    /// The zone holding `pfn` of a run whose first frame is in zone `first`.
    fn run_zone(&self, first: u16, pfn: Pfn) -> &Zone<P> {
        let zone = &self.zones[first as usize];
        if zone.mem().contains(pfn) {
            return zone;
        }
        self.zone_of_pfn(pfn).expect("a run lies in its zone's arenas")
    }

    /// The blocks a run is held as (the largest aligned blocks that tile it), each then
    /// freed, split or kept on its own; the run is given up.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let run = allocator.alloc_contig(1536, 512, AllocRequest::KERNEL).unwrap();
    /// let blocks: Vec<_> = allocator.contig_blocks(run).collect();
    /// assert!(blocks.iter().map(|block| block.pages()).sum::<u64>() == 1536);
    /// allocator.free_bulk(blocks).unwrap(); // each block frees on its own
    /// ```
    pub fn contig_blocks(&self, run: ContigRun) -> impl Iterator<Item = crate::block::Block> + '_ {
        let (first_zone, allocator_id) = (run.zone_index, run.allocator_id);
        debug_assert_eq!(allocator_id, self.id);
        tiling_blocks(run.pfn, run.pfn + run.pages).map(move |(pfn, order)| {
            let zone = self.run_zone(first_zone, pfn);
            let head = zone.mem().frame(pfn).info();
            debug_assert!(head.is_alloc_head_of_order(order));
            crate::block::Block::new(pfn, zone.state().index, allocator_id, head)
        })
    }

    /// Frees a run from [`Self::alloc_contig`]. Every block of it is checked before any is
    /// freed: a run of another allocator, or one with a block freed or split since, frees
    /// nothing and names that block.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let run = allocator.alloc_contig(1500, 1, AllocRequest::KERNEL).unwrap();
    /// allocator.free_contig(run).unwrap();
    /// allocator.check_invariants().unwrap();
    /// ```
    pub fn free_contig(&self, run: ContigRun) -> Result<(), FreeError> {
        if run.allocator_id != self.id {
            return Err(FreeError::ForeignBlock { pfn: run.pfn });
        }
        for (pfn, order) in tiling_blocks(run.pfn, run.pfn + run.pages) {
            let info = self.run_zone(run.zone_index, pfn).mem().frame(pfn).info();
            if !info.is_alloc_head_of_order(order) {
                return Err(match info.state() {
                    FrameState::AllocHead => {
                        FreeError::WrongOrder { pfn, allocated_order: info.order(), freed_order: order }
                    }
                    FrameState::FreeHead | FrameState::PcpHead => FreeError::DoubleFree { pfn },
                    _ => FreeError::NotAllocated { pfn },
                });
            }
        }
        for (pfn, order) in tiling_blocks(run.pfn, run.pfn + run.pages) {
            // SAFETY: the run owns each of its blocks, just seen allocated at its order, and
            // is consumed here, so nothing uses them after.
            unsafe { self.free_pfn(pfn, order) }?;
        }
        Ok(())
    }
}
