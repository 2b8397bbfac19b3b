//! Splitting an allocated block into its order-0 pages, each then freed on its own (mirrors
//! split_page()): the head keeps its generation at order 0, so the block's old handle is
//! refused from then on ([`FreeError::WrongOrder`]), and every other page becomes an
//! allocated order-0 head.

use super::PageAllocator;
use crate::block::Block;
use crate::error::FreeError;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::types::Pfn;
use crate::zone::Zone;

/// The order-0 blocks of a split block, in address order. Blocks not taken are leaked, as a
/// dropped [`Block`] is.
#[must_use = "blocks not taken from the iterator are leaked"]
#[derive(Debug)]
pub struct SplitBlocks<'a, P: Platform> {
    zone: &'a Zone<P>,
    allocator_id: u32,
    next: Pfn,
    end: Pfn,
}

impl<P: Platform> Iterator for SplitBlocks<'_, P> {
    type Item = Block;

    fn next(&mut self) -> Option<Block> {
        if self.next == self.end {
            return None;
        }
        let pfn = self.next;
        self.next += 1;
        let head = self.zone.mem().frame(pfn).info();
        debug_assert!(head.is_alloc_head_of_order(0), "split page {pfn:#x} is {head:?}");
        Some(Block::new(pfn, self.zone.state().index, self.allocator_id, head))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.end - self.next) as usize;
        (left, Some(left))
    }
}

impl<P: Platform> ExactSizeIterator for SplitBlocks<'_, P> {}

impl<'a, P: Platform> SplitBlocks<'a, P> {
    /// The blocks from the `at`-th on, leaving the first `at` here (as `Vec::split_off`).
    pub fn split_off(&mut self, at: u64) -> SplitBlocks<'a, P> {
        let cut = self.end.min(self.next.saturating_add(at));
        let tail = SplitBlocks { zone: self.zone, allocator_id: self.allocator_id, next: cut, end: self.end };
        self.end = cut;
        tail
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Splits `block` into 2^order order-0 blocks of the same migratetype. The checks are a
    /// free's: a block of another allocator, a stale copy, a freed or wrong-order block is
    /// refused with the free's error, and nothing changes.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    /// for page in allocator.split(block).unwrap() {
    ///     allocator.free_pages(page).unwrap(); // 4 order-0 pages, freed one by one
    /// }
    /// ```
    pub fn split(&self, block: Block) -> Result<SplitBlocks<'_, P>, FreeError> {
        let pfn = block.pfn();
        if block.allocator_id() != self.id {
            return Err(FreeError::ForeignBlock { pfn });
        }
        let zone = self.zone_of_pfn(pfn).ok_or(FreeError::OutOfRange { pfn })?;
        if zone.state().index != block.zone_index() {
            return Err(FreeError::WrongZone {
                pfn,
                claimed_zone: block.zone_index(),
                actual_zone: zone.state().index,
            });
        }
        let frame = zone.mem().frame(pfn);
        let info = frame.info();
        let order = block.order();
        // The claim: only the owner of this exact block turns its head to order 0.
        if !info.matches_allocated(block.expected_head()) || frame.transition(info, info.with_order(0)).is_err() {
            return Err(Self::split_refusal(frame.info(), pfn, order, block.generation()));
        }
        let page = FrameInfo::new(FrameState::AllocHead, 0, info.migratetype());
        for tail in pfn + 1..pfn + (1 << order) {
            zone.mem().frame(tail).hand_out(&[FrameState::Interior], page);
        }
        Ok(SplitBlocks { zone, allocator_id: self.id, next: pfn, end: pfn + (1 << order) })
    }

    /// Why a split's claim failed, named as a free would name it.
    fn split_refusal(info: FrameInfo, pfn: Pfn, order: u8, generation: u32) -> FreeError {
        match info.state() {
            FrameState::AllocHead if info.generation() != generation => {
                FreeError::StaleBlock { pfn, block_generation: generation, frame_generation: info.generation() }
            }
            FrameState::AllocHead => FreeError::WrongOrder { pfn, allocated_order: info.order(), freed_order: order },
            FrameState::FreeHead | FrameState::PcpHead | FrameState::Parked => FreeError::DoubleFree { pfn },
            FrameState::Interior => FreeError::NotAllocated { pfn },
            FrameState::Reserved | FrameState::Hole => FreeError::NotManaged { pfn },
        }
    }
}
