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

pub use super::seed_hardware::{CitedTransfer, SeedHardware, SocketBandwidth};
pub use super::seed_parts::{SEED_MACHINES, SHOOTDOWN_CALLER_NS, SHOOTDOWN_SOURCE};
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
/// (`page_{write,read}_other_l2_lines`) at the part's core-to-core transfer: a page is its
/// lines moved, some at once.
fn by_transfer(lines_key: &str, part_transfer_ns: u64) -> u64 {
    let lines = reference_profile().constant(lines_key).expect("the built-in profile measures page handoffs").value;
    (lines * part_transfer_ns as f64).round().max(1.0) as u64
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
            page_other_l2_write_ns: by_transfer("page_write_other_l2_lines", same_socket_ns),
            page_other_l2_read_ns: by_transfer("page_read_other_l2_lines", same_socket_ns),
            memory_sharing: self.memory_sharing(page_miss_ns),
            percpu_counter_update_ps: scaled(hardware.percpu_counter_update_ps),
        };
        let mut kernel = reference.kernel.scaled(clock_ratio);
        // The reference host's cross-CPU wake-up wakes a halted vCPU through its hypervisor;
        // on bare metal a wake-up is taken to cost a context switch, and the waker's
        // interrupt (a register write there) nothing beside it.
        kernel.wake_other_cpu_ns = kernel.switch_same_cpu_ns;
        kernel.wake_waker_ns = 0;
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
            wake_waker_ns: ns(self.wake_waker_ns),
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
    use super::super::seed_hardware::TransferMethod;
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
