//! The x86_64 crate's frame-allocation traits over a [`PageAllocator`] (feature
//! `x86_64-frames`), so page-table code (`Mapper::map_to`) can take frames from it: 4 KiB
//! frames are order-0 blocks, 2 MiB frames order-9 blocks.

use x86_64::structures::paging::{FrameAllocator, FrameDeallocator, PhysFrame, Size2MiB, Size4KiB};
use x86_64::PhysAddr;

use crate::allocator::PageAllocator;
use crate::platform::Platform;
use crate::request::AllocRequest;
use crate::types::{PAGEBLOCK_ORDER, PAGE_SHIFT};

/// Frames for page tables and mappings, allocated with one request type (page tables are
/// GFP_KERNEL, unmovable).
///
/// A frame this source hands out has no [`crate::Block`] any more, and freeing by frame
/// number is `unsafe` ([`PageAllocator::free_pfn`]), so safe code cannot give it back while
/// the page tables use it: the uniqueness `FrameAllocator` promises holds. Give frames back
/// only through `deallocate_frame` of a source over the same allocator.
///
/// Mapping a page, with the page tables in frames from the allocator. Here "physical
/// memory" is a heap buffer standing for frames 0x100..0x200 (a kernel would use its
/// direct map's offset instead):
/// ```
/// use pagealloc::platform::TestPlatform;
/// use pagealloc::x86_64::structures::paging::{
///     FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, Size4KiB,
/// };
/// use pagealloc::x86_64::VirtAddr;
/// use pagealloc::x86_64_frames::X86FrameSource;
/// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
///
/// #[repr(align(4096))]
/// struct Frame([u8; 4096]);
/// let mut memory: Vec<Frame> = (0..0x100).map(|_| Frame([0; 4096])).collect();
/// // The virtual address at which physical address 0 would be mapped.
/// let offset = memory.as_mut_ptr() as u64 - 0x100 * 4096;
///
/// let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, 0x100..0x200);
/// let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
/// let mut frames = X86FrameSource::new(&allocator, AllocRequest::KERNEL);
/// let top: pagealloc::x86_64::structures::paging::PhysFrame = frames.allocate_frame().unwrap();
/// // SAFETY: the frame is the allocator's, inside `memory`, and used by nothing else.
/// let table = unsafe { &mut *((offset + top.start_address().as_u64()) as *mut PageTable) };
/// table.zero();
/// // SAFETY: every physical frame the tables use lies inside `memory`, at `offset`.
/// let mut mapper = unsafe { OffsetPageTable::new(table, VirtAddr::new(offset)) };
/// let page = Page::<Size4KiB>::containing_address(VirtAddr::new(0x4000_0000));
/// let frame = frames.allocate_frame().unwrap();
/// let flags = PageTableFlags::PRESENT | PageTableFlags::WRITABLE;
/// // SAFETY: the frame is fresh from the allocator; nothing else maps it.
/// unsafe { mapper.map_to(page, frame, flags, &mut frames) }.unwrap().ignore();
/// assert_eq!(mapper.translate_page(page).ok(), Some(frame));
/// // The top table, three intermediate tables and the page: five frames taken.
/// assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 5);
/// ```
#[derive(Debug)]
pub struct X86FrameSource<'a, P: Platform> {
    allocator: &'a PageAllocator<P>,
    request: AllocRequest,
}

impl<'a, P: Platform> X86FrameSource<'a, P> {
    pub fn new(allocator: &'a PageAllocator<P>, request: AllocRequest) -> Self {
        X86FrameSource { allocator, request }
    }
}

// SAFETY: a frame is handed out only by a successful allocation, and the allocator never
// hands out a frame again until it has been freed. Freeing it needs `unsafe` (free_pfn,
// Block::from_raw, deallocate_frame), whose contracts require the caller to own it unused;
// safe code cannot: the frames returned are unique and unused.
unsafe impl<P: Platform> FrameAllocator<Size4KiB> for X86FrameSource<'_, P> {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size4KiB>> {
        let block = self.allocator.alloc_pages(0, self.request).ok()?;
        PhysFrame::from_start_address(PhysAddr::new(block.phys_addr().0)).ok()
    }
}

// SAFETY: as above; order-9 blocks are naturally aligned to 2 MiB.
unsafe impl<P: Platform> FrameAllocator<Size2MiB> for X86FrameSource<'_, P> {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size2MiB>> {
        let block = self.allocator.alloc_pages(PAGEBLOCK_ORDER, self.request).ok()?;
        PhysFrame::from_start_address(PhysAddr::new(block.phys_addr().0)).ok()
    }
}

impl<P: Platform> FrameDeallocator<Size4KiB> for X86FrameSource<'_, P> {
    /// # Safety
    /// As the trait says, the frame is unused; it also came from an `X86FrameSource` over
    /// this allocator (the only way to own one without a [`crate::Block`]).
    ///
    /// # Panics
    /// If the allocator rejects the free (a frame it does not hold as allocated): that
    /// caller broke the contract, and going on would hide it.
    unsafe fn deallocate_frame(&mut self, frame: PhysFrame<Size4KiB>) {
        // SAFETY: this function's contract: the caller owns the frame, unused.
        let result = unsafe { self.allocator.free_pfn(frame.start_address().as_u64() >> PAGE_SHIFT, 0) };
        if let Err(error) = result {
            panic!("deallocate_frame: {error}");
        }
    }
}

impl<P: Platform> FrameDeallocator<Size2MiB> for X86FrameSource<'_, P> {
    /// # Safety
    /// As for 4 KiB frames.
    ///
    /// # Panics
    /// As for 4 KiB frames.
    unsafe fn deallocate_frame(&mut self, frame: PhysFrame<Size2MiB>) {
        let pfn = frame.start_address().as_u64() >> PAGE_SHIFT;
        // SAFETY: this function's contract: the caller owns the frame, unused.
        let result = unsafe { self.allocator.free_pfn(pfn, PAGEBLOCK_ORDER) };
        if let Err(error) = result {
            panic!("deallocate_frame: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;
    use crate::types::ZoneType;

    fn allocator() -> PageAllocator<TestPlatform> {
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 14), TestPlatform::new(1)).unwrap()
    }

    #[test]
    fn frames_round_trip_through_the_x86_64_traits() {
        let allocator = allocator();
        let mut frames = X86FrameSource::new(&allocator, AllocRequest::KERNEL);
        let small: PhysFrame<Size4KiB> = frames.allocate_frame().unwrap();
        let huge: PhysFrame<Size2MiB> = frames.allocate_frame().unwrap();
        assert_eq!(huge.start_address().as_u64() % (2 << 20), 0);
        assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 1 + 512);
        // SAFETY: both frames came from this source and are unused.
        unsafe {
            frames.deallocate_frame(small);
            frames.deallocate_frame(huge);
        }
        allocator.pagesets().drain_all();
        assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 0);
    }

    #[test]
    #[should_panic(expected = "deallocate_frame: pfn")]
    fn a_frame_given_back_twice_panics() {
        let allocator = allocator();
        let mut frames = X86FrameSource::new(&allocator, AllocRequest::KERNEL);
        let small: PhysFrame<Size4KiB> = frames.allocate_frame().unwrap();
        // SAFETY: deliberately broken: the second call gives back a frame already given back.
        unsafe {
            frames.deallocate_frame(small);
            frames.deallocate_frame(small);
        }
    }
}
