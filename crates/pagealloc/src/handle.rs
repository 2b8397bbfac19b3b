//! Convenience calls over `alloc_pages`/`free_pages`: `Layout` requests, bulk calls, and an
//! owning handle that frees on drop.

use core::alloc::Layout;

use crate::allocator::PageAllocator;
use crate::block::Block;
use crate::error::{AllocError, FreeError};
use crate::platform::Platform;
use crate::request::AllocRequest;
use crate::types::{MAX_ORDER, PAGE_SHIFT};

/// Smallest order whose naturally aligned block satisfies `layout` (buddy blocks are aligned
/// to their size, so the alignment only matters when it exceeds the size).
pub fn order_for_layout(layout: Layout) -> Option<u8> {
    let bytes = layout.size().max(layout.align()).max(1) as u64;
    let pages = bytes.div_ceil(1 << PAGE_SHIFT);
    let order = pages.next_power_of_two().trailing_zeros() as u8;
    (order <= MAX_ORDER).then_some(order)
}

/// A block that returns itself to its allocator when dropped. It borrows the allocator, so
/// a handle kept for as long as the system runs needs an allocator that lives as long: a
/// `static` set once at boot (`std::sync::OnceLock` with std; `spin::Once`, spin's `once`
/// feature, in a kernel), or one leaked with `Box::leak` once a heap exists.
///
/// ```
/// use std::sync::OnceLock;
/// use pagealloc::handle::OwnedBlock;
/// use pagealloc::platform::TestPlatform;
/// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
///
/// static ALLOCATOR: OnceLock<PageAllocator<TestPlatform>> = OnceLock::new();
///
/// fn frames() -> &'static PageAllocator<TestPlatform> {
///     ALLOCATOR.get_or_init(|| {
///         let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 14);
///         PageAllocator::build(builder, TestPlatform::new(1)).expect("the boot map is valid")
///     })
/// }
///
/// // A handle that any thread may keep for good.
/// let page: OwnedBlock<'static, TestPlatform> = frames().alloc_owned(0, AllocRequest::KERNEL).unwrap();
/// let kept = std::thread::spawn(move || page.block().pfn()).join().unwrap();
/// assert!(frames().zones()[0].start_pfn() <= kept);
/// ```
#[derive(Debug)]
pub struct OwnedBlock<'a, P: Platform> {
    allocator: &'a PageAllocator<P>,
    block: Option<Block>,
}

impl<P: Platform> OwnedBlock<'_, P> {
    pub fn block(&self) -> &Block {
        self.block.as_ref().expect("present until dropped")
    }

    /// Gives up ownership: the caller frees the block.
    pub fn into_block(mut self) -> Block {
        self.block.take().expect("present until dropped")
    }

    /// Frees the block now, returning what the free said (dropping the handle panics on an
    /// error instead).
    pub fn free(self) -> Result<(), FreeError> {
        let allocator = self.allocator;
        allocator.free_pages(self.into_block())
    }
}

impl<P: Platform> core::ops::Deref for OwnedBlock<'_, P> {
    type Target = Block;
    fn deref(&self) -> &Block {
        self.block()
    }
}

