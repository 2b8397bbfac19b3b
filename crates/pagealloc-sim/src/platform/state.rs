//! The simulated machine's state: per-CPU clocks, locks, line coherence, the L2s and LLCs,
//! page residency and the statistics. The lock, line and page models add its methods.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use pagealloc::platform::LockId;

use super::coherence::LineTable;
use super::faults::Faults;
use super::locks::LockState;
use super::stats::SimStats;
use crate::cache_key::CacheKey;
use crate::cache_set::CacheSet;
use crate::calibration::Calibration;
use crate::l2_caches::L2Caches;
use crate::metadata_layout::MetadataLayout;
use crate::topology::Topology;
use crate::DeterministicHasher;

pub(super) struct SimState {
    /// Process-unique: a handle checks it names this simulation, not another that took the
    /// same slot number on another host thread.
    pub(super) id: u64,
    pub(super) topology: Topology,
    pub(super) calibration: Calibration,
    pub(super) clocks_ns: Vec<u64>,
    /// Per CPU, picoseconds of counter updates charged but not yet a whole nanosecond.
    pub(super) counter_remainder_ps: Vec<u64>,
    pub(super) current: usize,
    pub(super) locks: HashMap<LockId, LockState, BuildHasherDefault<DeterministicHasher>>,
    pub(super) lines: LineTable,
    /// When each line's last atomic RMW completes.
    pub(super) line_busy_until_ns: HashMap<CacheKey, u64, BuildHasherDefault<DeterministicHasher>>,
    pub(super) layout: MetadataLayout,
    /// Private L2 share per CPU: page data and shared lines.
    pub(super) l2: L2Caches,
    /// Shared LLC per socket.
    pub(super) llc: Vec<CacheSet>,
    /// Per pfn, 1 + the CPU whose L2 holds the page (one at a time: touches are writes), or
    /// 0: an array, as pages number in the millions.
    pub(super) l2_owner: Vec<u16>,
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
            locks: HashMap::default(),
            lines: LineTable::default(),
            line_busy_until_ns: HashMap::default(),
            layout,
            l2: L2Caches::new(nr_cpus, topology.l2_share_bytes()),
            llc: (0..topology.sockets).map(|_| CacheSet::new(topology.llc_bytes_per_socket)).collect(),
            l2_owner: Vec::new(),
            stats: SimStats::default(),
            observing: false,
            faults: None,
            id: 0,
            topology,
            calibration,
        }
    }
}
