//! Per-CPU arenas (beyond Linux; `ArenaRule::PerCpu`, the `pagealloc` preset): each node's
//! zones cut into one arena per CPU of the node, each arena a node of its own, as
//! `numa=fake` cuts a machine into nodes. A CPU allocates from its own arena first and falls
//! back through the node-ordered zonelist: to the other arenas of its node, then to the
//! arenas of the nearest nodes (each arena remembers the node it was cut from, its home). A
//! free goes to the arena that holds the frame. Each arena has its own zone lock and free
//! lists, so CPUs working in their own memory neither queue on one lock nor pass its lines
//! between them.

use super::{AllocatorBuilder, ZoneLayout};
use crate::table::{Table, TableFull, FIXED_CPUS, FIXED_NODES, FIXED_ZONES};
use crate::types::{Pfn, MAX_ORDER};

/// Smallest arena: 128 MiB, 64 pageblocks, so that each arena keeps many pageblocks for
/// fullest-first placement to choose among and its watermarks stay well above a pageset
/// refill. Beyond `zone pages / MIN_ARENA_PAGES` CPUs, arenas are shared round robin.
pub const MIN_ARENA_PAGES: u64 = 1 << 15;

/// Most arenas: without the `alloc` feature, the nodes a fixed description table holds (a
/// kernel's boot-time build); with it, one per CPU the platform may have. Nodes share them
/// evenly; more CPUs share arenas round robin.
#[cfg(not(feature = "alloc"))]
const MAX_ARENAS: u64 = FIXED_NODES as u64;
#[cfg(feature = "alloc")]
const MAX_ARENAS: u64 = FIXED_CPUS as u64;

/// The arena layout: zones and the CPU-to-node map that replace the builder's, and each
/// arena's home node.
pub(crate) struct ArenaLayout {
    pub zones: Table<ZoneLayout, FIXED_ZONES>,
    pub cpu_nodes: Table<u16, FIXED_CPUS>,
    pub homes: Table<u16, FIXED_NODES>,
}

impl ArenaLayout {
    pub(crate) fn node_count(&self) -> usize {
        self.homes.len()
    }
}

/// Arenas for `nr_cpus` CPUs on the builder's (validated) description; `None` leaves it as
/// it is: no node has two CPUs and a zone to cut for them.
pub(crate) fn arena_layout(builder: &AllocatorBuilder, nr_cpus: usize) -> Result<Option<ArenaLayout>, TableFull> {
    let nodes = builder.node_count();
    let share = (MAX_ARENAS / nodes as u64).max(1);
    let mut node_cpus: Table<u64, FIXED_NODES> = Table::from_fn(nodes, |_| 0)?;
    for cpu in 0..nr_cpus {
        node_cpus[node_of_cpu(builder, cpu) as usize] += 1;
    }
    // Per node: one arena per CPU, per minimum arena of its largest zone, per share, at least one.
    let arenas: Table<u64, FIXED_NODES> = Table::from_fn(nodes, |node| {
        let zones = builder.zones.iter().filter(|zone| zone.node as usize == node);
        let largest_pages = zones.map(|zone| zone.span.end.saturating_sub(zone.span.start)).max().unwrap_or(0);
        (largest_pages / MIN_ARENA_PAGES).min(node_cpus[node]).min(share).max(1)
    })?;
    if arenas.iter().all(|&count| count < 2) {
        return Ok(None);
    }
    let arenas_of = |node: u16| arenas[node as usize];
    // Each node's first arena, and the arenas' homes.
    let mut first_arena: Table<u16, FIXED_NODES> = Table::new();
    let mut homes: Table<u16, FIXED_NODES> = Table::new();
    for node in 0..nodes as u16 {
        first_arena.push(homes.len() as u16)?;
        for _ in 0..arenas_of(node) {
            homes.push(node)?;
        }
    }
    let mut zones = Table::new();
    for zone in builder.zones.iter() {
        let pages = zone.span.end.saturating_sub(zone.span.start);
        let parts = arenas_of(zone.node).min(pages / MIN_ARENA_PAGES).max(1);
        for (part, span) in cut(zone.span.clone(), parts).enumerate() {
            let node = first_arena[zone.node as usize] + part as u16;
            zones.push(ZoneLayout { node, zone_type: zone.zone_type, span })?;
        }
    }
    // A node's CPUs take its arenas round robin, in CPU order.
    let mut seen: Table<u64, FIXED_NODES> = Table::from_fn(nodes, |_| 0)?;
    let cpu_nodes = Table::from_fn(nr_cpus, |cpu| {
        let node = node_of_cpu(builder, cpu);
        let turn = seen[node as usize];
        seen[node as usize] += 1;
        first_arena[node as usize] + (turn % arenas_of(node)) as u16
    })?;
    Ok(Some(ArenaLayout { zones, cpu_nodes, homes }))
}

/// The node of `cpu`; node 0 for a description not yet validated that names none
/// (`metadata_bytes` sizes those).
fn node_of_cpu(builder: &AllocatorBuilder, cpu: usize) -> u16 {
    builder.described_node_of_cpu(cpu).unwrap_or(0)
}

/// `span` in `parts` consecutive pieces, cut at max-order boundaries (a buddy block never
/// straddles two arenas); the last piece takes the remainder.
fn cut(span: core::ops::Range<Pfn>, parts: u64) -> impl Iterator<Item = core::ops::Range<Pfn>> {
    debug_assert!(parts >= 1);
    let step = ((span.end - span.start) / parts) & !((1 << MAX_ORDER) - 1);
    let boundary = move |part: u64| match part {
        0 => span.start,
        _ if part == parts => span.end,
        _ => (span.start + part * step) & !((1 << MAX_ORDER) - 1),
    };
    (0..parts).map(move |part| boundary(part)..boundary(part + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_contiguous_aligned_and_cover_the_span() {
        let span = 100..100 + 5 * MIN_ARENA_PAGES + 77;
        let pieces: alloc::vec::Vec<_> = cut(span.clone(), 3).collect();
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0].start, span.start);
        assert_eq!(pieces[2].end, span.end);
        for pair in pieces.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            assert_eq!(pair[1].start % (1 << MAX_ORDER), 0);
        }
        assert!(pieces.iter().all(|piece| piece.end - piece.start >= MIN_ARENA_PAGES));
    }
}
