//! A `GlobalAlloc` for page-granular memory: each layout gets the smallest buddy block that
//! holds it (a 100-byte layout takes a whole 4 KiB page, so this is for a kernel's page
//! allocations and big buffers, not a general heap; put a slab or a small-object allocator
//! in front for those). Pointers are the block's physical address plus the direct map's
//! offset, as a kernel reaches physical memory through its linear mapping
//! (`page_offset_base` on x86_64).

use core::alloc::{GlobalAlloc, Layout};

use crate::allocator::PageAllocator;
use crate::handle::order_for_layout;
use crate::platform::Platform;
use crate::request::AllocRequest;
use crate::types::PAGE_SHIFT;

/// Page-granular `GlobalAlloc` over an allocator that lives for the program's lifetime.
pub struct PageGlobalAlloc<P: Platform + 'static> {
    allocator: &'static PageAllocator<P>,
    /// Virtual address of physical address 0 in the direct map.
    direct_map_offset: usize,
    request: AllocRequest,
}

impl<P: Platform + 'static> core::fmt::Debug for PageGlobalAlloc<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageGlobalAlloc")
            .field("allocator", &self.allocator.id())
            .field("direct_map_offset", &format_args!("{:#x}", self.direct_map_offset))
            .finish()
    }
}

impl<P: Platform + 'static> PageGlobalAlloc<P> {
    /// `request` is what every allocation asks (a kernel heap: [`AllocRequest::KERNEL`]).
    ///
    /// # Safety
    /// Every frame the allocator manages must be mapped, readable and writable, at
    /// `direct_map_offset` plus its physical address, and used by nothing but its owner.
    pub const unsafe fn new(
        allocator: &'static PageAllocator<P>,
        direct_map_offset: usize,
        request: AllocRequest,
    ) -> PageGlobalAlloc<P> {
        PageGlobalAlloc { allocator, direct_map_offset, request }
    }
}

// SAFETY: `alloc` hands out a block no one else holds (the allocator's guarantee), aligned
// to its size, which is at least the layout's size and alignment (order_for_layout), and
// mapped (the contract of `new`); `dealloc` frees exactly that block: the pointer names its
// head and the layout its order. A pointer or layout that does not match (a contract breach
// by the caller) is refused by the free's checks rather than corrupting the allocator.
unsafe impl<P: Platform + 'static> GlobalAlloc for PageGlobalAlloc<P> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(order) = order_for_layout(layout) else { return core::ptr::null_mut() };
        match self.allocator.alloc_pages(order, self.request) {
            Ok(block) => {
                let address = self.direct_map_offset + (block.into_raw().pfn << PAGE_SHIFT) as usize;
                address as *mut u8
            }
            Err(_) => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(order) = order_for_layout(layout) else { return };
        let pfn = ((ptr as usize).wrapping_sub(self.direct_map_offset) >> PAGE_SHIFT) as u64;
        // SAFETY: by GlobalAlloc's contract `ptr` came from `alloc` with this layout, so it
        // names the head of a block of `order` that the caller gives up here.
        let freed = unsafe { self.allocator.free_pfn(pfn, order) };
        debug_assert!(freed.is_ok(), "dealloc of {ptr:p}: {freed:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;
    use crate::types::ZoneType;
    use alloc::boxed::Box;
    use alloc::vec;

    /// A heap buffer standing in for physical memory: frames map into it.
    #[test]
    fn blocks_come_back_as_mapped_aligned_pointers_and_free_by_pointer() {
        const PAGES: u64 = 2048;
        let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, 0x1000..0x1000 + PAGES);
        let allocator: &'static PageAllocator<TestPlatform> =
            Box::leak(Box::new(PageAllocator::build(builder, TestPlatform::new(1)).unwrap()));
        let memory: &'static mut [u8] =
            Box::leak(vec![0u8; ((PAGES + 1024) << PAGE_SHIFT) as usize].into_boxed_slice());
        // Frame 0x1000 at a 4 MiB-aligned address of the buffer, so blocks stay aligned.
        let base = (memory.as_mut_ptr() as usize).next_multiple_of(4 << 20);
        // SAFETY: every managed frame lies inside `memory` at this offset, used only here.
        let heap = unsafe { PageGlobalAlloc::new(allocator, base - (0x1000 << PAGE_SHIFT), AllocRequest::KERNEL) };
        let layouts = [Layout::from_size_align(100, 8).unwrap(), Layout::from_size_align(20_000, 16_384).unwrap()];
        for layout in layouts {
            // SAFETY: a non-zero layout; the pointer is used within it and freed with it.
            unsafe {
                let ptr = heap.alloc(layout);
                assert!(!ptr.is_null() && (ptr as usize).is_multiple_of(layout.align()));
                assert!(
                    (ptr as usize) >= base && (ptr as usize) + layout.size() <= base + (PAGES << PAGE_SHIFT) as usize
                );
                ptr.write_bytes(0xa5, layout.size());
                heap.dealloc(ptr, layout);
            }
        }
        // Too large for any block: null, as GlobalAlloc reports failure.
        // SAFETY: a non-zero layout; a null result is not used.
        assert!(unsafe { heap.alloc(Layout::from_size_align(64 << 20, 4096).unwrap()) }.is_null());
        allocator.pagesets().drain_all();
        assert_eq!(allocator.counters().buddy_free_pages(), allocator.counters().managed_pages());
    }
}