/// # Panics
/// If the free fails, in every build. Only `unsafe` misuse elsewhere (a block rebuilt with
/// `Block::from_raw` and freed, an unsafe `free_pfn`) can make it fail; carrying on
/// silently would leave the caller believing it owned frames that someone else now does.
/// [`OwnedBlock::free`] returns the error instead.
impl<P: Platform> Drop for OwnedBlock<'_, P> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            if let Err(error) = self.allocator.free_pages(block) {
                panic!("an owned block failed to free: {error}");
            }
        }
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Allocates the smallest block that fits `layout`.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// use core::alloc::Layout;
    /// let block = allocator.alloc_layout(Layout::from_size_align(10_000, 4096).unwrap(), AllocRequest::KERNEL).unwrap();
    /// assert_eq!(block.order(), 2); // 16 KiB holds 10,000 bytes
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn alloc_layout(&self, layout: Layout, request: AllocRequest) -> Result<Block, AllocError> {
        let too_large = AllocError::LayoutTooLarge { size_bytes: layout.size(), align_bytes: layout.align() };
        let order = order_for_layout(layout).ok_or(too_large)?;
        self.alloc_pages(order, request)
    }

    /// Allocates a block freed automatically when the handle drops.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// {
    ///     let owned = allocator.alloc_owned(1, AllocRequest::KERNEL).unwrap();
    ///     assert_eq!(owned.block().pages(), 2);
    /// } // freed here
    /// allocator.pagesets().drain_all();
    /// assert_eq!(allocator.counters().buddy_free_pages(), allocator.counters().managed_pages());
    /// ```
    pub fn alloc_owned(&self, order: u8, request: AllocRequest) -> Result<OwnedBlock<'_, P>, AllocError> {
        Ok(OwnedBlock { allocator: self, block: Some(self.alloc_pages(order, request)?) })
    }

    /// Allocates up to `count` blocks into `out` (a `Vec`, or any collection that extends);
    /// returns how many it got, fewer when memory runs short (like alloc_pages_bulk()). A
    /// malformed request is an error, not zero blocks. `out` grows as blocks arrive, so a
    /// huge `count` costs only what is allocated.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let mut blocks = Vec::new();
    /// assert_eq!(allocator.alloc_bulk(0, AllocRequest::KERNEL, 16, &mut blocks).unwrap(), 16);
    /// allocator.free_bulk(blocks).unwrap();
    /// ```
    pub fn alloc_bulk(
        &self,
        order: u8,
        request: AllocRequest,
        count: usize,
        out: &mut impl Extend<Block>,
    ) -> Result<usize, AllocError> {
        // Bounded by `count`, and by memory: each round takes a block or stops.
        for taken in 0..count {
            match self.alloc_pages(order, request) {
                Ok(block) => out.extend(core::iter::once(block)),
                Err(AllocError::OutOfMemory { .. }) => return Ok(taken),
                Err(error) => return Err(error),
            }
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;
    use crate::types::ZoneType;
    use alloc::vec::Vec;

    #[test]
    #[should_panic(expected = "an owned block failed to free")]
    fn an_owned_block_that_fails_to_free_panics_in_every_build() {
        let allocator =
            PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(1)).unwrap();
        let owned = allocator.alloc_owned(0, AllocRequest::KERNEL).unwrap();
        // SAFETY: deliberately broken to test the drop: the handle still owns the block.
        allocator.free_pages(unsafe { Block::from_raw(owned.raw_parts()) }).unwrap();
        drop(owned);
    }

    #[test]
    fn an_owned_block_freed_explicitly_reports_the_error() {
        let allocator =
            PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(1)).unwrap();
        let owned = allocator.alloc_owned(0, AllocRequest::KERNEL).unwrap();
        let pfn = owned.pfn();
        // SAFETY: deliberately broken, as above.
        allocator.free_pages(unsafe { Block::from_raw(owned.raw_parts()) }).unwrap();
        assert_eq!(owned.free(), Err(FreeError::DoubleFree { pfn }));
        assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 0);
    }

    #[test]
    fn layout_orders() {
        assert_eq!(order_for_layout(Layout::from_size_align(1, 1).unwrap()), Some(0));
        assert_eq!(order_for_layout(Layout::from_size_align(4097, 8).unwrap()), Some(1));
        assert_eq!(order_for_layout(Layout::from_size_align(4096, 2 << 20).unwrap()), Some(9));
        assert_eq!(order_for_layout(Layout::from_size_align(8 << 20, 4096).unwrap()), None);
    }

    #[test]
    fn owned_blocks_free_on_drop_and_bulk_calls_round_trip() {
        let allocator =
            PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(1)).unwrap();
        {
            let owned = allocator.alloc_owned(2, AllocRequest::KERNEL).unwrap();
            assert_eq!(owned.pages(), 4);
            assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 4);
        }
        assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 0);
        let layout_block = allocator.alloc_layout(Layout::from_size_align(12_000, 4096).unwrap(), AllocRequest::KERNEL);
        assert_eq!(layout_block.as_ref().unwrap().order(), 2);
        let mut blocks = Vec::new();
        assert_eq!(allocator.alloc_bulk(0, AllocRequest::USER_MOVABLE, 100, &mut blocks), Ok(100));
        blocks.push(layout_block.unwrap());
        allocator.free_bulk(blocks).unwrap();
        assert_eq!(allocator.check_invariants().unwrap().allocated_pages, 0);
    }
}
