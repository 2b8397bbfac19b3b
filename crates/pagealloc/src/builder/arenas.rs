//! Per-CPU arenas (beyond Linux; `ArenaRule::PerCpu`, the `pagealloc` preset): each node's
//! zones cut into one arena per CPU of the node, each arena a node of its own, as
//! `numa=fake` cuts a machine into nodes. A CPU allocates from its own arena first and falls
//! back through the node-ordered zonelist: to the other arenas of its node, then to the
//! arenas of the nearest nodes (each arena remembers the node it was cut from, its home). A
//! free goes to the arena that holds the frame. Each arena has its own zone lock and free
//! lists, so CPUs working in their own memory neither queue on one lock nor pass its lines
//! between them.

use core::ops::Range;

use super::{AllocatorBuilder, Ranges, ZoneLayout};
use crate::table::{Table, TableFull, FIXED_CPUS, FIXED_NODES, FIXED_ZONES};
use crate::types::{Pfn, MAX_ORDER};

/// Smallest arena: 128 MiB of present memory, 64 pageblocks, so that each arena keeps many
/// pageblocks for fullest-first placement to choose among and its watermarks stay well
/// above a pageset refill. Arenas are cut by the pages present (holes and reservations do
/// not count), so a node with fewer than `CPUs x MIN_ARENA_PAGES` present pages gets fewer
/// arenas, shared by its CPUs round robin, and one with fewer than two minimums stays whole.
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
    // Per node: one arena per CPU, per minimum arena of its largest zone's present pages,
    // per share, at least one.
    let arenas: Table<u64, FIXED_NODES> = Table::from_fn(nodes, |node| {
        let zones = builder.zones.iter().filter(|zone| zone.node as usize == node);
        let wanted = node_cpus[node].min(share);
        zones.map(|zone| ArenaCut::of(builder, &zone.span, wanted).parts).max().unwrap_or(1)
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
        let cut = ArenaCut::of(builder, &zone.span, arenas_of(zone.node));
        for part in 0..cut.parts {
            let node = first_arena[zone.node as usize] + part as u16;
            zones.push(ZoneLayout { node, zone_type: zone.zone_type, span: cut.piece(part) })?;
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

/// A zone's span cut into arenas by the pages present in it (holes and reservations do
/// not count), at max-order boundaries so that no buddy block straddles two arenas. Every
/// piece holds at least [`MIN_ARENA_PAGES`] present pages, unless there is only one.
struct ArenaCut {
    managed: Ranges,
    span: Range<Pfn>,
    parts: u64,
}

impl ArenaCut {
    /// At most `wanted` pieces: as many as the present pages hold at the minimum each.
    fn of(builder: &AllocatorBuilder, span: &Range<Pfn>, wanted: u64) -> ArenaCut {
        let managed = builder.managed_ranges(span);
        let present: u64 = managed.iter().map(|range| range.end - range.start).sum();
        let mut cut = ArenaCut { managed, span: span.clone(), parts: (present / MIN_ARENA_PAGES).min(wanted).max(1) };
        // Rounding the cuts to max-order boundaries can leave the last piece short: fewer.
        while cut.parts > 1 && (0..cut.parts).any(|part| cut.present_in(&cut.piece(part)) < MIN_ARENA_PAGES) {
            cut.parts -= 1;
        }
        debug_assert!(cut.parts >= 1 && cut.boundary(cut.parts) == span.end);
        cut
    }

    /// The `part`-th piece; consecutive pieces cover the span.
    fn piece(&self, part: u64) -> Range<Pfn> {
        self.boundary(part)..self.boundary(part + 1)
    }

    /// Where piece `part` starts: a max-order boundary near where `part / parts` of the
    /// present pages lie below; the one below it when that leaves the pieces before it
    /// their minimums, else the one above.
    fn boundary(&self, part: u64) -> Pfn {
        if part == 0 {
            return self.span.start;
        }
        if part >= self.parts {
            return self.span.end;
        }
        let present = self.present_in(&self.span);
        let mut below = present * part / self.parts;
        let mut pfn = self.span.start;
        for range in self.managed.iter() {
            let pages = range.end - range.start;
            if below < pages {
                pfn = range.start + below;
                break;
            }
            below -= pages;
            pfn = range.end;
        }
        let align = 1 << MAX_ORDER;
        let down = (pfn - pfn % align).clamp(self.span.start, self.span.end);
        if self.present_in(&(self.span.start..down)) >= part * MIN_ARENA_PAGES {
            down
        } else {
            pfn.next_multiple_of(align).clamp(self.span.start, self.span.end)
        }
    }

    fn present_in(&self, piece: &Range<Pfn>) -> u64 {
        let overlap = |range: &Range<Pfn>| range.end.min(piece.end).saturating_sub(range.start.max(piece.start));
        self.managed.iter().map(overlap).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_contiguous_aligned_and_cover_the_span() {
        let span = 100..100 + 5 * MIN_ARENA_PAGES + 77;
        let builder = AllocatorBuilder::new().node(3).zone(0, crate::ZoneType::Normal, span.clone());
        let cut = ArenaCut::of(&builder, &span, 3);
        let pieces: alloc::vec::Vec<_> = (0..cut.parts).map(|part| cut.piece(part)).collect();
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
