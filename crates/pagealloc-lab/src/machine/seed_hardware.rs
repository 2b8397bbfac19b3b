//! What a seed machine's hardware is: its parts' published figures, each with its source,
//! and how a core-to-core latency was measured. The figures themselves are in
//! `seed_parts`; what the simulator makes of them is in `seeds`.

use pagealloc_sim::Topology;

/// A cited figure.
#[derive(Clone, Copy, Debug)]
pub struct Cited {
    pub value: f64,
    pub source: &'static str,
}

pub(super) const fn cited(value: f64, source: &'static str) -> Cited {
    Cited { value, source }
}

/// How a published core-to-core latency was measured, which says whether each one-way trip
/// includes a locked read-modify-write (the simulator charges `atomic_rmw_ns` apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferMethod {
    /// A compare-and-swap ping-pong's round trip / 2: one CAS per trip.
    CasPingPong,
    /// A load of a line held in another core's cache, as Intel MLC's core-to-core
    /// latencies measure it: no locked instruction.
    MlcLoad,
}

/// A cited cache-line transfer between two CPUs, with its method.
#[derive(Clone, Copy, Debug)]
pub struct CitedTransfer {
    pub value: f64,
    pub source: &'static str,
    pub method: TransferMethod,
}

impl CitedTransfer {
    /// The transfer alone, ns: less the locked RMW where the method executes one.
    pub fn transfer_ns(&self, locked_rmw_ns: f64) -> u64 {
        let locked = if self.method == TransferMethod::CasPingPong { locked_rmw_ns } else { 0.0 };
        (self.value - locked).round().max(1.0) as u64
    }
}

pub(super) const fn cas(value: f64, source: &'static str) -> CitedTransfer {
    CitedTransfer { value, source, method: TransferMethod::CasPingPong }
}

pub(super) const fn mlc_load(value: f64, source: &'static str) -> CitedTransfer {
    CitedTransfer { value, source, method: TransferMethod::MlcLoad }
}

/// A seed machine's published hardware figures.
#[derive(Clone, Debug)]
pub struct SeedHardware {
    pub topology: Topology,
    pub cpu: &'static str,
    pub base_clock_mhz: Cited,
    pub line_smt_ns: CitedTransfer,
    pub line_same_socket_ns: CitedTransfer,
    /// Two cores of a socket under two LLC instances; `None` on parts with one LLC per
    /// socket.
    pub line_other_llc_ns: Option<CitedTransfer>,
    pub line_other_socket_ns: CitedTransfer,
    pub llc_ns: Cited,
    pub memory_ns: Cited,
    pub locked_rmw_cycles: Cited,
    /// Single-core load bandwidth from memory, GB/s; `None` where none was found.
    pub load_gb_per_s: Option<Cited>,
    /// A socket's memory bandwidth by cores streaming; `None` where none was found (memory
    /// then unshared).
    pub socket_bandwidth: Option<SocketBandwidth>,
}

/// A socket's published memory bandwidth.
#[derive(Clone, Copy, Debug)]
pub enum SocketBandwidth {
    /// Load bandwidth, GB/s, by cores streaming at once, as `(cores, GB/s)` ascending from 1
    /// core, the last every core of the socket.
    Curve { load_gb_per_s: &'static [(u32, f64)], source: &'static str },
    /// Only the whole socket's, GB/s, every core streaming.
    Saturated(Cited),
}
