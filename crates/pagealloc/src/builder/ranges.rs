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

    /// Frames of `span` that are holes: not present.
    pub(crate) fn hole_pages(&self, span: &Range<Pfn>) -> u64 {
        self.hole_ranges(span).iter().map(|hole| hole.end - hole.start).sum()
    }

    /// The holes of `span`, disjoint and by start, less the frames holding the allocator's
    /// records: memory the build is given is present wherever the description puts it.
    pub(crate) fn hole_ranges(&self, span: &Range<Pfn>) -> Ranges {
        let holes = clipped_sorted(self.holes.iter(), span);
        let records = clipped_sorted(self.metadata_frames.iter(), span);
        subtract(&holes, &records)
    }

    /// The present frames of `span` kept from the allocator: reservations (the records'
    /// frames among them) less the holes (mirrors memblock, where a reservation outside
    /// memory is not present).
    pub(crate) fn reserved_ranges(&self, span: &Range<Pfn>) -> Ranges {
        let reserved = clipped_sorted(self.reserved.iter(), span);
        subtract(&reserved, &self.hole_ranges(span))
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

/// The frames of `from` (by start, possibly overlapping) outside every range of `minus` (by
/// start, disjoint), as disjoint ranges by start. Each range of `minus` splits at most one
/// range of the union of `from` in two, so the result has at most |from| + |minus| ranges.
fn subtract(from: &Ranges, minus: &Ranges) -> Ranges {
    let mut out = Ranges::new();
    let mut push = |range: Range<Pfn>| {
        if range.start < range.end {
            out.push(range).expect("at most |from| + |minus| ranges");
        }
    };
    let mut cursor = 0;
    for range in from.iter() {
        // The part of the union not yet emitted.
        let mut start = range.start.max(cursor);
        if start >= range.end {
            continue;
        }
        for cut in minus.iter() {
            if cut.start >= range.end {
                break;
            }
            if cut.end > start {
                push(start..cut.start.max(start));
                start = cut.end;
            }
        }
        push(start..range.end);
        cursor = range.end;
    }
    out
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
        let holes: alloc::vec::Vec<_> = builder.hole_ranges(&span).iter().cloned().collect();
        assert_eq!(holes, [100..200, 200..300, 600..620, 640..700]);
        let reserved: alloc::vec::Vec<_> = builder.reserved_ranges(&span).iter().cloned().collect();
        assert_eq!(reserved, [300..350, 400..410, 620..640]);
        assert_eq!(builder.hole_pages(&span), 280);
        let managed: u64 = builder.managed_ranges(&span).iter().map(|r| r.end - r.start).sum();
        assert_eq!(managed + 280 + 50 + 10 + 20, 1000);
    }
}
