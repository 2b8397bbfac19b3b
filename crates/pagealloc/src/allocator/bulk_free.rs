//! Frees of many blocks at once (mirrors free_unref_folios(), without its shared pageset
//! lock hold; each freed block is an `mm_page_free_batched` event). A free's first
//! step loads its head's frame record and claims it; when frees come in random order over
//! much memory, that record is a cache miss, and the claim and the pageset lock that follow
//! are locked instructions, which wait for it. One free at a time, each miss is paid in
//! full. Here the record of the block [`FREE_LOOKAHEAD_BLOCKS`] places on is prefetched
//! before each free, so the misses of a batch overlap. Each block is freed exactly as
//! [`PageAllocator::free_pages`] or [`PageAllocator::free_pfn`] would free it, in the
//! order given.

use super::PageAllocator;
use crate::block::Block;
use crate::error::{BulkFreeError, FreeError};
use crate::events::PageEvent;
use crate::platform::Platform;
use crate::prefetch::prefetch;
use crate::types::Pfn;

/// How far ahead a bulk free prefetches: the fastest distance measured (docs/benchmarks.md,
/// "Freeing in batches").
pub const FREE_LOOKAHEAD_BLOCKS: usize = 8;

/// What a bulk free did so far: blocks freed and refused, and the first refusal.
#[derive(Default)]
struct BulkOutcome {
    freed_blocks: usize,
    failed_blocks: usize,
    first_error: Option<FreeError>,
}

impl BulkOutcome {
    fn note(&mut self, result: Result<(), FreeError>) {
        match result {
            Ok(()) => self.freed_blocks += 1,
            Err(error) => {
                self.failed_blocks += 1;
                self.first_error.get_or_insert(error);
            }
        }
    }

    fn finish(self) -> Result<usize, BulkFreeError> {
        match self.first_error {
            None => Ok(self.freed_blocks),
            Some(first_error) => {
                Err(BulkFreeError { freed_blocks: self.freed_blocks, failed_blocks: self.failed_blocks, first_error })
            }
        }
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Frees every block of `blocks`, in order, prefetching the frame records a few blocks
    /// ahead; returns the number freed. A block that [`Self::free_pages`] would refuse is
    /// refused here too, with the same typed error, and the rest are still freed; the error
    /// names the first refusal and the counts. Allocation-free: the look-ahead is a ring of
    /// [`FREE_LOOKAHEAD_BLOCKS`] blocks on the stack, so the iterator is drawn up to that
    /// many blocks ahead of the frees (an iterator that reads allocator state sees the frees
    /// that far behind; one that panics leaves the blocks it gave in the ring unfreed).
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let mut blocks = Vec::new();
    /// assert_eq!(allocator.alloc_bulk(0, AllocRequest::KERNEL, 16, &mut blocks).unwrap(), 16);
    /// assert_eq!(allocator.free_bulk(blocks), Ok(16));
    /// ```
    pub fn free_bulk(&self, blocks: impl IntoIterator<Item = Block>) -> Result<usize, BulkFreeError> {
        let mut ahead: [Option<Block>; FREE_LOOKAHEAD_BLOCKS] = [const { None }; FREE_LOOKAHEAD_BLOCKS];
        let mut outcome = BulkOutcome::default();
        let (mut taken, mut stream) = (0usize, PrefetchStream::default());
        for block in blocks {
            stream.zone_index = block.zone_index() as usize;
            stream.next(self, block.pfn());
            if let Some(due) = ahead[taken % FREE_LOOKAHEAD_BLOCKS].replace(block) {
                self.free_batched(due, &mut outcome);
            }
            taken += 1;
        }
        // The ring's oldest entry is the next slot to be written.
        for step in 0..FREE_LOOKAHEAD_BLOCKS {
            if let Some(due) = ahead[(taken + step) % FREE_LOOKAHEAD_BLOCKS].take() {
                self.free_batched(due, &mut outcome);
            }
        }
        debug_assert_eq!(outcome.freed_blocks + outcome.failed_blocks, taken);
        outcome.finish()
    }

    /// One block of a bulk free.
    #[inline(always)]
    fn free_batched(&self, block: Block, outcome: &mut BulkOutcome) {
        let (pfn, order) = (block.pfn(), block.order());
        let result = self.free_pages(block);
        self.note_batched(outcome, result, pfn, order);
    }

    /// Counts one free of a bulk free, with its `mm_page_free_batched` event if it freed.
    #[inline(always)]
    fn note_batched(&self, outcome: &mut BulkOutcome, result: Result<(), FreeError>, pfn: Pfn, order: u8) {
        if result.is_ok() {
            self.trace_page(|| PageEvent::FreeBatched { pfn, order });
        }
        outcome.note(result);
    }

    /// [`Self::free_pfn`] for each frame number of `pfns`, in order, all of `order`,
    /// prefetching the frame records a few frees ahead. Returns the number freed; refusals
    /// as in [`Self::free_bulk`].
    ///
    /// # Safety
    /// [`Self::free_pfn`]'s contract, for every frame number of `pfns`.
    pub unsafe fn free_pfns_bulk(&self, pfns: &[Pfn], order: u8) -> Result<usize, BulkFreeError> {
        let mut outcome = BulkOutcome::default();
        let mut stream = PrefetchStream::default();
        for &pfn in pfns.iter().take(FREE_LOOKAHEAD_BLOCKS) {
            stream.next(self, pfn);
        }
        for (at, &pfn) in pfns.iter().enumerate() {
            if let Some(&ahead) = pfns.get(at + FREE_LOOKAHEAD_BLOCKS) {
                stream.next(self, ahead);
            }
            // SAFETY: the caller gives free_pfn's guarantees for every frame of `pfns`.
            let result = unsafe { self.free_pfn(pfn, order) };
            self.note_batched(&mut outcome, result, pfn, order);
        }
        debug_assert_eq!(outcome.freed_blocks + outcome.failed_blocks, pfns.len());
        outcome.finish()
    }
}

/// The prefetches of a bulk free: the zone of the last one (or the block's) is tried first,
/// and a record within a line or so of the last one prefetched is left to the hardware's
/// own prefetcher, which follows a sequential walk without the instructions.
#[derive(Default)]
struct PrefetchStream {
    zone_index: usize,
    last_pfn: Pfn,
}

/// Frames whose records lie this close (12 bytes each) share a cache line or the next.
const NEAR_FRAMES: u64 = 4;

impl PrefetchStream {
    #[inline(always)]
    fn next<P: Platform>(&mut self, allocator: &PageAllocator<P>, pfn: Pfn) {
        if pfn.abs_diff(self.last_pfn) <= NEAR_FRAMES {
            return;
        }
        self.last_pfn = pfn;
        let zones = &allocator.zones;
        let cached = zones.get(self.zone_index).filter(|zone| zone.mem().contains(pfn));
        let zone = cached.or_else(|| {
            let index = zones.iter().position(|zone| zone.mem().contains(pfn))?;
            self.zone_index = index;
            zones.get(index)
        });
        if let Some(zone) = zone {
            prefetch(zone.mem().frame(pfn));
        }
    }
}
