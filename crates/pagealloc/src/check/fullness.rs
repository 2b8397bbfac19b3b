//! The fullest-first tracking against the free lists: every pageblock's free count equals
//! the pages of the free blocks in it, each partly free pageblock is filed in its bucket,
//! each pageblock's parked count equals the pages of the parked blocks in it, and no free
//! block lies below its pageblock's search start.

use alloc::vec;

use super::ZoneChecker;
use crate::check::InvariantViolation;
use crate::frame::FrameState;
use crate::fullness::FullnessBuckets;
use crate::platform::Platform;
use crate::types::{PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};

impl<P: Platform> ZoneChecker<'_, P> {
    pub(super) fn check_fullness(&self) -> Result<(), InvariantViolation> {
        let mem = self.zone.mem();
        let Some(buckets) = self.area.fullness.as_ref() else {
            return if mem.pageblock_free.is_tracked() {
                self.fail(None, alloc::string::String::from("pageblock free counts without buckets"))
            } else {
                Ok(())
            };
        };
        if buckets.slots() != mem.pageblock_count() {
            let (slots, pageblocks) = (buckets.slots(), mem.pageblock_count());
            return self.fail(None, alloc::format!("buckets cover {slots} pageblocks of {pageblocks}"));
        }
        let mut free_pages = vec![0u64; mem.pageblock_count()];
        let mut parked_pages = vec![0u64; mem.pageblock_count()];
        let mut pfn = mem.start_pfn;
        while pfn < mem.end_pfn() {
            let info = mem.frame(pfn).info();
            let block_pages = 1u64 << info.order();
            if info.state() == FrameState::FreeHead {
                let slot = mem.pageblock_index(pfn);
                if info.order() >= PAGEBLOCK_ORDER {
                    for pages in &mut free_pages[slot..slot + (block_pages / PAGEBLOCK_PAGES) as usize] {
                        *pages = PAGEBLOCK_PAGES;
                    }
                } else {
                    free_pages[slot] += block_pages;
                }
                // A take's search starts at the hint: nothing free may lie before it.
                let offset = pfn & (PAGEBLOCK_PAGES - 1);
                if offset < buckets.scan_from(slot) {
                    let hint = buckets.scan_from(slot);
                    return self
                        .fail(Some(pfn), alloc::format!("free block below its pageblock's search start {hint}"));
                }
            }
            if info.state() == FrameState::Parked {
                parked_pages[mem.pageblock_index(pfn)] += block_pages;
            }
            pfn += match info.state() {
                FrameState::FreeHead | FrameState::AllocHead | FrameState::PcpHead | FrameState::Parked => block_pages,
                FrameState::Interior | FrameState::Reserved | FrameState::Hole => 1,
            };
        }
        for (slot, &parked) in parked_pages.iter().enumerate() {
            if mem.pageblock_free.parked(slot) != parked {
                let counted = mem.pageblock_free.parked(slot);
                let start = mem.pageblock_start(slot);
                return self
                    .fail(Some(start), alloc::format!("pageblock holds {parked} parked pages, counted {counted}"));
            }
        }
        for (slot, &pages) in free_pages.iter().enumerate() {
            if mem.pageblock_free.get(slot) != pages {
                let start = mem.pageblock_start(slot);
                let counted = mem.pageblock_free.get(slot);
                return self.fail(Some(start), alloc::format!("pageblock holds {pages} free pages, counted {counted}"));
            }
            // Filed by free and parked pages as of the last change under the lock: parks
            // since then move no bucket, so any parked count up to today's may be the one.
            let parked = parked_pages[slot];
            let class = buckets.class_of(slot);
            if !(0..=parked).any(|filed| class == FullnessBuckets::expected_class(pages + filed)) {
                return self.fail(
                    Some(mem.pageblock_start(slot)),
                    alloc::format!("pageblock with {pages} free and {parked} parked misfiled"),
                );
            }
        }
        Ok(())
    }
}
