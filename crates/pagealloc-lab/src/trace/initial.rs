//! What the traced kernel held before its trace began, as far as the trace and the
//! zoneinfo snapshot show it:
//! - blocks the trace frees without having allocated them (they were allocated before it
//!   started), which the replay allocates before its first event so that their frees land
//!   as the kernel's did;
//! - each CPU's pageset contents and auto-tuned high per zone (zoneinfo's `count` and
//!   `high`). Which orders and types those pages are is not in the file: the replay fills
//!   each pageset in the proportions of the pages that CPU goes on to allocate in the
//!   trace, pageset orders only.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::path::Path;

use pagealloc::types::{MigrateType, ZoneType};
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

/// What the pagesets hold when the replay starts. The snapshot gives each pageset's page
/// count, not its orders and types: those are a choice, swept in the README.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum PagesetStock {
    /// Empty pagesets at their initial high (the snapshot ignored).
    Empty,
    /// The snapshot's count and high, all order-0 movable pages (user memory freed at exit).
    Movable,
    /// The snapshot's count and high, in the mix of orders and types the CPU allocates in
    /// the trace.
    AllocMix,
}

impl PagesetStock {
    /// The (order, type) mix of a CPU's stock.
    pub fn mix(self, cpu_alloc_pages: Option<&[[u64; 3]; STOCK_ORDERS]>) -> Option<[[u64; 3]; STOCK_ORDERS]> {
        match self {
            PagesetStock::Empty => None,
            PagesetStock::Movable => {
                let mut mix = [[0; 3]; STOCK_ORDERS];
                mix[0][MigrateType::Movable.index()] = 1;
                Some(mix)
            }
            PagesetStock::AllocMix => cpu_alloc_pages.copied(),
        }
    }
}

/// Pageset orders whose stock is modelled (0..=PAGE_ALLOC_COSTLY_ORDER).
pub const STOCK_ORDERS: usize = 4;

/// What one pass over the trace tells about its start.
#[derive(Debug, Default)]
pub struct TraceStart {
    /// Blocks whose first event in the trace is a free, in trace order.
    pub live: Vec<LiveBlock>,
    /// Per trace CPU: pages allocated by order (below STOCK_ORDERS) and pageset type.
    pub alloc_pages: Vec<[[u64; 3]; STOCK_ORDERS]>,
}

pub fn trace_start(trace: &Path) -> Result<TraceStart, String> {
    let mut seen: HashSet<u64, BuildHasherDefault<PfnHasher>> = HashSet::default();
    let mut start = TraceStart::default();
    for_each_event(open_trace(trace)?, |event| match event.kind {
        EventKind::Alloc => {
            seen.insert(event.pfn);
            let cpu = event.cpu as usize;
            if start.alloc_pages.len() <= cpu {
                start.alloc_pages.resize(cpu + 1, [[0; 3]; STOCK_ORDERS]);
            }
            if let (Some(by_type), Ok(migratetype)) =
                (start.alloc_pages[cpu].get_mut(event.order as usize), usize::try_from(event.migratetype))
            {
                if let Some(pages) = by_type.get_mut(migratetype) {
                    *pages += 1 << event.order;
                }
            }
        }
        EventKind::Free if seen.insert(event.pfn) => start.live.push(LiveBlock { pfn: event.pfn, order: event.order }),
        _ => {}
    })?;
    Ok(start)
}

/// Blocks of each (order, type) making up `pages` in the proportions of `alloc_pages`.
pub fn stock_blocks(pages: u64, alloc_pages: &[[u64; 3]; STOCK_ORDERS]) -> Vec<(u8, MigrateType, u64)> {
    let total: u64 = alloc_pages.iter().flatten().sum();
    if total == 0 {
        return Vec::new();
    }
    let mut blocks = Vec::new();
    for (order, by_type) in alloc_pages.iter().enumerate() {
        for (index, &share) in by_type.iter().enumerate() {
            let count = (pages as u128 * share as u128 / total as u128) as u64 >> order;
            if count > 0 {
                blocks.push((order as u8, MigrateType::from_index(index), count));
            }
        }
    }
    blocks
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
