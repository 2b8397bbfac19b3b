//! The simulated machine's state: per-CPU clocks, locks, line coherence, the L2s and LLCs,
//! page residency and the statistics. The lock, line and page models add its methods.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::calendar::RmwCalendar;
use super::coherence::LineTable;
use super::faults::Faults;
use super::locks::LockTable;
use super::stats::SimStats;
use crate::cache_group::CacheGroup;
use crate::cache_key::CacheKey;
use crate::calibration::Calibration;
use crate::metadata_layout::MetadataLayout;
use crate::topology::{Distance, Topology};
use crate::DeterministicHasher;

/// A CPU's place, looked up instead of divided out on every touch.
#[derive(Clone, Copy)]
pub(super) struct CpuPlace {
    pub(super) socket: u16,
    /// Its LLC instance, numbered across the machine.
    pub(super) llc: u16,
    /// Its core, numbered across the machine (SMT siblings share it).
    pub(super) core: u32,
}

pub(super) struct SimState {
    /// Process-unique: a handle checks it names this simulation, not another that took the
    /// same slot number on another host thread.
    pub(super) id: u64,
    pub(super) topology: Topology,
    pub(super) places: Vec<CpuPlace>,
    pub(super) calibration: Calibration,
    pub(super) clocks_ns: Vec<u64>,
    /// Per CPU, picoseconds of counter updates charged but not yet a whole nanosecond.
    pub(super) counter_remainder_ps: Vec<u64>,
    pub(super) current: usize,
    pub(super) locks: LockTable,
    pub(super) lines: LineTable,
    /// Each line's atomic RMWs in simulated time.
    pub(super) line_rmws: HashMap<CacheKey, RmwCalendar, BuildHasherDefault<DeterministicHasher>>,
    /// The RMWs on workload lock words that do not take the lock, by lock id.
    pub(super) workload_rmws: HashMap<u16, RmwCalendar, BuildHasherDefault<DeterministicHasher>>,
    pub(super) layout: MetadataLayout,
    /// Private L2 share per CPU: page data and shared lines.
    pub(super) l2: CacheGroup,
    /// Shared LLC per LLC instance (one per socket, or one per core complex die).
    pub(super) llc: CacheGroup,
    /// Per pfn, 1 + the CPU whose L2 holds the page (one at a time: touches are writes), or
    /// 0: an array, as pages number in the millions.
    pub(super) l2_owner: Vec<u16>,
    /// Per CPU, its last page transfer from memory: (start, end) in simulated ns.
    pub(super) memory_transfers: Vec<(u64, u64)>,
    /// Per socket, its CPUs.
    pub(super) socket_cpus: Vec<Vec<u16>>,
    pub(super) stats: SimStats,
    /// Inside `SimHandle::observe`: hooks charge nothing and change no ownership.
    pub(super) observing: bool,
    /// Seeded fault injection; `None` (the default) injects nothing and draws nothing.
    pub(super) faults: Option<Faults>,
}

impl SimState {
    /// A machine with `topology`'s CPUs, all clocks at 0 and every cache empty.
    pub(super) fn new(topology: Topology, calibration: Calibration, layout: MetadataLayout) -> SimState {
        let nr_cpus = topology.cpus() as usize;
        SimState {
            clocks_ns: vec![0; nr_cpus],
            counter_remainder_ps: vec![0; nr_cpus],
            current: 0,
            locks: LockTable::default(),
            lines: LineTable::default(),
            line_rmws: HashMap::default(),
            workload_rmws: HashMap::default(),
            layout,
            l2: CacheGroup::new(nr_cpus, topology.l2_share_bytes()),
            llc: CacheGroup::new(topology.llcs() as usize, topology.llc_bytes()),
            l2_owner: Vec::new(),
            memory_transfers: vec![(0, 0); nr_cpus],
            socket_cpus: (0..topology.sockets)
                .map(|socket| {
                    (0..topology.cpus()).filter(|&cpu| topology.place(cpu).0 == socket).map(|cpu| cpu as u16).collect()
                })
                .collect(),
            stats: SimStats::default(),
            observing: false,
            faults: None,
            id: 0,
            places: (0..topology.cpus()).map(|cpu| place_of(&topology, cpu)).collect(),
            topology,
            calibration,
        }
    }

    /// Sizes every table indexed by pfn or line number for `sizes` at once.
    pub(super) fn reserve(&mut self, sizes: &crate::table_sizes::TableSizes) {
        self.lines.reserve(sizes);
        self.l2.reserve(sizes);
        self.llc.reserve(sizes);
        crate::dense_table::reserve(&mut self.l2_owner, sizes.pages);
    }

    /// A CPU's LLC instance.
    pub(super) fn llc_of(&self, cpu: usize) -> usize {
        usize::from(self.places[cpu].llc)
    }
}

/// How far apart CPUs `a` and `b` of `places` are.
pub(super) fn distance_between(places: &[CpuPlace], a: usize, b: usize) -> Distance {
    let (place_a, place_b) = (places[a], places[b]);
    if a == b {
        Distance::SameCpu
    } else if place_a.core == place_b.core {
        Distance::SmtSibling
    } else if place_a.socket != place_b.socket {
        Distance::OtherSocket
    } else if place_a.llc == place_b.llc {
        Distance::SameSocket
    } else {
        Distance::SameSocketOtherLlc
    }
}

fn place_of(topology: &Topology, cpu: u32) -> CpuPlace {
    let (socket, core) = topology.place(cpu);
    let narrow = |value: u32| u16::try_from(value).expect("sockets and LLC instances fit a u16");
    CpuPlace { socket: narrow(socket), llc: narrow(topology.llc(cpu)), core }
}
