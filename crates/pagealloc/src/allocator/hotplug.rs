//! Memory added, taken offline and brought back at run time, in whole pageblocks of a
//! zone's span (mirrors add_memory(), offline_pages() and online_pages()). Memory added
//! fills holes of a zone's span (hot-pluggable ranges firmware declares at boot), never
//! reserved memory, which is present and stays reserved through every operation, or, with
//! the `memory-growth` feature, grows a span past its end (`grow.rs`). Offline memory stays in the span as holes whose
//! pageblocks are ISOLATE, which is how `online` tells it from a hole never added.
//! Each change re-derives watermarks, lowmem reserves and pageset bounds from the
//! managed pages (`resize`), as Linux does after onlining and offlining, and where each
//! zonelist walk starts: a zone declared empty (a hot-pluggable range) serves memory added
//! to it at once, as Linux's build_all_zonelists() on the first online makes it.

use core::ops::Range;

use super::PageAllocator;
use crate::buddy::LockedZone;
use crate::error::RangeError;
use crate::frame::FrameState;
use crate::platform::Platform;
use crate::types::{MigrateType, Pfn, PAGEBLOCK_PAGES};
use crate::zone::Zone;

impl<P: Platform> PageAllocator<P> {
    /// Frees the holes of `range` into the zone; with `offline_only`, only memory
    /// [`Self::offline`] took. A reserved frame in the range refuses it whole: reserved
    /// memory is present already, as Linux's add_memory() refuses a resource that is.
    pub(super) fn admit(&self, zone: &Zone<P>, range: Range<Pfn>, offline_only: bool) -> Result<u64, RangeError> {
        let mut locked = zone.buddy(&self.platform).lock();
        Self::not_offline(&locked, range.clone(), offline_only)?;
        locked.admit_range(range.start, range.end);
        drop(locked);
        let pages = range.end - range.start;
        zone.state().adjust_online_pages(pages, true);
        self.resize_zones();
        Ok(pages)
    }

    /// Refuses `range` at its first frame that is not a hole (reserved, or online); with
    /// `offline_only`, at its first pageblock [`Self::offline`] did not take.
    pub(super) fn not_offline(
        locked: &LockedZone<'_, P>,
        range: Range<Pfn>,
        offline_only: bool,
    ) -> Result<(), RangeError> {
        if let Some(found) = locked.mem.first_not_hole(range.start, range.end) {
            return Err(not_a_hole(found));
        }
        let mut pageblocks = range.step_by(PAGEBLOCK_PAGES as usize);
        match pageblocks.find(|&block| offline_only && locked.mem.pageblock_type(block) != MigrateType::Isolate) {
            Some(pfn) => Err(RangeError::NotOffline { pfn }),
            None => Ok(()),
        }
    }
}

/// Why a frame found where a hole was needed refuses the range: reserved memory is never
/// added, and online memory is not added again.
pub(super) fn not_a_hole((pfn, state): (Pfn, FrameState)) -> RangeError {
    match state {
        FrameState::Reserved => RangeError::ReservedFrame { pfn },
        _ => RangeError::NotOffline { pfn },
    }
}
