//! A machine for the simulator, from a machine profile: its topology, its hardware costs
//! (`pagealloc_sim::Calibration`) and the kernel's costs around and inside the allocator
//! ([`KernelCosts`]). `pagelab calibrate` measures a profile; `--machine FILE` reads one.
//!
//! - `capture`: `pagelab machine capture`, the host as a machine file without timing;
//! - `hardware`: topology and calibration from the profile's host and measured constants;
//! - `kernel_costs`: what the workloads and the allocator calls charge besides data movement;
//! - `seed_parts`: the seeds' parts' published figures, each with its source;
//! - `seeds`: the built-in machines: the reference host as measured, the seeds' machines
//!   with cited hardware and the reference host's kernel scaled by clock.

pub mod capture;
mod hardware;
pub mod host;
pub mod kernel_costs;
pub mod listing;
pub mod profile;
mod seed_hardware;
mod seed_parts;
pub mod seeds;
mod sysfs_text;

pub use kernel_costs::{CallCosts, KernelCosts};

use pagealloc_sim::{Calibration, Topology};

use crate::machine::profile::{MachineProfile, Measurement};

/// A simulated machine grounded in a profile (named by its topology's name).
#[derive(Clone, Debug)]
pub struct SimMachine {
    pub topology: Topology,
    pub calibration: Calibration,
    pub kernel: KernelCosts,
    /// The host's /proc/zoneinfo as the profile captured it (profiles only): its nodes,
    /// zones and memory, for `run --machine-memory`.
    pub zoneinfo: Option<std::sync::Arc<str>>,
}

impl SimMachine {
    /// The machine a profile describes; a constant it lacks is an error naming it.
    pub fn from_profile(profile: &MachineProfile, name: &str) -> Result<SimMachine, String> {
        let constants = Constants(profile);
        let topology = hardware::topology(&profile.host, name)?;
        let calibration = hardware::calibration(&constants, name)?;
        let kernel = KernelCosts::derive(&constants, &calibration)?;
        let zoneinfo = (!profile.host.zoneinfo.trim().is_empty()).then(|| profile.host.zoneinfo.as_str().into());
        Ok(SimMachine { topology, calibration, kernel, zoneinfo })
    }

    /// Reads `path` as a profile (see `pagelab calibrate`).
    pub fn read(path: &std::path::Path) -> Result<SimMachine, String> {
        let profile = MachineProfile::read(path)?;
        let name = path.file_stem().map_or("profile".into(), |stem| stem.to_string_lossy().into_owned());
        SimMachine::from_profile(&profile, &name).map_err(|error| format!("{}: {error}", path.display()))
    }
}

/// The largest cost a profile may give, ns (10 s): beyond it a value is a unit or a typing
/// error, and sums of such costs could overflow a clock.
pub const MAX_COST_NS: f64 = 1e10;

/// A profile's constants by name, each required where asked for.
pub(crate) struct Constants<'a>(&'a MachineProfile);

