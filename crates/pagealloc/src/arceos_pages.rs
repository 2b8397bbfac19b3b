//! ArceOS's page-allocator traits (`ax_allocator::BaseAllocator` and `PageAllocator`,
//! feature `arceos`) over a [`PageAllocator`]: positions are physical byte addresses, a
//! run of any page count and byte alignment is an exact run (split, the rest given back),
//! and a free is checked page by page.
//!
//! ArceOS hands its allocator the first region with `init` and the others with
//! `add_memory` before allocating. The regions are gathered and the allocator is built as
//! a memory map ([`AllocatorBuilder::memory_map`]: zones by address, the gaps as holes) on
//! the first allocation; `add_memory` after that takes whole pageblocks, of those gaps or
//! past a zone's end, which the zone of their addresses grows to take ([`crate::Hotplug::add_memory`]; the feature implies `memory-growth`), and
//! refuses anything else (`InvalidParam`). Runs
//! beyond MAX_ORDER, or aligned beyond it (1 GiB pages), are contiguous runs
//! ([`PageAllocator::alloc_contig`]) split into pages.

//!
//! ```
//! use pagealloc::arceos_pages::{ArceosPageAllocator, ArceosPages, BaseAllocator};
//! use pagealloc::platform::TestPlatform;
//! use pagealloc::AllocRequest;
//!
//! let mut pages = ArceosPages::new(TestPlatform::new(1), AllocRequest::KERNEL);
//! pages.init(0x8000_0000, 64 << 20);
//! pages.add_memory(0x9000_0000, 64 << 20).unwrap();
//! let run = pages.alloc_pages(5, 1 << 16).unwrap(); // 5 pages, 64 KiB aligned
//! assert_eq!(run % (1 << 16), 0);
//! assert_eq!(pages.used_pages(), 5);
//! pages.dealloc_pages(run, 5);
//! assert_eq!((pages.used_pages(), pages.rejected_frees), (0, 0));
//! ```

use alloc::vec::Vec;

use ax_allocator::{AllocError, AllocResult};
/// ArceOS's traits, re-exported: the page trait under a name of its own, beside this
/// crate's [`PageAllocator`].
pub use ax_allocator::{BaseAllocator, PageAllocator as ArceosPageAllocator};

use crate::allocator::PageAllocator;
use crate::builder::{zone_type_of_pfn, AllocatorBuilder, MemoryRegion};
use crate::platform::Platform;
use crate::request::AllocRequest;
use crate::types::{PhysAddr, MAX_ORDER, PAGE_SHIFT};

const PAGE_BYTES: usize = 1 << PAGE_SHIFT;

/// The adapter: regions until the first allocation, the allocator after.
pub struct ArceosPages<P: Platform> {
    platform: Option<P>,
    /// Page ranges (pfns) given by `init` and `add_memory`.
    regions: Vec<core::ops::Range<u64>>,
    allocator: Option<PageAllocator<P>>,
    request: AllocRequest,
    used_pages: usize,
    /// Frees refused by the checks (double, foreign or misaligned frees); the trait's
    /// `dealloc_pages` cannot return an error, so they are counted here.
    pub rejected_frees: usize,
}

impl<P: Platform> core::fmt::Debug for ArceosPages<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ArceosPages")
            .field("regions", &self.regions)
            .field("built", &self.allocator.is_some())
            .field("used_pages", &self.used_pages)
            .field("rejected_frees", &self.rejected_frees)
            .finish()
    }
}

impl<P: Platform> ArceosPages<P> {
    /// An adapter allocating with `request` (ArceOS asks without GFP flags: its pages are
    /// kernel pages, `AllocRequest::KERNEL`).
    pub fn new(platform: P, request: AllocRequest) -> Self {
        ArceosPages {
            platform: Some(platform),
            regions: Vec::new(),
            allocator: None,
            request,
            used_pages: 0,
            rejected_frees: 0,
        }
    }

    /// The allocator, built on first use over the regions given so far.
    pub fn allocator(&mut self) -> AllocResult<&PageAllocator<P>> {
        if self.allocator.is_none() {
            let platform = self.platform.take().ok_or(AllocError::NoMemory)?;
            let map: Vec<MemoryRegion> = self
                .regions
                .iter()
                .map(|pfns| MemoryRegion::new(PhysAddr::of_pfn(pfns.start), PhysAddr::of_pfn(pfns.end)))
                .collect();
            let builder = AllocatorBuilder::new().node(platform.nr_cpus() as u32).memory_map(&map);
            self.allocator = Some(PageAllocator::build(builder, platform).map_err(|_| AllocError::InvalidParam)?);
        }
        self.allocator.as_ref().ok_or(AllocError::NoMemory)
    }

