//! The frame walk: blocks tile the managed frames, free and pageset heads are listed,
//! parked blocks lie within a pageblock, free blocks are merged, and the frames that are no hole are the zone's present pages.

use alloc::string::String;

use super::{PageCensus, ZoneChecker};
use crate::check::InvariantViolation;
use crate::frame::FrameState;
use crate::platform::Platform;
use crate::types::{Pfn, PAGEBLOCK_ORDER};

impl<P: Platform> ZoneChecker<'_, P> {
    /// Blocks tile the managed frames exactly; free blocks are listed and fully merged.
    pub(super) fn check_frames(&self) -> Result<PageCensus, InvariantViolation> {
        let mem = self.zone.mem();
        let mut census = PageCensus::default();
        let mut hole_pages = 0;
        let mut pfn = mem.start_pfn;
        while pfn < mem.end_pfn() {
            let info = mem.frame(pfn).info();
            let pages = 1u64 << info.order();
            match info.state() {
                FrameState::Reserved => {
                    pfn += 1;
                    continue;
                }
                FrameState::Hole => {
                    hole_pages += 1;
                    pfn += 1;
                    continue;
                }
                FrameState::Interior => {
                    return self.fail(Some(pfn), String::from("interior frame outside any block"));
                }
                FrameState::FreeHead => {
                    if !self.is_listed(mem.index(pfn)) {
                        return self.fail(Some(pfn), String::from("free head on no free list"));
                    }
                    self.check_merged(pfn, info.order())?;
                    census.free_pages += pages;
                }
                FrameState::AllocHead => census.allocated_pages += pages,
                FrameState::PcpHead => {
                    if !self.is_listed(mem.index(pfn)) {
                        return self.fail(Some(pfn), String::from("pageset head on no pageset list"));
                    }
                    census.pcp_pages += pages;
                }
                FrameState::Parked => {
                    if info.order() > PAGEBLOCK_ORDER {
                        return self.fail(Some(pfn), String::from("parked block over more than a pageblock"));
                    }
                    census.pcp_pages += pages;
                    census.parked_pages += pages;
                }
            }
            if pfn & (pages - 1) != 0 || pfn + pages > mem.end_pfn() {
                return self.fail(Some(pfn), alloc::format!("{info:?} misaligned or past the zone"));
            }
            for interior in pfn + 1..pfn + pages {
                if mem.frame(interior).info().state() != FrameState::Interior {
                    return self.fail(Some(interior), alloc::format!("inside the {info:?} block at {pfn:#x}"));
                }
            }
            census.managed_pages += pages;
            pfn += pages;
        }
        self.check_present(hole_pages)?;
        Ok(census)
    }

    /// The frames that are no hole (managed and reserved memory) are the present pages.
    fn check_present(&self, hole_pages: u64) -> Result<(), InvariantViolation> {
        let present_frames = self.zone.spanned_pages() - hole_pages;
        let present_pages = self.zone.state().present_pages();
        if present_frames != present_pages {
            return self.fail(None, alloc::format!("{present_frames} frames present, {present_pages} present pages"));
        }
        Ok(())
    }

    /// A free block below pageblock order whose buddy is free at its order failed to
    /// merge. From pageblock order up, free buddies may stay apart: a merge refuses to join
    /// blocks of unmergeable types (a HIGHATOMIC reserve, an isolated range), and a whole
    /// free pageblock re-typed later moves lists without a merge, as Linux moves it
    /// (unreserve_highatomic_pageblock()). Below, a pageblock's free blocks change lists
    /// together, so buddies that could merge always have.
    fn check_merged(&self, pfn: Pfn, order: u8) -> Result<(), InvariantViolation> {
        if order >= PAGEBLOCK_ORDER {
            return Ok(());
        }
        let buddy = pfn ^ (1 << order);
        if !self.zone.mem().contains(buddy) || !self.zone.mem().frame(buddy).info().is_free_head_of_order(order) {
            return Ok(());
        }
        self.fail(Some(pfn), alloc::format!("free buddy at {buddy:#x} of order {order} was not merged"))
    }
}
