//! A machine for the simulator, from a machine profile: its topology, its hardware costs
//! (`pagealloc_sim::Calibration`) and the kernel's costs around and inside the allocator
//! ([`KernelCosts`]). `pagelab calibrate` measures a profile; `--machine FILE` reads one.
//!
//! - `hardware`: topology and calibration from the profile's host and measured constants;
//! - `kernel_costs`: what the workloads and the allocator calls charge besides data movement;
//! - `seeds`: the built-in machines: the reference host as measured, the seeds' machines
//!   with cited hardware and the reference host's kernel scaled by clock.

mod hardware;
pub mod kernel_costs;
pub mod listing;
pub mod seeds;

pub use kernel_costs::{CallCosts, KernelCosts};

use pagealloc_sim::{Calibration, Topology};

use crate::calibrate::profile::{MachineProfile, Measurement};

/// A simulated machine grounded in a profile (named by its topology's name).
#[derive(Clone, Debug)]
pub struct SimMachine {
    pub topology: Topology,
    pub calibration: Calibration,
    pub kernel: KernelCosts,
}

impl SimMachine {
    /// The machine a profile describes; a constant it lacks is an error naming it.
    pub fn from_profile(profile: &MachineProfile, name: &str) -> Result<SimMachine, String> {
        let constants = Constants(profile);
        let topology = hardware::topology(&profile.host, name)?;
        let calibration = hardware::calibration(&constants, name)?;
        let kernel = KernelCosts::derive(&constants, &calibration)?;
        Ok(SimMachine { topology, calibration, kernel })
    }

    /// Reads `path` as a profile (see `pagelab calibrate`).
    pub fn read(path: &std::path::Path) -> Result<SimMachine, String> {
        let profile = MachineProfile::read(path)?;
        let name = path.file_stem().map_or("profile".into(), |stem| stem.to_string_lossy().into_owned());
        SimMachine::from_profile(&profile, &name).map_err(|error| format!("{}: {error}", path.display()))
    }
}

/// A profile's constants by name, each required where asked for.
pub(crate) struct Constants<'a>(&'a MachineProfile);

impl Constants<'_> {
    pub(crate) fn get(&self, name: &str) -> Option<&Measurement> {
        self.0.constant(name)
    }

    /// A constant's value, which must be present, finite and positive.
    pub(crate) fn value(&self, name: &str) -> Result<f64, String> {
        let measurement = self.get(name).ok_or_else(|| format!("the profile has no {name} (run pagelab calibrate)"))?;
        if !(measurement.value.is_finite() && measurement.value > 0.0) {
            return Err(format!("{name} = {}: a cost must be positive", measurement.value));
        }
        Ok(measurement.value)
    }
}
