//! The seeds' machines as built-in profiles, and the reference host's.
//!
//! Hardware costs are cited per machine (each with its source below); where no figure was
//! found for the part, the nearest microarchitecture's is used and the source says so. The
//! rules that turn a citation into a constant (docs/simulator.md):
//! - a line transfer is a published core-to-core latency: a CAS ping-pong's round trip / 2
//!   less the part's locked RMW (each trip executes one, which the simulator charges apart),
//!   or an Intel MLC core-to-core load latency as published (a load: no locked instruction); at
//!   least 1 ns;
//! - a locked RMW is its published latency in cycles at the base clock;
//! - touching a page from memory costs 4 KiB at the published single-core load bandwidth
//!   (zeroing a page first reads it: write-allocate);
//! - touching a page in the L2 or the LLC, and a counter update, cost the reference host's
//!   measured values scaled by clock ratio (no public per-part figure);
//! - the kernel's costs (fault path, allocator path per call, socket messages, map and unmap)
//!   are the reference host's measured ones scaled by clock ratio: reference base clock /
//!   the part's base clock. Instructions per cycle differ between cores; the rule ignores it;
//! - copying a page costs the part's page from memory times the reference host's ratio of
//!   copying to zeroing a page;
//! - a wake-up of a task on another CPU costs a context switch: the reference host's
//!   cross-CPU wake-up is a guest's (a halted vCPU woken through the hypervisor), not a
//!   bare-metal figure.

use std::sync::OnceLock;

use pagealloc_sim::{BandwidthCurve, Calibration, Topology};

use super::{KernelCosts, SimMachine};
use crate::machine::profile::MachineProfile;

/// The reference host's measured profile (`pagelab calibrate` on the 2-core development
/// guest), from which the seed machines' kernel costs are scaled.
const REFERENCE_PROFILE: &str = include_str!("../../profiles/reference-host.json");

/// The reference host's profile as measured, parsed once.
pub fn reference_profile() -> &'static MachineProfile {
    static PROFILE: OnceLock<MachineProfile> = OnceLock::new();
    PROFILE.get_or_init(|| serde_json::from_str(REFERENCE_PROFILE).expect("the built-in profile parses"))
}

/// The reference host as measured (its own topology: 2 CPUs) and its clock, MHz: the
/// built-in profile, parsed once.
fn reference_and_clock() -> &'static (SimMachine, f64) {
    static REFERENCE: OnceLock<(SimMachine, f64)> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let profile = reference_profile();
        assert!(profile.host.clock_mhz > 0.0, "the reference profile records its clock");
        let machine = SimMachine::from_profile(profile, "reference-host").expect("the built-in profile is complete");
        (machine, profile.host.clock_mhz)
    })
}

/// The reference host as measured (its own topology: 2 CPUs).
pub fn reference() -> &'static SimMachine {
    &reference_and_clock().0
}

fn reference_clock_mhz() -> f64 {
    reference_and_clock().1
}

/// A page handed core to core costs the reference host's measured count of line transfers
/// at the part's core-to-core transfer: a page is its lines moved, some at once.
fn by_transfer(host_page_ns: u64, host: &Calibration, part_transfer_ns: u64) -> u64 {
    let lines = host_page_ns as f64 / host.line_same_socket_ns.max(1) as f64;
    (lines * part_transfer_ns as f64).round().max(1.0) as u64
}

/// A cited figure.
#[derive(Clone, Copy, Debug)]
pub struct Cited {
    pub value: f64,
    pub source: &'static str,
}

