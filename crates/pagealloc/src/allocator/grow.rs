//! Memory added past every zone's span: the zone of the type that starts nearest below the
//! range grows its span up to the range's end, with records for the new frames placed on
//! the heap or in memory the caller gives (mirrors add_memory() with sparse sections:
//! sparse_add_section() makes the new memmap, move_pfn_range_to_zone() widens the zone).
//! Frames between the old end and the range stay holes, which a later `add_memory` can fill.
//! Needs the `memory-growth` feature; without it, [`GrowError::Disabled`].

use core::ops::Range;

use super::PageAllocator;
use crate::builder::zone_type_limit_pfn;
use crate::error::{GrowError, RangeError};
use crate::meta::MetaArena;
use crate::platform::Platform;
use crate::types::{Pfn, ZoneType};
use crate::zone::Zone;

impl<P: Platform> PageAllocator<P> {
    /// The zone `range` belongs to, grown to take it if it lies past the span.
    pub(super) fn zone_for_added(
        &self,
        range: &Range<Pfn>,
        zone_type: ZoneType,
        mut arena: Option<&mut MetaArena>,
    ) -> Result<&Zone<P>, RangeError> {
        match self.range_zone(range.start, range.end) {
            Ok(zone) if zone.state().zone_type != zone_type => Err(RangeError::OutsideZone { pfn: range.start }),
            Ok(zone) => Ok(zone),
            Err(RangeError::OutsideZone { .. }) => {
                let zone = self.zone_to_grow(range, zone_type)?;
                // The part inside the span must be holes, or the growth would outlive the
                // add it was for (the range lock keeps holes holes meanwhile).
                let old_end = zone.mem().end_pfn();
                if let Some(found) = zone.mem().first_not_hole(range.start, old_end) {
                    return Err(super::hotplug::not_a_hole(found));
                }
                let refuse = |reason| RangeError::Grow { pfn: range.end, reason };
                let growth = zone.mem().prepare_growth(range.end, arena.as_deref_mut()).map_err(refuse)?;
                let mut locked = zone.buddy(&self.platform).lock();
                if let Some(buckets) = locked.area.fullness.as_ref() {
                    // Bump or heap room for two words and the slots, once per zone.
                    buckets.reserve(arena).map_err(|full| refuse(GrowError::Metadata(full)))?;
                }
                if let Some(slots) = zone.mem().publish_growth(growth) {
                    let buckets = locked.area.fullness.as_mut().expect("tracked counts come with buckets");
                    buckets.grow(slots).expect("growths were counted when the growth was prepared");
                }
                Ok(zone)
            }
            Err(other) => Err(other),
        }
    }

    /// The zone of `zone_type` starting nearest below `range`, if its span can grow to the
    /// range's end: below the type's limit, with no other zone's span in the way.
    pub(super) fn zone_to_grow(&self, range: &Range<Pfn>, zone_type: ZoneType) -> Result<&Zone<P>, RangeError> {
        let refuse = |reason| RangeError::Grow { pfn: range.start, reason };
        if crate::growable::MAX_GROWTHS == 0 {
            return Err(refuse(GrowError::Disabled));
        }
        let limit_pfn = zone_type_limit_pfn(zone_type);
        if range.end > limit_pfn {
            return Err(refuse(GrowError::AboveLimit { limit_pfn }));
        }
        let zone = self
            .zones
            .iter()
            .filter(|zone| zone.state().zone_type == zone_type && zone.mem().start_pfn <= range.start)
            .max_by_key(|zone| zone.mem().start_pfn)
            .ok_or(refuse(GrowError::NoZone))?;
        let (from, to) = (zone.mem().end_pfn(), range.end);
        if let Some(other) = self.zones.iter().find(|other| other.mem().start_pfn < to && from < other.mem().end_pfn())
        {
            return Err(refuse(GrowError::Overlap { other_start: other.mem().start_pfn }));
        }
        Ok(zone)
    }
}
