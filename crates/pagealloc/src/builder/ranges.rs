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

    /// Frames of `span` that are holes.
    pub(crate) fn hole_pages(&self, span: &Range<Pfn>) -> u64 {
        let holes = clipped_sorted(self.holes.iter(), span);
        let mut pages = 0;
        let mut cursor = span.start;
        for hole in holes.iter() {
            let start = hole.start.max(cursor);
            if hole.end > start {
                pages += hole.end - start;
                cursor = hole.end;
            }
        }
        pages
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
