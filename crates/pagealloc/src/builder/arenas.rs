//! Per-CPU arenas (beyond Linux; `ArenaRule::PerCpu`, the `pagealloc` preset): a
//! single-node machine's zones cut into one arena per CPU, each arena a node of its own, as
//! `numa=fake` cuts a machine into nodes. A CPU allocates from its own arena first and falls
//! back to its neighbours' through the node-ordered zonelist; a free goes to the arena that
//! holds the frame. Each arena has its own zone lock and free lists, so CPUs working in
//! their own memory neither queue on one lock nor pass its lines between them.

use super::{AllocatorBuilder, ZoneLayout};
use crate::table::{Table, TableFull, FIXED_CPUS, FIXED_NODES, FIXED_ZONES};
use crate::types::{Pfn, MAX_ORDER};

/// Smallest arena: 128 MiB, 64 pageblocks, so that each arena keeps many pageblocks for
/// fullest-first placement to choose among and its watermarks stay well above a pageset
/// refill. Beyond `zone pages / MIN_ARENA_PAGES` CPUs, arenas are shared round robin.
pub const MIN_ARENA_PAGES: u64 = 1 << 15;

/// Most arenas: the nodes a description holds without the `alloc` feature, so that a
/// kernel's boot-time build takes the same layout; more CPUs share arenas round robin.
const MAX_ARENAS: u64 = FIXED_NODES as u64;

/// The arena layout: zones and the CPU-to-node map that replace the builder's.
pub(crate) struct ArenaLayout {
    pub zones: Table<ZoneLayout, FIXED_ZONES>,
    pub cpu_nodes: Table<u16, FIXED_CPUS>,
}

impl ArenaLayout {
    pub(crate) fn node_count(&self) -> usize {
        self.zones.iter().map(|zone| zone.node as usize + 1).max().unwrap_or(1)
    }
}

/// Arenas for `nr_cpus` CPUs on the builder's description; `None` leaves it as it is: one
/// CPU, zones too small to cut, or more than one node (arenas have no distance to tell a
/// neighbouring arena from another socket's, so NUMA machines keep their nodes).
pub(crate) fn arena_layout(builder: &AllocatorBuilder, nr_cpus: usize) -> Result<Option<ArenaLayout>, TableFull> {
    let single_node = builder.zones.iter().all(|zone| zone.node == 0)
        && builder.node_cpus.len() <= 1
        && builder.cpu_nodes.as_deref().is_none_or(|map| map.iter().all(|&node| node == 0));
    let largest_pages = builder.zones.iter().map(|zone| zone.span.end.saturating_sub(zone.span.start)).max();
    let arenas = (largest_pages.unwrap_or(0) / MIN_ARENA_PAGES).min(nr_cpus as u64).min(MAX_ARENAS);
    if !single_node || arenas < 2 {
        return Ok(None);
    }
    let mut zones = Table::new();
    for zone in builder.zones.iter() {
        let pages = zone.span.end.saturating_sub(zone.span.start);
        let parts = arenas.min(pages / MIN_ARENA_PAGES).max(1);
        for (part, span) in cut(zone.span.clone(), parts).enumerate() {
            zones.push(ZoneLayout { node: part as u16, zone_type: zone.zone_type, span })?;
        }
    }
    let cpu_nodes = Table::from_fn(nr_cpus, |cpu| (cpu as u64 % arenas) as u16)?;
    Ok(Some(ArenaLayout { zones, cpu_nodes }))
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
