//! A range of frames over one zone or several contiguous ones. With per-CPU arenas a
//! node's zone is cut into arenas at max-order boundaries (`builder::arenas`), each a zone
//! of its own, so a range of the node's memory (a 1 GiB run, a memory block taken offline)
//! may cross from one arena into the next. Range operations take it part by part: every
//! part isolated and emptied under the range lock, then each taken; a failure undoes every
//! part's isolation (as Linux's start_isolate_page_range() and undo_isolate_page_range()
//! walk a range's pageblocks within one zone).

use super::PageAllocator;
use crate::buddy::RANGE_UNIT_PAGES;
use crate::error::RangeError;
use crate::platform::Platform;
use crate::types::Pfn;
use crate::zone::Zone;

/// `[start, end)`, whole pageblocks, over contiguous zones that are parts of one zone of
/// the description: arenas of one node and zone type.
pub(super) struct RangeParts<'a, P: Platform> {
    allocator: &'a PageAllocator<P>,
    pub start: Pfn,
    pub end: Pfn,
}

impl<P: Platform> Clone for RangeParts<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Platform> Copy for RangeParts<'_, P> {}

impl<'a, P: Platform> RangeParts<'a, P> {
    /// Each zone's part, in frame order.
    pub(super) fn iter(self) -> impl Iterator<Item = (&'a Zone<P>, Pfn, Pfn)> {
        let mut pfn = self.start;
        core::iter::from_fn(move || {
            if pfn >= self.end {
                return None;
            }
            let zone = self.allocator.zone_of_pfn(pfn).expect("a validated range lies in zones");
            debug_assert!(pfn == self.start || pfn == zone.mem().start_pfn, "parts meet at zone boundaries");
            let part = (zone, pfn, zone.mem().end_pfn().min(self.end));
            pfn = part.2;
            Some(part)
        })
    }

    pub(super) fn platform(self) -> &'a P {
        &self.allocator.platform
    }
}

impl<P: Platform> PageAllocator<P> {
    /// `[start, end)` as parts of contiguous zones of one node and zone type; the first
    /// frame past them if it runs beyond (`OutsideZone`).
    pub(super) fn range_parts(&self, start: Pfn, end: Pfn) -> Result<RangeParts<'_, P>, RangeError> {
        if start >= end || !start.is_multiple_of(RANGE_UNIT_PAGES) || !end.is_multiple_of(RANGE_UNIT_PAGES) {
            return Err(RangeError::Misaligned { start, end });
        }
        let first = self.zone_of_pfn(start).ok_or(RangeError::OutsideZone { pfn: start })?;
        let group_end = self.span_group_end(first);
        if end > group_end {
            return Err(RangeError::OutsideZone { pfn: group_end });
        }
        Ok(RangeParts { allocator: self, start, end })
    }

    /// Where the contiguous zones from `zone` on that make one zone of the description end.
    pub(super) fn span_group_end(&self, zone: &Zone<P>) -> Pfn {
        let mut last = zone;
        while let Some(next) = self.next_in_span_group(last) {
            last = next;
        }
        last.mem().end_pfn()
    }

    /// The zone starting where `zone` ends, if it is a part of the same zone of the
    /// description (another arena of its node and type).
    fn next_in_span_group(&self, zone: &Zone<P>) -> Option<&Zone<P>> {
        let next = self.zone_of_pfn(zone.mem().end_pfn())?;
        let home = |zone: &Zone<P>| self.nodes[zone.state().node as usize].home;
        let same = next.state().zone_type == zone.state().zone_type && home(next) == home(zone);
        (same && next.mem().start_pfn == zone.mem().end_pfn()).then_some(next)
    }
}
