//! Coherence of shared lines (zone counters, list heads, pageset headers, frame metadata):
//! each line's last writer and the sockets whose LLC may hold it, and the cost of a touch,
//! served by this CPU's L2, another core, the socket's LLC or memory.

use pagealloc::platform::SharedLine;

use super::state::{distance_between, SimState};
use super::{MAX_CPUS, MAX_LLCS};
use crate::cache_key::{CacheKey, KeyKind};
use crate::dense_table;
use crate::table_sizes::TableSizes;

/// Coherence state of one shared line (which L2s hold it is the L2s' business).
#[derive(Clone, Copy)]
struct LineState {
    /// Last writer (or first reader); `NO_OWNER` before any touch.
    owner: u16,
    /// LLC instances that may hold the line (set on insertion, cleared on invalidation, not
    /// on eviction): a write walks the LLCs' holders of the line only when another
    /// instance may hold it.
    llcs: u32,
}

const NO_OWNER: u16 = u16::MAX;
const _: () = assert!(MAX_CPUS < NO_OWNER as usize);
const _: () = assert!(MAX_LLCS <= u32::BITS as usize);

impl LineState {
    /// Stored as one word, zero for a line never touched (the owner plus one, wrapping, in
    /// the low 16 bits; the LLC mask in the high 32), so a table of them starts as zeroed
    /// memory the host maps lazily.
    fn from_word(word: u64) -> LineState {
        LineState { owner: (word as u16).wrapping_sub(1), llcs: (word >> 32) as u32 }
    }

    fn word(self) -> u64 {
        u64::from(self.owner.wrapping_add(1)) | u64::from(self.llcs) << 32
    }
}

/// Size of a cache line, the unit shared lines are cached in.
const LINE_BYTES: u32 = 64;

/// Coherence state of every line touched, one array of [`LineState`] words per row (one
/// kind of line of one zone) indexed by line number: there are millions of frame-metadata
/// lines, and a map of that size is the simulator's slowest part.
#[derive(Default)]
pub(super) struct LineTable {
    rows: Vec<Vec<u64>>,
}

impl LineTable {
    /// The state word of the line named `key` ([`LineState::word`]).
    fn word(&mut self, key: CacheKey) -> &mut u64 {
        match key.kind() {
            KeyKind::Line { row, number } => dense_table::row_slot(&mut self.rows, row, number),
            KeyKind::Page(pfn) => unreachable!("page {pfn} has no line state"),
        }
    }

    /// Sizes the frame-metadata rows for `sizes` at once.
    pub(super) fn reserve(&mut self, sizes: &TableSizes) {
        dense_table::reserve_rows(&mut self.rows, &sizes.rows);
    }
}

