//! The cost model's hardware constants. A run takes them from its machine (a seed machine's
//! citations or a measured profile, built by `pagealloc-lab`'s `machine` module), unchanged
//! by any experiment (no per-experiment fitting). [`Calibration::XEON`] is a fixed,
//! physically plausible set for this crate's own tests; no experiment uses it.

use serde::Serialize;

use crate::bandwidth::BandwidthCurve;
use crate::topology::Distance;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub name: &'static str,
    /// A cache line already held by this CPU (L1/L2 hit).
    pub line_local_ns: u64,
    /// Line last held by the SMT sibling (shared L1/L2).
    pub line_smt_ns: u64,
    /// Line held by another core of the socket: core-to-core transfer through the LLC/mesh,
    /// the transfer alone (a locked RMW on the line pays `atomic_rmw_ns` on top).
    /// Measured core-to-core CAS latency on Skylake-SP to Sapphire Rapids is 45-60 ns.
    pub line_same_socket_ns: u64,
    /// Line held by a core of the socket under another LLC instance (another core complex
    /// die on AMD EPYC): the transfer crosses the socket's I/O die.
    pub line_other_llc_ns: u64,
    /// Line held on the other socket (UPI): 110-135 ns measured on 2-socket Xeons.
    pub line_other_socket_ns: u64,
    /// A line no core holds but the socket's LLC does (a metadata line evicted from the L2):
    /// load-to-use latency of the LLC, 30-35 ns measured on Ice Lake-SP and Sapphire Rapids.
    pub line_llc_ns: u64,
    /// A line from DRAM (cold metadata, never touched or evicted from the LLC): loaded local
    /// memory latency, 100-120 ns measured on the same parts. A single dependent miss gets
    /// no help from prefetching, unlike streaming a whole page.
    pub line_memory_ns: u64,
    /// An atomic read-modify-write on a line already held (lock acquire, refcount): measured
    /// 6-8 ns for uncontended xchg/cmpxchg on Xeon-class cores.
    pub atomic_rmw_ns: u64,
    /// Touching a 4 KiB page in this CPU's L2 (64 lines at ~2 cycles each with prefetch).
    pub page_l2_hit_ns: u64,
    /// Touching a 4 KiB page in the socket's LLC (or another core's L2 on the socket): ~64
    /// lines at LLC bandwidth, ~30-40 GB/s per core.
    pub page_llc_hit_ns: u64,
    /// Touching a 4 KiB page from DRAM: ~10-15 GB/s per core with prefetching, one CPU alone
    /// on its socket's memory.
    pub page_miss_ns: u64,
    /// Writing a 4 KiB page whose lines another core's L2 holds (it read or wrote them last):
    /// every line's copy there is fetched or invalidated core to core, not read from the LLC.
    pub page_other_l2_write_ns: u64,
    /// Reading a 4 KiB page another core's L2 holds, written there: its lines come core to core.
    pub page_other_l2_read_ns: u64,
    /// How the socket's memory bandwidth is shared: what a page from memory costs each CPU
    /// when several of the socket stream from memory at once, relative to `page_miss_ns`.
    pub memory_sharing: BandwidthCurve,
    /// One increment of a CPU-local counter (a vm event, a NUMA event diff), picoseconds:
    /// below a nanosecond, so kept finer and charged with the remainder carried.
    pub percpu_counter_update_ps: u64,
}

impl Calibration {
    /// A fixed set for the simulator's own tests (no experiment uses it).
    pub const XEON: Calibration = Calibration {
        name: "xeon-2s",
        line_local_ns: 1,
        line_smt_ns: 15,
        line_same_socket_ns: 50,
        // One LLC per socket on these parts: never charged.
        line_other_llc_ns: 50,
        line_other_socket_ns: 120,
        line_llc_ns: 35,
        line_memory_ns: 110,
        atomic_rmw_ns: 7,
        page_l2_hit_ns: 30,
        page_llc_hit_ns: 110,
        page_miss_ns: 300,
        // As from the LLC, and memory unshared: this legacy set predates both.
        page_other_l2_write_ns: 110,
        page_other_l2_read_ns: 110,
        memory_sharing: BandwidthCurve::UNSHARED,
        // Not charged by this legacy set: machine profiles carry the measured cost.
        percpu_counter_update_ps: 0,
    };

    /// Cost of getting a line last held at `distance`.
    pub fn line_transfer_ns(&self, distance: Distance) -> u64 {
        match distance {
            Distance::SameCpu => self.line_local_ns,
            Distance::SmtSibling => self.line_smt_ns,
            Distance::SameSocket => self.line_same_socket_ns,
            Distance::SameSocketOtherLlc => self.line_other_llc_ns,
            Distance::OtherSocket => self.line_other_socket_ns,
        }
    }
}
