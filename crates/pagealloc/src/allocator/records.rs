//! The frames of records given to `add_memory_in` with their address: where they lie in a
//! zone's span, they must not be free memory (the allocator would hand them out over the
//! records), and those in holes become present reserved memory, so that no later add of
//! the hole hands them out (mirrors memmap taken from memory already present: reserved,
//! counted by adjust_present_page_count(), never freed to the buddy).

use core::ops::Range;

use super::PageAllocator;
use crate::error::RangeError;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::types::{Pfn, MAX_ORDER};
use crate::zone_mem::ZoneMem;

impl<P: Platform> PageAllocator<P> {
    /// Refuses records whose frames include free memory of a zone: a block on a free
    /// list or a pageset, or one being freed. Allocated memory (the caller's, taken from
    /// the allocator for the records), reservations and holes are accepted. Range lock held.
    pub(super) fn check_records_not_free(&self, frames: &Range<Pfn>) -> Result<(), RangeError> {
        for zone in self.zones.iter() {
            let Some((start, end)) = overlap(zone.mem(), frames) else { continue };
            let locked = zone.buddy(&self.platform).lock();
            if let Some(pfn) = first_free(locked.mem, start, end) {
                return Err(RangeError::MetadataInFreeMemory { pfn });
            }
        }
        Ok(())
    }

    /// Turns the hole frames among the records' frames into reserved memory, counted
    /// present. Range lock held, so no hole changes meanwhile.
    pub(super) fn reserve_record_holes(&self, frames: Range<Pfn>) {
        for zone in self.zones.iter() {
            let Some((start, end)) = overlap(zone.mem(), &frames) else { continue };
            let locked = zone.buddy(&self.platform).lock();
            let mut pages = 0;
            for pfn in start..end {
                let frame = locked.mem.frame(pfn);
                if frame.info().state() == FrameState::Hole {
                    frame.change(&[FrameState::Hole], FrameInfo::RESERVED);
                    pages += 1;
                }
            }
            drop(locked);
            zone.state().add_present_pages(pages);
        }
    }
}

/// The part of `frames` inside the zone's span, if any.
fn overlap(mem: &ZoneMem, frames: &Range<Pfn>) -> Option<(Pfn, Pfn)> {
    let (start, end) = (frames.start.max(mem.start_pfn), frames.end.min(mem.end_pfn()));
    (start < end).then_some((start, end))
}

/// The first frame of `[start, end)` not known to be allocated, reserved or a hole: in a
/// free or pageset block, or in a block whose free is in flight (its head claimed).
/// Zone lock held.
fn first_free(mem: &ZoneMem, start: Pfn, end: Pfn) -> Option<Pfn> {
    let mut pfn = start;
    while pfn < end {
        let info = mem.frame(pfn).info();
        let block = match info.state() {
            FrameState::Reserved | FrameState::Hole => {
                pfn += 1;
                continue;
            }
            FrameState::Interior => covering_head(mem, pfn),
            _ => Some((pfn, info)),
        };
        match block {
            Some((head, info)) if info.state() == FrameState::AllocHead => pfn = head + (1 << info.order()),
            _ => return Some(pfn),
        }
    }
    None
}

/// The head of the block an interior frame lies in: the nearest aligned head below it
/// whose order reaches it (mirrors the head search of is_free_buddy_page()). `None` when
/// the block's head is claimed by a free in flight.
fn covering_head(mem: &ZoneMem, pfn: Pfn) -> Option<(Pfn, FrameInfo)> {
    (1..=MAX_ORDER).find_map(|order| {
        let head = pfn & !((1u64 << order) - 1);
        if !mem.contains(head) {
            return None;
        }
        let info = mem.frame(head).info();
        let is_head = matches!(info.state(), FrameState::FreeHead | FrameState::AllocHead | FrameState::PcpHead);
        (is_head && info.order() >= order).then_some((head, info))
    })
}