impl SimState {
    /// A touch of a shared line. The line is served from this CPU's L2 if it holds it there,
    /// else from the core that holds it (a transfer by distance), else from the socket's LLC,
    /// else from memory. Lines live in the same byte-weighted caches as page data, so a line
    /// not touched for a while (the metadata of a page that sat in a pageset while the CPU
    /// streamed through other data) has been evicted and costs a miss.
    pub(super) fn touch_line(&mut self, line: SharedLine, write: bool) {
        let cpu = self.current;
        let key = CacheKey::line(line, self.layout);
        self.stats.line_touches += 1;
        let llc = self.llc_of(cpu);
        let word = self.lines.word(key);
        let mut state = LineState::from_word(*word);
        let owner = state.owner;
        // Other CPUs that still have the line in their L2 (a write drops their copies): the
        // nearest supplies the line (or acknowledges the invalidation), the last writer
        // preferred when it still has it, else the nearest by (distance, CPU number).
        let places = &self.places;
        let mut owner_holds = false;
        let mut nearest = None;
        let mut note_holder = |other: usize| {
            owner_holds |= other == owner as usize;
            let candidate = (distance_between(places, other, cpu), other);
            if nearest.is_none_or(|best| candidate < best) {
                nearest = Some(candidate);
            }
        };
        let held_here = self.l2.touch_visiting_others(cpu, key, LINE_BYTES, write, &mut note_holder);
        let supplier = if owner_holds { Some(owner as u32) } else { nearest.map(|(_, other)| other as u32) };
        // A read of a line held here is local; a write to a line others still hold costs at
        // least an invalidation round trip.
        let transferred_from = if held_here && !write { None } else { supplier };
        if !write {
            if !owner_holds {
                state.owner = cpu as u16;
            }
        } else {
            state.owner = cpu as u16;
            // Other LLC instances drop their copies too.
            if state.llcs & !(1 << llc) != 0 {
                self.llc.invalidate_others(llc, key, |_| {});
            }
            state.llcs &= 1 << llc;
        }
        // Lines reach the LLC on every fetch into an L2; a hit in this CPU's L2 does not
        // refresh the LLC (its copy ages there, as a non-inclusive LLC's would).
        let in_llc = !held_here && {
            state.llcs |= 1 << llc;
            self.llc.touch(llc, key, LINE_BYTES)
        };
        *word = state.word();
        let cost_ns = if let Some(from) = transferred_from {
            // Holders exclude this CPU, so the distance is never SameCpu.
            let cost_ns = self.calibration.line_transfer_ns(distance_between(&self.places, from as usize, cpu));
            self.stats.line_transfers += 1;
            self.stats.line_transfer_ns += cost_ns;
            cost_ns
        } else if held_here {
            self.calibration.line_local_ns
        } else if in_llc {
            self.stats.line_llc_hits += 1;
            self.calibration.line_llc_ns
        } else {
            self.stats.line_misses += 1;
            self.calibration.line_memory_ns
        };
        self.clocks_ns[cpu] += cost_ns;
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::{Platform, SharedLine};

    use super::super::SimPlatform;
    use crate::calibration::Calibration;
    use crate::metadata_layout::MetadataLayout;
    use crate::topology::Topology;

    /// Simulated ns charged to `cpu` for touching `line`.
    fn line_charge(platform: &SimPlatform, cpu: usize, line: SharedLine, write: bool) -> u64 {
        let sim = platform.handle();
        sim.set_cpu(cpu);
        let before = sim.clock_ns(cpu);
        platform.touch_shared(line, write);
        sim.clock_ns(cpu) - before
    }

    #[test]
    fn shared_lines_cost_a_transfer_by_distance() {
        let platform = SimPlatform::new(Topology::SERVER_224, Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = |cpu: usize, write: bool| line_charge(&platform, cpu, SharedLine::ZoneCounters(0), write);
        assert_eq!(charge(0, true), cal.line_memory_ns, "first touch comes from memory");
        assert_eq!(charge(0, true), cal.line_local_ns, "still held");
        assert_eq!(charge(112, false), cal.line_smt_ns, "sibling reads");
        assert_eq!(charge(112, false), cal.line_local_ns, "now shared");
        assert_eq!(charge(1, false), cal.line_same_socket_ns);
        assert_eq!(charge(56, true), cal.line_other_socket_ns, "other socket takes it");
        assert_eq!(charge(0, false), cal.line_other_socket_ns, "and the first CPU lost it");
        assert_eq!(charge(0, true), cal.line_other_socket_ns, "writing invalidates the sharer on the other socket");
        let stats = sim.stats();
        assert_eq!((stats.line_touches, stats.line_transfers), (8, 5));
    }

    #[test]
    fn a_line_evicted_by_page_data_comes_back_from_the_llc_then_from_memory() {
        let topology = Topology::SERVER_128;
        let platform = SimPlatform::new(topology.clone(), Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = || line_charge(&platform, 0, SharedLine::frame_meta(0, 10), true);
        assert_eq!(charge(), cal.line_memory_ns);
        assert_eq!(charge(), cal.line_local_ns);
        // Streaming an L2's worth of page data pushes the line out of the L2, not the LLC.
        let l2_pages = topology.l2_share_bytes() / 4096;
        platform.touch_pages(1_000_000, l2_pages);
        assert_eq!(charge(), cal.line_llc_ns);
        let llc_pages = topology.llc_bytes_per_socket / 4096;
        platform.touch_pages(2_000_000, llc_pages);
        assert_eq!(charge(), cal.line_memory_ns, "and an LLC's worth pushes it out of both");
        let stats = sim.stats();
        assert_eq!((stats.line_llc_hits, stats.line_misses), (1, 2));
    }

    #[test]
    fn a_cpu_that_evicted_a_line_no_longer_counts_as_its_holder() {
        let topology = Topology::SERVER_128;
        let platform = SimPlatform::new(topology.clone(), Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = |cpu: usize, write: bool| line_charge(&platform, cpu, SharedLine::frame_meta(0, 10), write);
        charge(0, true);
        sim.set_cpu(0);
        platform.touch_pages(1_000_000, topology.l2_share_bytes() / 4096);
        assert_eq!(charge(1, false), cal.line_llc_ns, "CPU 0's L2 no longer has it: the LLC does");
        assert_eq!(charge(1, true), cal.line_local_ns, "no other holder to invalidate");
        assert_eq!(sim.stats().line_transfers, 0);
    }

    #[test]
    fn tables_sized_up_front_charge_what_grown_ones_do() {
        let charges = |reserved: bool| {
            let platform = SimPlatform::with_layout(Topology::SERVER_128, Calibration::XEON, MetadataLayout::Pagealloc);
            if reserved {
                platform.reserve_for_zones(&[0..1 << 16, 1 << 16..1 << 20]);
            }
            let mut rng = crate::rng::SplitMix64::new(7);
            let charged: Vec<u64> = (0..20_000)
                .map(|_| {
                    let cpu = (rng.next_u64() % 128) as usize;
                    let (zone, frame) = ((rng.next_u64() % 2) as u16, (rng.next_u64() % (1 << 16)) as u32);
                    if rng.next_u64().is_multiple_of(4) {
                        platform.handle().set_cpu(cpu);
                        platform.touch_pages(rng.next_u64() % (1 << 20), 1);
                        platform.handle().clock_ns(cpu)
                    } else {
                        line_charge(
                            &platform,
                            cpu,
                            SharedLine::frame_meta(zone, frame),
                            rng.next_u64().is_multiple_of(2),
                        )
                    }
                })
                .collect();
            (charged, platform.handle().stats())
        };
        let (grown, reserved) = (charges(false), charges(true));
        assert_eq!(grown.0, reserved.0);
        assert_eq!(grown.1, reserved.1);
        assert!(grown.1.line_misses > 0 && grown.1.line_transfers > 0, "the touches met every case");
    }

    #[test]
    fn frames_share_a_line_under_our_layout_and_not_under_linuxs() {
        let cal = Calibration::XEON;
        for (layout, neighbour_ns) in
            [(MetadataLayout::Pagealloc, cal.line_local_ns), (MetadataLayout::LinuxStructPage, cal.line_memory_ns)]
        {
            let platform = SimPlatform::with_layout(Topology::flat(1), Calibration::XEON, layout);
            line_charge(&platform, 0, SharedLine::frame_meta(0, 0), true);
            assert_eq!(line_charge(&platform, 0, SharedLine::frame_meta(0, 1), true), neighbour_ns, "{layout:?}");
        }
    }
}
