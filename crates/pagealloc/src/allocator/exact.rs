//! Runs of pages that need not be a power of two (mirrors alloc_pages_exact(),
//! make_alloc_exact() and free_pages_exact()): the smallest block that holds the run is
//! split, and what lies beyond the run goes back page by page; any run of those pages may
//! later be freed in any number of calls.

use super::split::SplitBlocks;
use super::PageAllocator;
use crate::error::{AllocError, FreeError};
use crate::frame::FrameState;
use crate::platform::Platform;
use crate::request::AllocRequest;
use crate::types::{Pfn, MAX_ORDER};

impl<P: Platform> PageAllocator<P> {
    /// Allocates `pages` contiguous frames as order-0 blocks in address order, from the
    /// smallest block of at least `pages`; the rest of that block is freed at once. The
    /// run starts aligned to that block's order.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let run: Vec<_> = allocator.alloc_pages_exact(5, AllocRequest::KERNEL).unwrap().collect();
    /// assert_eq!(run.len(), 5); // the block's other 3 pages went back
    /// allocator.free_bulk(run).unwrap();
    /// ```
    pub fn alloc_pages_exact(&self, pages: u64, request: AllocRequest) -> Result<SplitBlocks<'_, P>, AllocError> {
        self.alloc_pages_exact_aligned(pages, 0, request)
    }

    /// [`Self::alloc_pages_exact`] with the run aligned to 2^`align_order` pages as well:
    /// the block is the larger of the run's and the alignment's order.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let run: Vec<_> = allocator.alloc_pages_exact_aligned(3, 4, AllocRequest::KERNEL).unwrap().collect();
    /// assert_eq!((run.len(), run[0].pfn() % 16), (3, 0)); // 3 pages at a 64 KiB boundary
    /// allocator.free_bulk(run).unwrap();
    /// ```
    pub fn alloc_pages_exact_aligned(
        &self,
        pages: u64,
        align_order: u8,
        request: AllocRequest,
    ) -> Result<SplitBlocks<'_, P>, AllocError> {
        if pages == 0 {
            return Err(AllocError::EmptyRun);
        }
        let order = match pages.checked_next_power_of_two().map(u64::trailing_zeros) {
            Some(order) if order.max(u32::from(align_order)) <= u32::from(MAX_ORDER) => {
                order.max(u32::from(align_order))
            }
            _ => return Err(AllocError::RunTooLarge { pages }),
        };
        let block = self.alloc_pages(order as u8, request)?;
        let mut run = self.split(block).expect("a block just allocated splits");
        for page in run.split_off(pages) {
            self.free_pages(page).expect("a page just split frees");
        }
        debug_assert_eq!(run.len() as u64, pages);
        Ok(run)
    }

    /// Frees `pages` order-0 pages from `pfn` on, each allocated on its own (by
    /// [`Self::alloc_pages_exact`] or a split): any run of them, in any number of calls.
    /// Every page is checked before any is freed: a run that leaves its zone or holds a
    /// page that is not an allocated order-0 page frees nothing and names that page.
    ///
    /// # Safety
    /// As [`Self::free_pfn`]: the caller owns every page of the run and uses none after.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let run: Vec<_> = allocator.alloc_pages_exact(6, AllocRequest::KERNEL).unwrap().collect();
    /// let first = run[0].pfn();
    /// run.into_iter().for_each(|page| { page.into_raw(); });
    /// // SAFETY: this code owns the six pages and uses none after.
    /// unsafe {
    ///     allocator.free_pages_exact(first + 2, 4).unwrap();
    ///     allocator.free_pages_exact(first, 2).unwrap();
    /// }
    /// ```
    pub unsafe fn free_pages_exact(&self, pfn: Pfn, pages: u64) -> Result<(), FreeError> {
        let zone = self.zone_of_pfn(pfn).ok_or(FreeError::OutOfRange { pfn })?;
        let end = pfn.checked_add(pages).ok_or(FreeError::OutOfRange { pfn })?;
        if pages > 0 && !zone.mem().contains(end - 1) {
            return Err(FreeError::OutOfRange { pfn: end - 1 });
        }
        for page in pfn..end {
            let info = zone.mem().frame(page).info();
            let error = match info.state() {
                FrameState::AllocHead if info.order() == 0 => continue,
                FrameState::AllocHead => {
                    FreeError::WrongOrder { pfn: page, allocated_order: info.order(), freed_order: 0 }
                }
                FrameState::FreeHead | FrameState::PcpHead | FrameState::Parked => FreeError::DoubleFree { pfn: page },
                FrameState::Interior => FreeError::NotAllocated { pfn: page },
                FrameState::Reserved | FrameState::Hole => FreeError::NotManaged { pfn: page },
            };
            return Err(error);
        }
        for page in pfn..end {
            // SAFETY: the caller owns the run; each page was just seen allocated at order 0.
            unsafe { self.free_pfn(page, 0) }?;
        }
        Ok(())
    }
}