const fn cited(value: f64, source: &'static str) -> Cited {
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

const fn cas(value: f64, source: &'static str) -> CitedTransfer {
    CitedTransfer { value, source, method: TransferMethod::CasPingPong }
}

const fn mlc_load(value: f64, source: &'static str) -> CitedTransfer {
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

impl SeedHardware {
    /// The socket's bandwidth shared among the CPUs streaming: each gets the single-core
    /// rate (a page in `page_miss_ns`) until together they would exceed the socket's cited
    /// bandwidth, then an equal share of it.
    /// With a published curve, each CPU's cost per page at n cores is n / the curve's GB/s,
    /// relative to one core's; past the curve's last point (every core of the socket) the
    /// socket gives no more, shared equally.
    fn memory_sharing(&self, page_miss_ns: u64) -> BandwidthCurve {
        match self.socket_bandwidth {
            Some(SocketBandwidth::Curve { load_gb_per_s, .. }) => {
                let mut points: Vec<(u32, f64)> =
                    load_gb_per_s.iter().map(|&(cores, gb_per_s)| (cores, f64::from(cores) / gb_per_s)).collect();
                let &(last_cores, last_ns) = points.last().expect("a published curve has points");
                points.push((2 * last_cores, 2.0 * last_ns));
                BandwidthCurve::from_per_cpu_ns(&points).expect("published curves are ascending and positive")
            }
            Some(SocketBandwidth::Saturated(socket)) => {
                let single_gb_per_s = 4096.0 / page_miss_ns as f64;
                let socket_cpus = self.topology.cores_per_socket * self.topology.threads_per_core;
                BandwidthCurve::from_socket_bandwidth(single_gb_per_s, socket.value.max(single_gb_per_s), socket_cpus)
            }
            None => BandwidthCurve::UNSHARED,
        }
    }

    /// The simulator machine: cited hardware, the reference host's kernel scaled by clock.
    pub fn machine(&self) -> SimMachine {
        let reference = reference();
        let clock_ratio = reference_clock_mhz() / self.base_clock_mhz.value;
        let scaled = |ns: u64| (ns as f64 * clock_ratio).round() as u64;
        let atomic_ns = self.locked_rmw_cycles.value * 1000.0 / self.base_clock_mhz.value;
        let transfer = |cited: CitedTransfer| cited.transfer_ns(atomic_ns);
        let same_socket_ns = transfer(self.line_same_socket_ns);
        let page_miss_ns = match self.load_gb_per_s {
            Some(bandwidth) => (4096.0 / bandwidth.value).round() as u64,
            None => reference.calibration.page_miss_ns,
        };
        let hardware = &reference.calibration;
        let calibration = Calibration {
            name: self.topology.name,
            line_local_ns: 1,
            line_smt_ns: transfer(self.line_smt_ns),
            line_same_socket_ns: transfer(self.line_same_socket_ns),
            line_other_llc_ns: transfer(self.line_other_llc_ns.unwrap_or(self.line_same_socket_ns)),
            line_other_socket_ns: transfer(self.line_other_socket_ns),
            line_llc_ns: self.llc_ns.value.round() as u64,
            line_memory_ns: self.memory_ns.value.round() as u64,
            atomic_rmw_ns: atomic_ns.round().max(1.0) as u64,
            page_l2_hit_ns: scaled(hardware.page_l2_hit_ns),
            page_llc_hit_ns: scaled(hardware.page_llc_hit_ns),
            page_miss_ns,
            page_other_l2_write_ns: by_transfer(hardware.page_other_l2_write_ns, hardware, same_socket_ns),
            page_other_l2_read_ns: by_transfer(hardware.page_other_l2_read_ns, hardware, same_socket_ns),
            memory_sharing: self.memory_sharing(page_miss_ns),
            percpu_counter_update_ps: scaled(hardware.percpu_counter_update_ps),
        };
        let mut kernel = reference.kernel.scaled(clock_ratio);
        // The reference host's cross-CPU wake-up wakes a halted vCPU through its hypervisor;
        // on bare metal a wake-up is taken to cost a context switch.
        kernel.wake_other_cpu_ns = kernel.switch_same_cpu_ns;
        // A message between two CPUs moves socket state between their caches: the reference
        // host's measured cost scaled by the part's core-to-core latency over the host's.
        let line_ratio = calibration.line_same_socket_ns as f64 / hardware.line_same_socket_ns.max(1) as f64;
        let by_lines = |ns: u64| (ns as f64 * line_ratio).round() as u64;
        kernel.unix_cross_cpu_ns = by_lines(reference.kernel.unix_cross_cpu_ns);
        kernel.tcp_cross_cpu_ns = by_lines(reference.kernel.tcp_cross_cpu_ns);
        // Copying a page is bound by memory bandwidth, not the clock: the part's page from
        // memory times the reference host's copy-to-zero ratio.
        let copy_ratio = reference.kernel.page_copy_ns as f64 / reference.calibration.page_miss_ns as f64;
        kernel.page_copy_ns = (page_miss_ns as f64 * copy_ratio).round() as u64;
        // So is the kernel's zeroing of a page: the part's page from memory times the
        // reference host's ratio of its kernel's zeroing to its own.
        let clear_ratio = reference.kernel.clear_page_ns as f64 / reference.calibration.page_miss_ns as f64;
        kernel.clear_page_ns = (page_miss_ns as f64 * clear_ratio).round() as u64;
        // A TLB shootdown on bare metal: the cited caller's cost; each target's loss is the
        // reference host's, in the proportion of the cited caller's cost to the host's.
        let host_caller_ns = reference.kernel.shootdown_caller_ns.first().map_or(0, |&(_, ns)| ns);
        let target_ratio = SHOOTDOWN_CALLER_NS[0].1 as f64 / host_caller_ns.max(1) as f64;
        kernel.shootdown_caller_ns = SHOOTDOWN_CALLER_NS.to_vec();
        kernel.shootdown_target_ns = reference
            .kernel
            .shootdown_target_ns
            .iter()
            .map(|&(targets, ns)| (targets, (ns as f64 * target_ratio.min(1.0)).round() as u64))
            .collect();
        SimMachine { topology: self.topology.clone(), calibration, kernel, zoneinfo: None }
    }
}

/// A TLB shootdown's cost to the caller on bare metal, by targets: (targets, ns).
pub const SHOOTDOWN_CALLER_NS: [(u64, u64); 2] = [(1, 775), (3, 910)];
pub const SHOOTDOWN_SOURCE: &str = "bare-metal Haswell, MADV_DONTNEED and touch of one page with 1 and 3 other \
     threads busy, 661 ns alone, 1436 and 1571 ns (the unpatched kernel): N. Amit, \
     lore.kernel.org/lkml/20190525082203.6531-1-namit@vmware.com";

const NV: &str = "github.com/nviennot/core-to-core-latency (CAS ping-pong, round trip / 2)";
const MLC_LEUVEN: &str = "github.com/hpcleuven/VscDocumentation, Intel MLC outputs";
const CSIT_HSW: &str =
    "github.com/FDio/csit docs/report/introduction/test_environment_sut_calib_hsw.rst (Intel MLC, E5-2699 v3)";
const INSTLAT: &str = "github.com/InstLatx64/InstLatx64, InstLatX64 LOCK ADD [m64], r64 latency";
const KERNCRAFT: &str = "github.com/RRZE-HPC/kerncraft machine files (likwid-bench single-core load)";
const AT_SKYLAKE_SP: &str = "anandtech.com/show/11544 (Skylake-SP vs EPYC, memory subsystem)";

/// Where the 2-socket EPYC 9965 (Turin) figures come from.
const IL_TURIN: &str = "github.com/InstLatx64/InstLatx64 AuthenticAMD0B10F10_K20_TurinD_03_CPUID (EPYC 9965)";
const NV_GENOA: &str =
    "nearest found, 2 x EPYC 9274F (Genoa, Zen 4): github.com/nviennot/core-to-core-latency issue 132";

/// The seeds' machines, and a 2-socket EPYC 9005 (Turin) of 2025, by topology.
pub const SEED_MACHINES: [SeedHardware; 7] = [
    SeedHardware {
        topology: Topology::SERVER_48,
        cpu: "Xeon E5-2670 v3 (Haswell-EP)",
        base_clock_mhz: cited(2300.0, "E5-2670 v3 and E5-2699 v3 @ 2.30GHz (CSIT testbed spec)"),
        line_smt_ns: cas(7.6, "nearest found, Broadwell-EP E5-2695 v4: NV"),
        line_same_socket_ns: mlc_load(47.0, CSIT_HSW),
        line_other_llc_ns: None,
        line_other_socket_ns: mlc_load(108.0, CSIT_HSW),
        llc_ns: cited(20.75, "E5-2660 v3: InstLatx64 HaswellEP2_NewMemLat (AIDA64)"),
        memory_ns: cited(99.0, CSIT_HSW),
        locked_rmw_cycles: cited(19.0, INSTLAT),
        load_gb_per_s: Some(cited(8.93, "E5-2695 v3: kerncraft HaswellEP_E5-2695v3.yml")),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 8.93), (2, 17.89), (3, 26.48), (4, 34.57), (5, 42.12), (6, 48.79),
                (7, 54.25), (8, 57.96), (9, 59.89), (10, 60.79), (11, 61.25), (12, 61.53),
            ],
            source: "nearest found, E5-2695 v3 (14 cores, its first 12): kerncraft HaswellEP_E5-2695v3.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_88,
        cpu: "Xeon E5-2699 v4 (Broadwell-EP)",
        base_clock_mhz: cited(2200.0, "E5-2699 v4 @ 2.20GHz (its model string)"),
        line_smt_ns: cas(7.6, NV),
        line_same_socket_ns: cas(44.0, "E5-2695 v4: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(118.0, "E5-2695 v4: NV"),
        llc_ns: cited(34.5, "E5-2699 v4, 16-32 MB region, 27-42 ns (midpoint): anandtech.com/show/11544"),
        memory_ns: cited(95.0, AT_SKYLAKE_SP),
        locked_rmw_cycles: cited(19.0, INSTLAT),
        load_gb_per_s: Some(cited(11.18, "E5-2697 v4: kerncraft BroadwellEP_E5-2697v4_CoD.yml")),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 11.18), (2, 20.81), (3, 28.81), (4, 34.03), (5, 35.76), (6, 35.69),
                (7, 35.50), (8, 35.32), (9, 35.17), (18, 69.98),
            ],
            source: "nearest found, E5-2697 v4 (18 cores, Cluster-on-Die: one domain of 9, then the socket): \
                     kerncraft BroadwellEP_E5-2697v4_CoD.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_80,
        cpu: "Xeon Gold 6248 class (Cascade Lake-SP)",
        base_clock_mhz: cited(2500.0, "Gold 6248 @ 2.50GHz: kerncraft CascadelakeSP_Gold-6248_SNC.yml"),
        line_smt_ns: cas(7.6, "8275CL: NV"),
        line_same_socket_ns: cas(47.0, "8275CL: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(134.0, "8275CL: NV"),
        llc_ns: cited(30.8, "Skylake-SP mesh L3, Intel-stated 77 cycles at 2.5 GHz: anandtech.com/show/11550"),
        memory_ns: cited(80.8, MLC_LEUVEN),
        locked_rmw_cycles: cited(18.0, INSTLAT),
        load_gb_per_s: Some(cited(12.96, KERNCRAFT)),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 12.96), (2, 25.66), (3, 37.66), (4, 47.04), (5, 54.00), (6, 58.37),
                (7, 60.24), (8, 60.91), (9, 61.07), (10, 61.43), (20, 125.17),
            ],
            source: "Gold 6248 (SNC: one domain of 10, then the socket): kerncraft \
                     CascadelakeSP_Gold-6248_SNC.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_128,
        cpu: "Xeon Platinum 8360Y class (Ice Lake-SP)",
        base_clock_mhz: cited(2400.0, "Platinum 8360Y @ 2.40GHz: kerncraft IcelakeSP_Platinum-8360Y.yml"),
        line_smt_ns: cas(8.1, "8375C: NV"),
        line_same_socket_ns: cas(51.0, "8375C: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(108.0, "8375C: NV"),
        llc_ns: cited(32.1, "nearest found, Skylake-SP mesh L3: 77 cycles at 2.4 GHz"),
        memory_ns: cited(89.2, MLC_LEUVEN),
        locked_rmw_cycles: cited(20.0, INSTLAT),
        load_gb_per_s: Some(cited(15.37, KERNCRAFT)),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 15.37), (2, 29.3), (3, 41.72), (4, 47.98), (6, 58.18), (8, 67.36), (10, 73.3),
                (12, 84.42), (14, 91.63), (15, 93.53), (16, 93.93), (17, 93.93), (18, 93.93), (36, 194.88),
            ],
            source: "Platinum 8360Y (two domains of 18, then the socket; 17 and 18 cores' 93.15 and 92.45 \
                     taken as 16's, more cores never slower): kerncraft pull 141 IcelakeSP_Platinum-8360Y.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_224,
        cpu: "Xeon Platinum 8480+ (Sapphire Rapids)",
        base_clock_mhz: cited(2000.0, "8480+ @ 2.00GHz: github.com/quattor/template-library-standard"),
        line_smt_ns: cas(8.1, "nearest found, Ice Lake-SP 8375C: NV"),
        line_same_socket_ns: cas(51.0, "nearest found, Ice Lake-SP 8375C: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(108.0, "nearest found, Ice Lake-SP 8375C: NV"),
        llc_ns: cited(38.5, "nearest found, Skylake-SP mesh L3: 77 cycles at 2.0 GHz"),
        memory_ns: cited(89.2, "nearest found, Ice Lake-SP 8360Y: github.com/hpcleuven/VscDocumentation, Intel MLC"),
        locked_rmw_cycles: cited(
            18.0,
            "Golden Cove (Alder Lake P-core) lock add 17.93 cycles: github.com/InstLatx64/InstLatx64",
        ),
        load_gb_per_s: Some(cited(14.49, "Platinum 8470: kerncraft SapphireRapids_Platinum-8470.yml")),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 14.49), (2, 28.11), (3, 39.39), (4, 50.84), (5, 59.63), (6, 65.12), (7, 68.12),
                (8, 69.10), (9, 69.26), (10, 69.26), (11, 69.26), (12, 69.26), (13, 69.26),
                (26, 140.10), (39, 215.63), (52, 304.60),
            ],
            source: "nearest found, Platinum 8470 (52 cores, SNC4: one domain of 13, then 2, 3 and 4 domains; \
                     10 to 13 cores' 69.12 to 68.71 taken as 9's): kerncraft pull 141 SapphireRapids_Platinum-8470.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SMALL_CACHE_8,
        cpu: "Core i7-6700K class (Skylake, 4 cores x 2 threads, 8 MiB LLC)",
        base_clock_mhz: cited(4000.0, "i7-6700K 4.0 GHz base: hexus.net review"),
        line_smt_ns: cas(6.9, "i7-6700K: NV"),
        line_same_socket_ns: cas(20.0, "i7-6700K: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(20.0, "one socket: never used"),
        llc_ns: cited(10.49, "i7-7700K: InstLatx64 Kabylake_NewMemLat (AIDA64)"),
        memory_ns: cited(64.5, "i7-7700K: InstLatx64 Kabylake_NewMemLat (AIDA64)"),
        locked_rmw_cycles: cited(18.0, INSTLAT),
        load_gb_per_s: None,
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[(1, 25.4), (2, 42.0), (4, 42.0)],
            source: "i7-6700K overclocked to 4.4 GHz with DDR4-3233, the author's own read test, flat from 2 \
                     threads (uncertain; no STREAM run found): rigaya34589.blog.fc2.com/blog-entry-660.html",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_768,
        cpu: "2 x EPYC 9965 (Turin, Zen 5c)",
        base_clock_mhz: cited(2250.0, IL_TURIN),
        line_smt_ns: cas(9.0, NV_GENOA),
        line_same_socket_ns: cas(22.5, NV_GENOA),
        line_other_llc_ns: Some(cas(100.0, NV_GENOA)),
        line_other_socket_ns: cas(197.0, NV_GENOA),
        llc_ns: cited(
            24.0,
            "nearest found, Genoa-X (Zen 4) L3: Milan-X's 50 cycles + 4 (chipsandcheese.com/p/genoa-x-server-v-cache-round-2), 54 cycles at 2.25 GHz",
        ),
        memory_ns: cited(
            130.0,
            "EPYC 9355P (Turin) NPS1: 2 x 9575F at over 220 ns in NPS0, nearly 90 ns more \
             (chipsandcheese.com/p/evaluating-uniform-memory-access)",
        ),
        locked_rmw_cycles: cited(19.66, "Ryzen 9 9950X (Zen 5), InstLatX64 LOCK ADD [m64], r64: github.com/InstLatx64/InstLatx64"),
        load_gb_per_s: None,
        socket_bandwidth: Some(SocketBandwidth::Saturated(cited(
            468.0,
            "nearest found, 2 x EPYC 9755 (Turin) NPS1 STREAM copy 936354 MB/s, halved: \
             github.com/oracle-japan/ocitutorials content/hpc/benchmark/run-stream-e6",
        ))),
    },
];
/// The seed machine of `topology`, if it is one.
pub fn seed_machine(topology: &Topology) -> Option<SimMachine> {
    SEED_MACHINES.iter().find(|seed| seed.topology == *topology).map(SeedHardware::machine)
}

