//! What a validated description says about a zone's span: its managed ranges, its holes,
//! and the machine as the sizing sees it.

use core::ops::Range;

use super::validate::sort_stable_by_key;
use super::{AllocatorBuilder, Ranges};
use crate::sizing::{LinuxVersion, MachineSpec, NodeSpec};
use crate::table::{Table, FIXED_NODES};
use crate::types::{Pfn, MAX_NR_ZONES};

impl AllocatorBuilder {
    /// Managed sub-ranges of `span`: the span minus holes and reservations. Between k
    /// excluded ranges lie at most k + 1 managed ones, so the table never overflows.
    pub(crate) fn managed_ranges(&self, span: &Range<Pfn>) -> Ranges {
        let excluded = clipped_sorted(self.holes.iter().chain(self.reserved.iter()), span);
        let mut ranges = Ranges::new();
        let mut cursor = span.start;
        for range in excluded.iter() {
            if range.start > cursor {
                ranges.push(cursor..range.start).expect("k + 1 managed ranges");
            }
            cursor = cursor.max(range.end);
        }
        if cursor < span.end {
            ranges.push(cursor..span.end).expect("k + 1 managed ranges");
        }
        ranges
    }

    /// Frames of `span` that are holes: not present. The frames holding the allocator's
    /// records are present wherever the description puts them.
    pub(crate) fn hole_pages(&self, span: &Range<Pfn>) -> u64 {
        let records = self.metadata_frames.as_ref().map_or(0..0, |m| m.start.max(span.start)..m.end.min(span.end));
        union_pages(self.holes.iter(), span) - union_pages(self.holes.iter(), &records)
    }

    /// Calls `mark` with runs of the frames of `span` that are present and reserved: in a
    /// reservation, and outside every hole or holding the allocator's records (mirrors
    /// memblock, where a reservation outside memory is not present). A frame in two
    /// reservations comes twice. No tables, as the build runs on a boot stack; the records'
    /// frames, the one large reservation, come as one run.
    pub(crate) fn for_each_reserved_run(&self, span: &Range<Pfn>, mut mark: impl FnMut(Range<Pfn>)) {
        for reserved in self.reserved.iter() {
            let (mut pfn, end) = (reserved.start.max(span.start), reserved.end.min(span.end));
            while pfn < end {
                let records = self.metadata_frames.as_ref().filter(|records| records.contains(&pfn));
                let next = records.map_or(pfn + 1, |records| records.end.min(end));
                if records.is_some() || !self.holes.iter().any(|hole| hole.contains(&pfn)) {
                    mark(pfn..next);
                }
                pfn = next;
            }
        }
    }

    /// The described machine as the sizing sees it: CPUs and managed pages per node and zone.
    pub(crate) fn machine_spec(&self) -> MachineSpec {
        let mut nodes: Table<NodeSpec, FIXED_NODES> =
            Table::from_fn(self.node_cpus.len(), |node| NodeSpec::new(self.node_cpus[node], [0; MAX_NR_ZONES]))
                .expect("as many as the builder's nodes");
        for zone in &self.zones {
            let managed: u64 = self.managed_ranges(&zone.span).iter().map(|r| r.end - r.start).sum();
            let node = &mut nodes[zone.node as usize];
            node.managed_pages[zone.zone_type.index()] = managed;
            node.boot_managed_pages[zone.zone_type.index()] = managed;
        }
        MachineSpec { nodes, tunables: self.tunables.clone(), kernel: LinuxVersion::MAINLINE }
    }
}

/// The non-empty parts of `ranges` (holes and reservations) inside `span`, by start (they
/// may still overlap).
fn clipped_sorted<'a>(ranges: impl Iterator<Item = &'a Range<Pfn>>, span: &Range<Pfn>) -> Ranges {
    let mut clipped = Ranges::new();
    for range in ranges.filter(|r| r.start < r.end && r.start < span.end && span.start < r.end) {
        clipped.push(range.start.max(span.start)..range.end.min(span.end)).expect("holes and reservations fit");
    }
    sort_stable_by_key(&mut clipped, |r| r.start);
    clipped
}

/// Frames of `span` in the union of `ranges`. Its table in a frame of its own, popped
/// before the build goes on.
#[inline(never)]
fn union_pages<'a>(ranges: impl Iterator<Item = &'a Range<Pfn>>, span: &Range<Pfn>) -> u64 {
    let clipped = clipped_sorted(ranges, span);
    let mut pages = 0;
    let mut cursor = span.start;
    for range in clipped.iter() {
        let start = range.start.max(cursor);
        if range.end > start {
            pages += range.end - start;
            cursor = range.end;
        }
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ZoneType;

    /// Reservations over holes are holes, the records' frames are present wherever they
    /// lie, and the three kinds with the managed ranges tile the span.
    #[test]
    fn holes_reservations_and_records_tile_the_span() {
        let span = 0..1000;
        let mut builder = AllocatorBuilder::new()
            .zone(0, ZoneType::Normal, span.clone())
            .hole(100..200)
            .hole(150..300)
            .reserve(250..350)
            .reserve(400..410)
            .hole(600..700);
        builder.add_reservation(620..640);
        builder.metadata_frames = Some(620..640);
        let mut reserved = alloc::vec::Vec::new();
        builder.for_each_reserved_run(&span, |run| reserved.extend(run));
        let expected: alloc::vec::Vec<_> = (300..350).chain(400..410).chain(620..640).collect();
        assert_eq!(reserved, expected);
        assert_eq!(builder.hole_pages(&span), 280);
        let managed: u64 = builder.managed_ranges(&span).iter().map(|r| r.end - r.start).sum();
        assert_eq!(managed + 280 + 50 + 10 + 20, 1000);
    }
}