    fn add_region(&mut self, start: usize, size: usize) -> AllocResult {
        if !start.is_multiple_of(PAGE_BYTES) || !size.is_multiple_of(PAGE_BYTES) || size == 0 {
            return Err(AllocError::InvalidParam);
        }
        let pfns = (start >> PAGE_SHIFT) as u64..((start + size) >> PAGE_SHIFT) as u64;
        if let Some(allocator) = &self.allocator {
            // Built: whole pageblocks of a gap between the regions, or past the zone's end.
            return match allocator.hotplug().add_memory(pfns.clone(), zone_type_of_pfn(pfns.start)) {
                Ok(_) => Ok(()),
                Err(crate::RangeError::NotOffline { .. }) => Err(AllocError::MemoryOverlap),
                Err(_) => Err(AllocError::InvalidParam),
            };
        }
        if self.regions.iter().any(|region| region.start < pfns.end && pfns.start < region.end) {
            return Err(AllocError::MemoryOverlap);
        }
        self.regions.push(pfns);
        Ok(())
    }
}

impl<P: Platform> BaseAllocator for ArceosPages<P> {
    fn init(&mut self, start: usize, size: usize) {
        // The trait gives init no way to fail; a bad first region shows at allocation.
        let _ = self.add_region(start, size);
    }

    fn add_memory(&mut self, start: usize, size: usize) -> AllocResult {
        self.add_region(start, size)
    }
}

impl<P: Platform> ax_allocator::PageAllocator for ArceosPages<P> {
    const PAGE_SIZE: usize = PAGE_BYTES;

    /// `num_pages` pages aligned to `align` bytes: the block of the larger of the run's and
    /// the alignment's order, split, its pages beyond the run given back; beyond MAX_ORDER,
    /// a contiguous run split into pages.
    fn alloc_pages(&mut self, num_pages: usize, align: usize) -> AllocResult<usize> {
        if num_pages == 0 || !align.is_power_of_two() {
            return Err(AllocError::InvalidParam);
        }
        let align_order = (align.max(PAGE_BYTES) >> PAGE_SHIFT).trailing_zeros();
        let request = self.request;
        if align_order > u32::from(MAX_ORDER) || num_pages > 1 << MAX_ORDER {
            let allocator = self.allocator()?;
            let run =
                allocator.alloc_contig(num_pages as u64, 1 << align_order, request).map_err(|error| match error {
                    crate::AllocError::ContigUnavailable { .. } => AllocError::NoMemory,
                    _ => AllocError::InvalidParam,
                })?;
            let address = (run.pfn() << PAGE_SHIFT) as usize;
            for block in allocator.contig_blocks(run) {
                // The run is freed by address, page by page (dealloc_pages).
                for page in allocator.split(block).expect("a block of a run just taken splits") {
                    page.into_raw();
                }
            }
            self.used_pages += num_pages;
            return Ok(address);
        }
        let allocator = self.allocator()?;
        let run =
            allocator.alloc_pages_exact_aligned(num_pages as u64, align_order as u8, request).map_err(|error| {
                match error {
                    crate::AllocError::RunTooLarge { .. } | crate::AllocError::EmptyRun => AllocError::InvalidParam,
                    _ => AllocError::NoMemory,
                }
            })?;
        let mut address = None;
        // The run's handles go: it is freed by address (dealloc_pages).
        for page in run {
            address.get_or_insert(page.phys_addr().0 as usize);
            page.into_raw();
        }
        let address = address.expect("a run of at least one page");
        self.used_pages += num_pages;
        Ok(address)
    }