impl Constants<'_> {
    pub(crate) fn get(&self, name: &str) -> Option<&Measurement> {
        self.0.constant(name)
    }

    pub(crate) fn curve(&self, name: &str) -> Option<&crate::machine::profile::Curve> {
        self.0.curve(name)
    }

    /// A constant's value, which must be present, finite, positive and at most
    /// [`MAX_COST_NS`].
    pub(crate) fn value(&self, name: &str) -> Result<f64, String> {
        let measurement = self
            .get(name)
            .ok_or_else(|| format!("the profile has no {name} (run pagelab calibrate as root, with perf installed)"))?;
        if !(measurement.value.is_finite() && measurement.value > 0.0) {
            return Err(format!("{name} = {}: a cost must be positive", measurement.value));
        }
        if measurement.value > MAX_COST_NS {
            return Err(format!("{name} = {}: no cost here exceeds {MAX_COST_NS} ns", measurement.value));
        }
        Ok(measurement.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::profile::{CacheInfo, CpuPlace, HostInfo};

    fn profile() -> MachineProfile {
        let text = include_str!("../../profiles/reference-host.json");
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_profile_missing_or_spoiling_a_constant_is_refused_by_name() {
        let mut missing = profile();
        missing.constants.retain(|(name, _)| name != "kernel_alloc_order0_ns");
        let error = SimMachine::from_profile(&missing, "test").unwrap_err();
        assert!(error.contains("kernel_alloc_order0_ns"), "{error}");
        let mut negative = profile();
        negative.constants.iter_mut().find(|(name, _)| name == "line_memory_ns").unwrap().1.value = -3.0;
        let error = SimMachine::from_profile(&negative, "test").unwrap_err();
        assert!(error.contains("line_memory_ns") && error.contains("positive"), "{error}");
        let mut cheap_fault = profile();
        cheap_fault.constants.iter_mut().find(|(name, _)| name == "page_fault1_page_ns").unwrap().1.value = 10.0;
        assert!(SimMachine::from_profile(&cheap_fault, "test").unwrap_err().contains("page_fault1_page_ns"));
    }

    #[test]
    fn a_wake_up_on_another_cpu_is_charged_apart_from_the_message_it_carries() {
        let value = |profile: &MachineProfile, name: &str| profile.constant(name).unwrap().value.round() as u64;
        let measured = profile();
        let machine = SimMachine::from_profile(&measured, "test").unwrap();
        let cross = value(&measured, "unix_cross_cpu_ns");
        assert_eq!(machine.kernel.unix_cross_cpu_ns, cross);
        assert_eq!(machine.kernel.tcp_cross_cpu_ns, value(&measured, "tcp_cross_cpu_ns"));
        assert_eq!(machine.kernel.wake_other_cpu_ns, value(&measured, "wake_other_cpu_ns") - cross);
        // A profile of two CPUs without the cross-CPU message is refused; one of one CPU
        // has neither, and its wake-ups cost a switch.
        let mut without = measured.clone();
        without.constants.retain(|(name, _)| name != "tcp_cross_cpu_ns");
        assert!(SimMachine::from_profile(&without, "test").unwrap_err().contains("tcp_cross_cpu_ns"));
        let mut one_cpu = measured.clone();
        one_cpu.constants.retain(|(name, _)| !name.ends_with("cross_cpu_ns") && name != "wake_other_cpu_ns");
        let machine = SimMachine::from_profile(&one_cpu, "test").unwrap();
        assert_eq!((machine.kernel.unix_cross_cpu_ns, machine.kernel.tcp_cross_cpu_ns), (0, 0));
        assert_eq!(machine.kernel.wake_other_cpu_ns, machine.kernel.switch_same_cpu_ns);
        // A difference of measurements may be 0, but never negative.
        let mut negative = measured;
        negative.constants.iter_mut().find(|(name, _)| name == "unix_cross_cpu_ns").unwrap().1.value = -1.0;
        assert!(SimMachine::from_profile(&negative, "test").unwrap_err().contains("unix_cross_cpu_ns"));
    }

    #[test]
    fn the_host_topology_comes_from_packages_cores_and_caches() {
        let cache =
            |level, size_kib| CacheInfo { level, kind: "Unified".into(), size_kib, shared_cpu_list: "0".into() };
        let place = |cpu, package, core| CpuPlace { cpu, package, core };
        let mut host = HostInfo {
            kernel: "6.18".into(),
            cpu_model: "test".into(),
            clock_mhz: 2000.0,
            // Two packages of two cores with two threads each.
            cpus: (0..8).map(|cpu| place(cpu, (cpu / 2 % 2) as u32, (cpu % 2) as u32)).collect(),
            caches: vec![cache(2, 1024), cache(3, 32768)],
            zoneinfo: String::new(),
        };
        // Package 0 is CPUs 0, 1, 4 and 5, sharing one L3.
        host.caches[1].shared_cpu_list = "0-1,4-5".into();
        let topology = hardware::topology(&host, "t").unwrap();
        assert_eq!((topology.sockets, topology.cores_per_socket, topology.threads_per_core), (2, 2, 2));
        assert_eq!((topology.l2_bytes_per_core, topology.llc_bytes_per_socket), (1 << 20, 32 << 20));
        // An L3 shared by one core's two threads: two of them per package.
        host.caches[1].shared_cpu_list = "0,4".into();
        assert_eq!(hardware::topology(&host, "t").unwrap().llc_bytes_per_socket, 64 << 20);
        // Three cores in one package and one in the other.
        let mut lopsided = host.clone();
        lopsided.cpus = (0..4).map(|cpu| place(cpu, u32::from(cpu == 3), cpu as u32)).collect();
        assert!(hardware::topology(&lopsided, "t").unwrap_err().contains("symmetric"));
        host.cpus.pop();
        assert!(hardware::topology(&host, "t").unwrap_err().contains("symmetric"));
        host.cpus.clear();
        assert!(hardware::topology(&host, "t").is_err());
    }
}