/// A machine of `topology` with the reference host's costs (a flat topology of any size).
pub fn reference_with(topology: Topology) -> SimMachine {
    // The reference host's zones are not this topology's.
    SimMachine { topology, zoneinfo: None, ..reference().clone() }
}

impl KernelCosts {
    /// Every cost times `ratio`.
    pub fn scaled(&self, ratio: f64) -> KernelCosts {
        let ns = |value: u64| (value as f64 * ratio).round() as u64;
        let calls = |calls: super::CallCosts| super::CallCosts {
            alloc_ns: calls.alloc_ns.map(ns),
            free_ns: calls.free_ns.map(ns),
        };
        let sizes = |sizes: &[(u64, u64)]| sizes.iter().map(|&(bytes, value)| (bytes, ns(value))).collect();
        KernelCosts {
            kernel_calls: calls(self.kernel_calls),
            own_calls: calls(self.own_calls),
            fault_ns: ns(self.fault_ns),
            map_unmap_ns: ns(self.map_unmap_ns),
            unix_message_ns: sizes(&self.unix_message_ns),
            tcp_message_ns: sizes(&self.tcp_message_ns),
            unix_cross_cpu_ns: ns(self.unix_cross_cpu_ns),
            tcp_cross_cpu_ns: ns(self.tcp_cross_cpu_ns),
            wake_other_cpu_ns: ns(self.wake_other_cpu_ns),
            switch_same_cpu_ns: ns(self.switch_same_cpu_ns),
            process_spawn_ns: ns(self.process_spawn_ns),
            file_create_ns: ns(self.file_create_ns),
            page_cache_fill_ns: ns(self.page_cache_fill_ns),
            page_cache_truncate_ns: ns(self.page_cache_truncate_ns),
            page_copy_ns: ns(self.page_copy_ns),
            clear_page_ns: ns(self.clear_page_ns),
            shootdown_caller_ns: self.shootdown_caller_ns.iter().map(|&(targets, cost)| (targets, ns(cost))).collect(),
            shootdown_target_ns: self.shootdown_target_ns.iter().map(|&(targets, cost)| (targets, ns(cost))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_and_every_seed_machine_build() {
        let reference = reference();
        assert_eq!(reference.topology.cpus(), 2);
        assert!(reference.kernel.fault_ns > 0);
        for seed in &SEED_MACHINES {
            let machine = seed.machine();
            assert_eq!(machine.topology, seed.topology);
            assert!(machine.calibration.line_memory_ns > machine.calibration.line_llc_ns, "{}", seed.cpu);
            assert!(machine.kernel.fault_ns > 0, "{}", seed.cpu);
        }
    }

    #[test]
    fn kernel_costs_scale_by_the_clock_ratio() {
        let reference = reference();
        let haswell = SEED_MACHINES.iter().find(|seed| seed.topology == Topology::SERVER_48).unwrap();
        let machine = haswell.machine();
        let ratio = machine.kernel.fault_ns as f64 / reference.kernel.fault_ns as f64;
        let expected = reference_clock_mhz() / haswell.base_clock_mhz.value;
        assert!((ratio - expected).abs() < 0.01, "{ratio} against {expected}");
        assert_eq!(machine.calibration.atomic_rmw_ns, 8, "19 cycles at 2.3 GHz");
        assert_eq!(machine.calibration.page_miss_ns, 459, "4 KiB at 8.93 GB/s");
    }

    /// calibrate's ping-pong loads and stores, with no locked instruction: the reference
    /// host's transfer is its time per turn as measured.
    #[test]
    fn the_reference_hosts_transfer_is_its_ping_pong_as_measured() {
        let measured = reference_profile().constant("line_same_socket_ns").unwrap().value;
        assert_eq!(reference().calibration.line_same_socket_ns, measured.round() as u64);
    }

    /// A CAS ping-pong's trip includes a locked RMW, which the simulator charges apart; an
    /// MLC load latency has none, so it is the transfer as published.
    #[test]
    fn transfers_lose_the_locked_rmw_only_where_the_method_executes_one() {
        let haswell = SEED_MACHINES.iter().find(|seed| seed.topology == Topology::SERVER_48).unwrap();
        let machine = haswell.machine();
        assert_eq!(haswell.line_same_socket_ns.method, TransferMethod::MlcLoad);
        assert_eq!(machine.calibration.line_same_socket_ns, 47, "MLC's 47 ns as published");
        assert_eq!(machine.calibration.line_other_socket_ns, 108);
        assert_eq!(haswell.line_smt_ns.method, TransferMethod::CasPingPong);
        assert_eq!(machine.calibration.line_smt_ns, 1, "7.6 ns less 19 cycles at 2.3 GHz, at least 1");
        let broadwell = SEED_MACHINES.iter().find(|seed| seed.topology == Topology::SERVER_88).unwrap();
        assert_eq!(broadwell.machine().calibration.line_same_socket_ns, 44 - 9, "44 ns less 19 cycles at 2.2 GHz");
    }
}