    fn dealloc_pages(&mut self, pos: usize, num_pages: usize) {
        let Some(allocator) = self.allocator.as_ref() else {
            self.rejected_frees += 1;
            return;
        };
        if !pos.is_multiple_of(PAGE_BYTES) {
            self.rejected_frees += 1;
            return;
        }
        // SAFETY: ArceOS frees what `alloc_pages` gave it, once; a run that is not wholly
        // allocated (a double or foreign free) is refused whole by free_pages_exact's checks.
        match unsafe { allocator.free_pages_exact((pos >> PAGE_SHIFT) as u64, num_pages as u64) } {
            Ok(()) => self.used_pages -= num_pages.min(self.used_pages),
            Err(_) => self.rejected_frees += 1,
        }
    }

    /// A run at a given address: pagealloc allocates from its free lists, not by address,
    /// so this is refused (`NoMemory`).
    fn alloc_pages_at(&mut self, _base: usize, _num_pages: usize, _align: usize) -> AllocResult<usize> {
        Err(AllocError::NoMemory)
    }

    fn total_pages(&self) -> usize {
        match &self.allocator {
            Some(allocator) => allocator.counters().managed_pages() as usize,
            None => self.regions.iter().map(|region| (region.end - region.start) as usize).sum(),
        }
    }

    fn used_pages(&self) -> usize {
        self.used_pages
    }

    fn available_pages(&self) -> usize {
        self.total_pages() - self.used_pages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::TestPlatform;

    const BASE: usize = 0x8000_0000;

    #[test]
    fn regions_gathered_then_runs_of_any_size_and_alignment() {
        let mut pages = ArceosPages::new(TestPlatform::new(2), AllocRequest::KERNEL);
        pages.init(BASE, 64 << 20);
        pages.add_memory(BASE + (128 << 20), 64 << 20).unwrap();
        assert!(matches!(pages.add_memory(BASE + (4 << 20), 4096), Err(AllocError::MemoryOverlap)));
        assert_eq!(pages.total_pages(), (128 << 20) / PAGE_BYTES);
        let five = pages.alloc_pages(5, 4096).unwrap();
        let aligned = pages.alloc_pages(3, 1 << 20).unwrap();
        assert_eq!(aligned % (1 << 20), 0, "aligned to 1 MiB");
        assert!(five >= BASE && aligned >= BASE);
        assert_eq!(pages.used_pages(), 8);
        // Built by now: the gap between the regions can be added, and memory past the span
        // in whole pageblocks (the zone grows); a lone page cannot.
        assert!(matches!(pages.add_memory(BASE + (256 << 20), 4096), Err(AllocError::InvalidParam)));
        pages.add_memory(BASE + (64 << 20), 64 << 20).unwrap();
        assert_eq!(pages.total_pages(), (192 << 20) / PAGE_BYTES);
        pages.add_memory(BASE + (256 << 20), 32 << 20).unwrap();
        assert_eq!(pages.total_pages(), (224 << 20) / PAGE_BYTES);
        pages.allocator().unwrap().check_invariants().unwrap();
        assert!(matches!(pages.add_memory(BASE + (64 << 20), 2 << 20), Err(AllocError::MemoryOverlap)));
        pages.dealloc_pages(five + 2 * PAGE_BYTES, 3);
        pages.dealloc_pages(five, 2);
        pages.dealloc_pages(five, 2);
        assert_eq!(pages.rejected_frees, 1, "the double free is refused");
        pages.dealloc_pages(aligned, 3);
        assert_eq!((pages.used_pages(), pages.available_pages()), (0, pages.total_pages()));
        assert!(matches!(pages.alloc_pages(1, 3), Err(AllocError::InvalidParam)));
        // Beyond MAX_ORDER: contiguous runs, freed like any run.
        let big = pages.alloc_pages(5000, 4096).unwrap();
        let giant_aligned = pages.alloc_pages(3, 64 << 20).unwrap();
        assert_eq!(giant_aligned % (64 << 20), 0, "aligned to 64 MiB");
        assert_eq!(pages.used_pages(), 5003);
        pages.dealloc_pages(big + 4000 * PAGE_BYTES, 1000);
        pages.dealloc_pages(big, 4000);
        pages.dealloc_pages(giant_aligned, 3);
        assert_eq!(pages.rejected_frees, 1);
        assert!(matches!(pages.alloc_pages_at(BASE, 1, 4096), Err(AllocError::NoMemory)));
        let allocator = pages.allocator().unwrap();
        allocator.pagesets().drain_all();
        allocator.check_invariants().unwrap();
        assert_eq!(allocator.counters().buddy_free_pages(), allocator.counters().managed_pages());
    }
}
