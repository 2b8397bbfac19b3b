//! What the traced kernel held before its trace began, as far as the trace and the
//! zoneinfo snapshot show it:
//! - blocks the trace frees without having allocated them (they were allocated before it
//!   started), which the replay allocates before its first event so that their frees land
//!   as the kernel's did;
//! - each CPU's pageset contents and auto-tuned high per zone (zoneinfo's `count` and
//!   `high`). Which orders and types those pages are is not in the file: the replay fills
//!   each pageset in the proportions of the pages that CPU goes on to allocate in the
//!   trace, pageset orders only.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

use pagealloc::platform::Platform;

use super::platform::ReplayPlatform;
use pagealloc::pcp::{pindex, pindex_order, NR_PCP_LISTS};
use pagealloc::types::{MigrateType, ZoneType, PAGEBLOCK_ORDER};
use pagealloc::views::ZoneinfoZone;
use pagealloc::{AllocRequest, Block, PageAllocator};

use super::parse::{EventKind, TraceEvent};
use super::pfn_hasher::PfnHasher;

/// A block live when the trace began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveBlock {
    pub pfn: u64,
    pub order: u8,
}

/// What the pagesets hold when the replay starts. The snapshot gives each pageset's page
/// count, not its orders and types: those are a choice, swept in docs/lab.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum PagesetStock {
    /// Empty pagesets at their initial high (the snapshot ignored).
    Empty,
    /// The snapshot's count and high, all order-0 movable pages (user memory freed at exit).
    Movable,
    /// The snapshot's count and high, in the mix of orders and types the CPU allocates in
    /// the trace.
    AllocMix,
    /// The snapshot's high, and the blocks the trace shows leaving each pageset (allocated
    /// or drained) that no traced refill or free put there, by order and type. The rest of
    /// the count never leaves in the trace, so it sits on lists the trace never shows that
    /// CPU refilling (a refill means the list was empty) or draining (a drain takes the
    /// oldest blocks first): those lists, filled from the last one a drain visits.
    Implied,
}

/// Blocks per pageset order (below STOCK_ORDERS) and pageset type.
pub type OrderTypeTable = [[u64; 3]; STOCK_ORDERS];

