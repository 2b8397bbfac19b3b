//! A free that parks its block in its pageblock (beyond Linux, `FragBeyondLinux::parked_frees`;
//! LLFree's free, which sets a bit and counts its 2 MiB area, is the model). The free
//! touches the head's state word and its pageblock's counts, nothing else: no links, no
//! lock. The park that leaves its pageblock holding nothing but free and parked pages takes
//! the zone lock and gives them to the buddy, where they merge whole; a block of pageblock
//! order stays parked, for a pageblock-order take to hand out whole.

use core::sync::atomic::{AtomicBool, Ordering::SeqCst};

use super::Zone;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::{Platform, SharedLine};
use crate::types::{MigrateType, Pfn, PAGEBLOCK_ORDER};

impl<P: Platform> Zone<P> {
    /// Parks the block of `order` at `pfn`, which this caller has claimed (its head
    /// interior).
    #[inline]
    pub(crate) fn park(&self, platform: &P, pfn: Pfn, order: u8) {
        debug_assert!(order <= PAGEBLOCK_ORDER, "a block over pageblocks parks nowhere");
        debug_assert!(pfn & ((1 << order) - 1) == 0 && self.mem().contains(pfn), "parking {pfn:#x} order {order}");
        let mem = self.mem();
        let pages = 1u64 << order;
        let slot = mem.pageblock_index(pfn);
        // What the free touches, for a platform that charges it: the claimed word and the
        // pageblock's counts, each an atomic.
        platform.atomic_shared(SharedLine::FrameWord { zone: mem.zone_index, frame: mem.index(pfn) });
        platform.atomic_shared(SharedLine::PageblockCounts { zone: mem.zone_index, pageblock: slot as u32 });
        mem.frame(pfn)
            .change(&[FrameState::Interior], FrameInfo::new(FrameState::Parked, order, MigrateType::Unmovable));
        let counts = mem.pageblock_free.park(slot, pages);
        // The first parked pages of a pageblock: a collection must look here.
        if counts.parked_pages == pages {
            raise(&mem.parked_hint);
        }
        if order == PAGEBLOCK_ORDER {
            // A whole pageblock stays parked, for a pageblock-order take to hand out as it
            // is (or a collection, when memory is wanted).
            raise(&mem.parked_whole_hint);
        } else if counts.is_whole() {
            self.merge_whole_pageblock(platform, slot);
        } else if counts.parked_pages == pages && counts.free_pages == 0 {
            self.file_pageblock(platform, slot);
        }
    }

    /// The first pages parked in a pageblock with nothing free in the buddy: no bucket
    /// files it, and fullest-first would never look here, where it should look first.
    #[cold]
    #[inline(never)]
    fn file_pageblock(&self, platform: &P, slot: usize) {
        self.buddy(platform).lock().file_parked_pageblock(slot);
    }

    /// The pageblock at `slot` holds nothing but free and parked pages: its parked blocks
    /// go to the buddy, where they merge with the rest into one block.
    #[cold]
    #[inline(never)]
    fn merge_whole_pageblock(&self, platform: &P, slot: usize) {
        self.buddy(platform).lock().collect_parked_pageblock(slot);
    }

    /// Pages parked in the zone's pageblocks now (racy; exact at rest). One load per
    /// pageblock: for statistics, not for a hot path.
    pub fn parked_pages(&self) -> u64 {
        let mem = self.mem();
        if !mem.pageblock_free.is_tracked() {
            return 0;
        }
        (0..mem.pageblock_count()).map(|slot| mem.pageblock_free.parked(slot)).sum()
    }
}

/// Sets a zone's hint, reading it first, so that the common case stores nothing to its
/// shared line.
#[inline]
fn raise(hint: &AtomicBool) {
    if !hint.load(SeqCst) {
        hint.store(true, SeqCst);
    }
}
