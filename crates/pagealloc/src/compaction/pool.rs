//! The free scanner's catch: free blocks taken off the zone's free lists, held as interior
//! frames, and split on demand into the targets blocks move to (mirrors cc->freepages,
//! isolate_freepages_block() and release_free_list()). A fixed array, so a run allocates
//! nothing: isolation stops while a split of the largest block could still overflow it.

use crate::buddy::LockedZone;
use crate::platform::Platform;
use crate::types::{Pfn, NR_ORDERS, PAGEBLOCK_ORDER};

/// Isolated free blocks a run holds at most.
const POOL_CAPACITY: usize = 64;

/// Free blocks isolated for one compaction run.
#[derive(Debug)]
pub(crate) struct FreePool {
    blocks: [(Pfn, u8); POOL_CAPACITY],
    len: usize,
    pages: u64,
    /// The last isolation call stopped at the zone's min watermark (__isolate_free_page()'s
    /// check): the run should not take more now.
    pub(crate) below_floor: bool,
}

impl FreePool {
    pub(crate) const fn new() -> FreePool {
        FreePool { blocks: [(0, 0); POOL_CAPACITY], len: 0, pages: 0, below_floor: false }
    }

    /// Room for one more block and the halves a later split of it pushes.
    fn has_room(&self) -> bool {
        self.len + NR_ORDERS < POOL_CAPACITY
    }

    fn push(&mut self, pfn: Pfn, order: u8) {
        assert!(self.len < POOL_CAPACITY, "compaction free pool overflow");
        self.blocks[self.len] = (pfn, order);
        self.len += 1;
        self.pages += 1 << order;
    }

    /// Holds a block of `order` or larger?
    pub(crate) fn has_block_of(&self, order: u8) -> bool {
        self.blocks[..self.len].iter().any(|&(_, held)| held >= order)
    }

    /// The free scanner on one pageblock `[start, end)`, with the zone lock held: takes its
    /// free blocks off the free lists until `wanted_pages` are held, one of them of at least
    /// `order`, or the pool is full, or taking the next free block would leave the zone at
    /// or below `floor_pages` (its min watermark) plus that block, high-order atomic
    /// reserves not counted (the zone_watermark_ok() test of __isolate_free_page()). The
    /// exact count under the lock stands for the published one Linux reads.
    /// Returns (pages walked, pages isolated, whether the walk reached the block's end). A
    /// pageblock that is one free block is left alone: it is what compaction makes.
    pub(crate) fn isolate_pageblock<P: Platform>(
        &mut self,
        zone: &mut LockedZone<'_, P>,
        (start, end): (Pfn, Pfn),
        (wanted_pages, order): (u64, u8),
        floor_pages: u64,
    ) -> (u64, u64, bool) {
        // The type was read before the lock: a range operation may have isolated the
        // pageblock since, and its free blocks are the range's alone.
        self.below_floor = false;
        if zone.mem.pageblock_type(start) == crate::types::MigrateType::Isolate {
            return (0, 0, true);
        }
        let mut pfn = start;
        let mut isolated_pages = 0;
        // The stop test reads only the pool, which changes only when a block is isolated:
        // tested once after each isolation, it answers as it would at every frame up to the
        // next free head.
        while pfn < end {
            if (self.pages >= wanted_pages && self.has_block_of(order)) || !self.has_room() {
                return (pfn - start, isolated_pages, false);
            }
            let Some(head) = zone.mem.next_free_head(pfn, end) else { break };
            let info = zone.mem.frame(head).info();
            let block_pages = 1u64 << info.order();
            if info.order() >= PAGEBLOCK_ORDER {
                return (end - start, isolated_pages, true);
            }
            if zone.area.free_pages.saturating_sub(zone.area.free_highatomic_pages) <= floor_pages + block_pages {
                self.below_floor = true;
                return (head - start, isolated_pages, false);
            }
            zone.del_free(head, info.order(), info.migratetype());
            self.push(head, info.order());
            isolated_pages += block_pages;
            pfn = head + block_pages;
        }
        (end - start, isolated_pages, true)
    }

    /// Takes a block of exactly `order`, splitting the smallest held block that fits; the
    /// upper halves stay in the pool. The head comes back interior (mirrors compaction_alloc()).
    pub(crate) fn take(&mut self, order: u8) -> Option<Pfn> {
        let slot =
            (0..self.len).filter(|&slot| self.blocks[slot].1 >= order).min_by_key(|&slot| self.blocks[slot].1)?;
        let (pfn, mut held_order) = self.blocks[slot];
        self.len -= 1;
        self.blocks[slot] = self.blocks[self.len];
        self.pages -= 1 << held_order;
        while held_order > order {
            held_order -= 1;
            self.push(pfn + (1 << held_order), held_order);
        }
        Some(pfn)
    }

    /// Returns a target the client refused; its head is interior again.
    pub(crate) fn put_back(&mut self, pfn: Pfn, order: u8) {
        self.push(pfn, order);
    }

    /// Frees every held block back into the buddy, merging (mirrors release_free_list()).
    pub(crate) fn release<P: Platform>(&mut self, zone: &mut LockedZone<'_, P>) {
        // Emptied before the frees: a panic among them must not free them again on unwind.
        let len = core::mem::take(&mut self.len);
        self.pages = 0;
        for &(pfn, order) in &self.blocks[..len] {
            zone.free_by_pageblock_type(pfn, order);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}