impl PagesetStock {
    /// The blocks (order, type, count) of `cpu`'s stock of `count_pages` pages.
    pub fn blocks(self, count_pages: u64, start: &TraceStart, cpu: usize) -> Vec<(u8, MigrateType, u64)> {
        let movable_rest = |pages: u64| vec![(0, MigrateType::Movable, pages)];
        match self {
            PagesetStock::Empty => Vec::new(),
            PagesetStock::Movable => movable_rest(count_pages),
            PagesetStock::AllocMix => {
                start.alloc_pages.get(cpu).map_or_else(Vec::new, |mix| proportional(count_pages, mix))
            }
            PagesetStock::Implied => {
                let Some(implied) = start.implied_blocks.get(cpu) else { return movable_rest(count_pages) };
                let mut blocks = table_entries(implied);
                let implied_pages: u64 = blocks.iter().map(|&(order, _, count)| count << order).sum();
                let touched = start.touched_lists.get(cpu).copied().unwrap_or(0);
                blocks.extend(untouched_rest(count_pages.saturating_sub(implied_pages), touched));
                blocks
            }
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
    /// Per trace CPU: pages allocated, by order and type.
    pub alloc_pages: Vec<OrderTypeTable>,
    /// Per trace CPU: blocks that left its pageset without a traced event putting them there.
    pub implied_blocks: Vec<OrderTypeTable>,
    /// Per trace CPU: a bit per pageset list (Linux's pindex) the trace refills or drains.
    pub touched_lists: Vec<u32>,
    /// Per trace CPU: ns from the first event to its first drain by a kernel worker, the
    /// phase of its vmstat timer (decay drains run there).
    pub first_worker_drain_ns: Vec<Option<u64>>,
}

fn add(table: &mut Vec<OrderTypeTable>, cpu: usize, order: u8, migratetype: i8, amount: u64) {
    if table.len() <= cpu {
        table.resize(cpu + 1, [[0; 3]; STOCK_ORDERS]);
    }
    let slot = usize::try_from(migratetype).ok().and_then(|mt| table[cpu].get_mut(order as usize)?.get_mut(mt));
    if let Some(slot) = slot {
        *slot += amount;
    }
}

impl TraceStart {
    /// True (and the slot made) when `cpu` has no worker drain yet.
    fn worker_drain_unknown(&mut self, cpu: usize) -> bool {
        if self.first_worker_drain_ns.len() <= cpu {
            self.first_worker_drain_ns.resize(cpu + 1, None);
        }
        self.first_worker_drain_ns[cpu].is_none()
    }
}

/// One pass: the live blocks, and each block's pageset (the CPU whose refill or free put it
/// there) to find the stock the trace consumed.
pub fn trace_start(events: &[TraceEvent]) -> TraceStart {
    let mut seen: HashSet<u64, BuildHasherDefault<PfnHasher>> = HashSet::default();
    // pfn -> CPU whose pageset holds it.
    let mut cached: HashMap<u64, u32, BuildHasherDefault<PfnHasher>> = HashMap::default();
    let mut start = TraceStart::default();
    let pcp_order = |order: u8| (order as usize) < STOCK_ORDERS;
    let first_ns = events.first().map_or(0, |event| event.ts_ns);
    for event in events {
        let cpu = event.cpu as usize;
        let refill_or_drain =
            matches!(event.kind, EventKind::ZoneLocked if event.percpu_refill) || event.kind == EventKind::PcpuDrain;
        if let Some(list) = pageset_list(event.order, event.migratetype).filter(|_| refill_or_drain) {
            if start.touched_lists.len() <= cpu {
                start.touched_lists.resize(cpu + 1, 0);
            }
            start.touched_lists[cpu] |= 1 << list;
        }
        match event.kind {
            EventKind::Alloc => {
                seen.insert(event.pfn);
                add(&mut start.alloc_pages, cpu, event.order, event.migratetype, 1 << event.order);
                let from_traced_stock = cached.remove(&event.pfn) == Some(event.cpu);
                if pcp_order(event.order) && !from_traced_stock {
                    add(&mut start.implied_blocks, cpu, event.order, event.migratetype, 1);
                }
            }
            EventKind::Free => {
                if seen.insert(event.pfn) {
                    start.live.push(LiveBlock { pfn: event.pfn, order: event.order });
                }
                if pcp_order(event.order) {
                    cached.insert(event.pfn, event.cpu);
                }
            }
            EventKind::ZoneLocked if event.percpu_refill => {
                cached.insert(event.pfn, event.cpu);
            }
            EventKind::PcpuDrain if event.kworker && start.worker_drain_unknown(cpu) => {
                start.first_worker_drain_ns[cpu] = Some(event.ts_ns.saturating_sub(first_ns));
                if cached.remove(&event.pfn).is_none() && pcp_order(event.order) {
                    add(&mut start.implied_blocks, cpu, event.order, event.migratetype, 1);
                }
            }
            // A drained block no traced event put in a pageset was stock.
            EventKind::PcpuDrain if cached.remove(&event.pfn).is_none() && pcp_order(event.order) => {
                add(&mut start.implied_blocks, cpu, event.order, event.migratetype, 1);
            }
            _ => {}
        }
    }
    start
}

/// The pageset list (mirrors order_to_pindex() with both THP lists) of a traced block.
fn pageset_list(order: u8, migratetype: i8) -> Option<usize> {
    let migratetype = MigrateType::from_index(usize::try_from(migratetype).ok().filter(|&mt| mt < 3)?);
    ((order as usize) < STOCK_ORDERS || order == PAGEBLOCK_ORDER).then(|| pindex(order, migratetype, 2))
}

/// `pages` of stock that no event shows, as blocks on the lists `touched` leaves out,
/// filled from the highest list down: a drain starting at list 0 (decay, and frees of
/// order-0 unmovable pages) reaches those last. What no untouched list takes (every list
/// touched) is order-0 movable.
fn untouched_rest(mut pages: u64, touched: u32) -> Vec<(u8, MigrateType, u64)> {
    let mut blocks = Vec::new();
    for list in (0..NR_PCP_LISTS).rev().filter(|list| touched & 1 << list == 0) {
        let order = pindex_order(list);
        let migratetype = match list {
            list if order == PAGEBLOCK_ORDER && list == NR_PCP_LISTS - 1 => MigrateType::Movable,
            _ if order == PAGEBLOCK_ORDER => MigrateType::Unmovable,
            list => MigrateType::from_index(list % 3),
        };
        let count = pages >> order;
        if count > 0 {
            blocks.push((order, migratetype, count));
            pages -= count << order;
        }
    }
    if pages > 0 {
        blocks.push((0, MigrateType::Movable, pages));
    }
    blocks
}

/// The non-zero entries of a table.
fn table_entries(table: &OrderTypeTable) -> Vec<(u8, MigrateType, u64)> {
    let mut blocks = Vec::new();
    for (order, by_type) in table.iter().enumerate() {
        for (index, &count) in by_type.iter().enumerate() {
            if count > 0 {
                blocks.push((order as u8, MigrateType::from_index(index), count));
            }
        }
    }
    blocks
}

/// Blocks of each (order, type) making up `pages` in the proportions of `alloc_pages`.
fn proportional(pages: u64, alloc_pages: &OrderTypeTable) -> Vec<(u8, MigrateType, u64)> {
    let total: u64 = alloc_pages.iter().flatten().sum();
    if total == 0 {
        return Vec::new();
    }
    let mut shares = *alloc_pages;
    for (order, by_type) in shares.iter_mut().enumerate() {
        for share in by_type.iter_mut() {
            *share = (pages as u128 * *share as u128 / total as u128) as u64 >> order;
        }
    }
    table_entries(&shares)
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

/// What [`seed_pagesets`] put in place.
#[derive(Debug, Default)]
pub struct Seeded {
    pub pageset_pages: u64,
    pub ballast_pages: u64,
    /// Held for the replay's length.
    pub ballast: Vec<Block>,
}

/// Brings the allocator to the snapshot: each zone's free pages (the rest held as
/// ballast, in the largest blocks), then each CPU's pageset count and high.
/// Allocations made on the way leave their refills in the pagesets; they are drained
/// before the stock goes in, so each pageset holds the stock alone.
pub fn seed_pagesets(
    allocator: &PageAllocator<ReplayPlatform>,
    zones: &[ZoneinfoZone],
    start: &TraceStart,
    stock: PagesetStock,
) -> Seeded {
    let mut seeded = Seeded::default();
    let ours = |file_zone: &ZoneinfoZone| {
        allocator.zones().iter().find(|zone| {
            (zone.state().node() as usize, zone.state().zone_type()) == (file_zone.node, file_zone.zone_type)
        })
    };
    // The stock of every pageset, allocated first.
    let mut held: Vec<(usize, u16, u64, Vec<Block>)> = Vec::new();
    for file_zone in zones.iter().filter(|zone| zone.managed_pages > 0) {
        let Some(zone_index) = ours(file_zone).map(|zone| zone.state().index()) else { continue };
        for line in file_zone.pagesets.iter().filter(|line| line.cpu < allocator.platform().nr_cpus()) {
            allocator.platform().set_cpu(line.cpu);
            let zone_stock = match stock {
                PagesetStock::Implied if fullest_zone(zones, line.cpu) != Some(file_zone.zone_type) => {
                    PagesetStock::Movable
                }
                other => other,
            };
            let mut blocks = Vec::new();
            for (order, migratetype, count) in zone_stock.blocks(line.count_pages, start, line.cpu) {
                let request =
                    AllocRequest::USER_MOVABLE.with_migratetype(migratetype).with_highest_zone(file_zone.zone_type);
                blocks.extend((0..count).map_while(|_| allocator.alloc_pages(order, request).ok()));
            }
            held.push((line.cpu, zone_index, line.high_pages, blocks));
        }
    }
    // The ballast: what the zone has free beyond the snapshot's free pages (which do not
    // count pageset pages, as NR_FREE_PAGES does not).
    allocator.pagesets().drain_all();
    for file_zone in zones.iter().filter(|zone| zone.managed_pages > 0) {
        let Some(zone) = ours(file_zone) else { continue };
        let mut excess = zone.free_pages().saturating_sub(file_zone.free_pages);
        let request = AllocRequest::USER_MOVABLE.with_highest_zone(file_zone.zone_type);
        for order in (0..=pagealloc::types::MAX_ORDER).rev() {
            while excess >= 1 << order {
                let Ok(block) = allocator.alloc_pages(order, request) else { break };
                excess -= 1 << order;
                seeded.ballast_pages += 1 << order;
                seeded.ballast.push(block);
            }
        }
    }
    allocator.pagesets().drain_all();
    if stock == PagesetStock::Empty {
        return seeded;
    }
    for (cpu, zone_index, high_pages, mut blocks) in held {
        allocator.platform().set_cpu(cpu);
        // Highest orders first: high-order frees ending in order-0 ones are no free_high
        // burst. Room for the whole stock while it goes in; the snapshot's high after.
        blocks.sort_by_key(|block| std::cmp::Reverse(block.order()));
        allocator.pagesets().set_pageset_high(cpu, zone_index, u64::MAX);
        for block in blocks {
            seeded.pageset_pages += 1 << block.order();
            allocator.free_pages(block).expect("a stock block frees");
        }
        allocator.pagesets().set_pageset_high(cpu, zone_index, high_pages);
    }
    seeded
}

/// The zone where `cpu` caches the most in the snapshot: the trace's blocks are not told
/// apart by zone, so a CPU's implied stock goes there.
fn fullest_zone(zones: &[ZoneinfoZone], cpu: usize) -> Option<ZoneType> {
    zones
        .iter()
        .filter_map(|zone| Some((zone.pagesets.iter().find(|line| line.cpu == cpu)?.count_pages, zone.zone_type)))
        .max()
        .map(|(_, zone_type)| zone_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse::parse_line;

    #[test]
    fn unexplained_stock_fills_the_lists_the_trace_never_touches_from_the_last() {
        // Every list touched but THP-movable (13) and order-3 reclaimable (11).
        let touched =
            (0..NR_PCP_LISTS as u32).filter(|&list| list != 13 && list != 11).fold(0, |bits, list| bits | 1 << list);
        let blocks = untouched_rest(512 * 2 + 8 * 3 + 5, touched);
        assert_eq!(
            blocks,
            vec![(9, MigrateType::Movable, 2), (3, MigrateType::Reclaimable, 3), (0, MigrateType::Movable, 5)],
            "THP blocks first, then order 3; what no untouched list fits is order-0 movable"
        );
        assert_eq!(untouched_rest(7, u32::MAX), vec![(0, MigrateType::Movable, 7)]);
        assert_eq!(untouched_rest(0, 0), vec![]);
    }

    #[test]
    fn refills_and_drains_mark_their_cpus_lists() {
        let lines = [
            "a-1 [001] d..3. 1.000001: mm_page_alloc_zone_locked: page=0 pfn=0x10 order=0 migratetype=0 percpu_refill=1",
            "a-1 [001] d..3. 1.000002: mm_page_alloc_zone_locked: page=0 pfn=0x20 order=2 migratetype=1 percpu_refill=0",
            "kworker/0:1-2 [000] d..2. 1.000003: mm_page_pcpu_drain: page=0 pfn=0x200 order=9 migratetype=1",
            "a-1 [001] d..2. 1.000004: mm_page_pcpu_drain: page=0 pfn=0x40 order=1 migratetype=2",
        ];
        let events: Vec<TraceEvent> = lines.iter().map(|line| parse_line(line).unwrap()).collect();
        let start = trace_start(&events);
        // CPU 1: the order-0 unmovable refill (list 0) and the order-1 reclaimable drain
        // (list 5); a direct zone-locked block is no refill. CPU 0: the THP movable list.
        assert_eq!(start.touched_lists, vec![1 << 13, 1 << 0 | 1 << 5]);
        assert_eq!(start.implied_blocks[0][0], [0; 3], "a THP block is not in the order 0-3 table");
        assert_eq!(start.implied_blocks[1][1], [0, 0, 1], "the drained order-1 block was stock");
    }
}
