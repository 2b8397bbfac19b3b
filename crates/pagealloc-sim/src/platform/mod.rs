//! The simulated machine as a `Platform`. Its state lives in a thread-local table on the
//! host thread that runs the simulation (hooks are hot: a thread-local borrow costs a few ns,
//! a mutex ten times more); the platform value is a handle to its slot.

mod calendar;
mod coherence;
mod faults;
mod hooks;
mod line_atomics;
mod locks;
mod pages;
mod shootdown;
mod slots;
mod state;
mod stats;
mod workload_words;

pub use faults::{FaultConfig, FaultStats, PPM};
pub use slots::{SimHandle, SimPlatform};
pub use stats::{LockClassStats, SimStats, WorkloadLockStats};

/// Up to 1024 CPUs per simulation: a 2-socket server of 192-core, 2-thread parts has 768.
pub const MAX_CPUS: usize = 1024;

/// Up to 8 sockets.
pub const MAX_SOCKETS: usize = 8;
/// LLC instances the simulator models (a line's LLC copies are a 32-bit mask).
pub const MAX_LLCS: usize = 32;

/// A test machine of `cpus` CPUs, all at one distance.
#[cfg(test)]
fn test_machine(cpus: u32) -> SimPlatform {
    SimPlatform::new(crate::topology::Topology::flat(cpus), crate::calibration::Calibration::XEON)
}
