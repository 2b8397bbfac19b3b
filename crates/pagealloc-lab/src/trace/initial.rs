//! What the traced kernel held before its trace began, as far as the trace and the
//! zoneinfo snapshot show it: blocks the trace frees without having allocated them (they
//! were allocated before it started), which the replay allocates before its first event so
//! that their frees land as the kernel's did.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::path::Path;

use pagealloc::types::ZoneType;
use pagealloc::views::ZoneinfoZone;
use pagealloc::AllocRequest;

use super::parse::{for_each_event, open_trace, EventKind};
use super::replay::PfnHasher;

/// A block live when the trace began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveBlock {
    pub pfn: u64,
    pub order: u8,
}

/// Blocks whose first event in the trace is a free, in trace order (one pass over it).
pub fn live_at_start(trace: &Path) -> Result<Vec<LiveBlock>, String> {
    let mut seen: HashSet<u64, BuildHasherDefault<PfnHasher>> = HashSet::default();
    let mut live = Vec::new();
    for_each_event(open_trace(trace)?, |event| match event.kind {
        EventKind::Alloc => {
            seen.insert(event.pfn);
        }
        EventKind::Free if seen.insert(event.pfn) => live.push(LiveBlock { pfn: event.pfn, order: event.order }),
        _ => {}
    })?;
    Ok(live)
}

/// The request that puts a pre-trace block in the zone the kernel had it in. Its
/// migratetype is not in the trace: movable, the type of most memory on a machine at rest.
pub fn request_for(pfn: u64, zones: Option<&[ZoneinfoZone]>) -> AllocRequest {
    let zone_type = match zones {
        Some(zones) => zones
            .iter()
            .find(|zone| (zone.start_pfn..zone.start_pfn + zone.spanned_pages).contains(&pfn))
            .map_or(ZoneType::Normal, |zone| zone.zone_type),
        // The PC layout: DMA below 16 MiB, DMA32 below 4 GiB.
        None if pfn < 1 << 12 => ZoneType::Dma,
        None if pfn < 1 << 20 => ZoneType::Dma32,
        None => ZoneType::Normal,
    };
    let zone_type = if zone_type > ZoneType::Normal { ZoneType::Normal } else { zone_type };
    AllocRequest::USER_MOVABLE.with_highest_zone(zone_type)
}
