//! `pagelab machine capture`: the host as a machine file, in seconds and without root: its
//! topology and caches from sysfs and its nodes, zones and pagesets from /proc/zoneinfo, in
//! the format `pagelab calibrate` writes. Nothing is timed: the costs are the reference
//! host's measured ones, each marked as not measured here, until `pagelab calibrate`
//! replaces them with this host's.

use std::path::{Path, PathBuf};

use crate::machine::host::read_host;
use crate::machine::profile::{HostInfo, MachineProfile, Measurement};

#[derive(clap::Subcommand, Debug)]
pub enum MachineCommand {
    /// Write this host as a machine file (JSON): topology, caches and zones read now, costs
    /// borrowed from the reference host (marked so) until `pagelab calibrate` measures them.
    /// Use it with `--machine FILE` (and `--machine-memory`) on run, sweep, reproduce and
    /// replay.
    Capture {
        /// Where to write the machine file.
        #[arg(long, default_value = "machine.json")]
        out: PathBuf,
    },
}

/// What every borrowed constant's method starts with.
pub const BORROWED: &str = "not measured on this host: the reference host's measured value";

pub fn run(command: &MachineCommand) -> Result<(), String> {
    match command {
        MachineCommand::Capture { out } => {
            let profile = capture(read_host()?, now_s());
            write(&profile, out)?;
            let host = &profile.host;
            println!(
                "captured {}: {} CPUs in {} package(s), LLC {} KiB, {} zoneinfo lines",
                host.cpu_model,
                host.cpus.len(),
                host.packages(),
                host.llc_kib().unwrap_or(0),
                host.zoneinfo.lines().count()
            );
            println!(
                "wrote {} ({} costs borrowed from the reference host; `pagelab calibrate --out {}` measures them)",
                out.display(),
                profile.constants.len(),
                out.display()
            );
            Ok(())
        }
    }
}

/// `host` with the reference host's costs, each method marked as borrowed.
pub fn capture(host: HostInfo, measured_at_s: u64) -> MachineProfile {
    let constants = super::seeds::reference_profile()
        .constants
        .iter()
        .map(|(name, measurement)| {
            let method = format!("{BORROWED} ({})", measurement.method);
            (name.clone(), Measurement { method, ..measurement.clone() })
        })
        .collect();
    MachineProfile { format: MachineProfile::FORMAT, measured_at_s, host, constants, curves: Vec::new() }
}

fn write(profile: &MachineProfile, out: &Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(profile).map_err(|error| error.to_string())?;
    std::fs::write(out, text + "\n").map_err(|error| format!("{}: {error}", out.display()))?;
    // Read back as `--machine` reads it, so a file that will not simulate fails here.
    super::SimMachine::read(out).map(drop)
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::profile::{CacheInfo, CpuPlace};

    #[test]
    fn a_capture_keeps_the_host_and_marks_every_cost_as_borrowed() {
        let cache = |level, size_kib, shared: &str| CacheInfo {
            level,
            kind: "Unified".into(),
            size_kib,
            shared_cpu_list: shared.into(),
        };
        let host = HostInfo {
            kernel: "6.18".into(),
            cpu_model: "test".into(),
            clock_mhz: 3000.0,
            // One package of four cores with two threads each.
            cpus: (0..8).map(|cpu| CpuPlace { cpu, package: 0, core: (cpu % 4) as u32 }).collect(),
            caches: vec![cache(2, 1024, "0,4"), cache(3, 16384, "0-7")],
            zoneinfo: super::super::seeds::reference_profile().host.zoneinfo.clone(),
        };
        let profile = capture(host.clone(), 7);
        assert_eq!(profile.host, host);
        let reference = super::super::seeds::reference_profile();
        assert_eq!(profile.constants.len(), reference.constants.len());
        for ((name, borrowed), (reference_name, measured)) in profile.constants.iter().zip(&reference.constants) {
            assert_eq!((name, borrowed.value), (reference_name, measured.value));
            assert!(borrowed.method.starts_with(BORROWED), "{name}: {}", borrowed.method);
        }
        let dir = std::env::temp_dir().join(format!("pagelab-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("machine.json");
        write(&profile, &path).unwrap();
        let machine = super::super::SimMachine::read(&path).unwrap();
        assert_eq!(machine.topology.cpus(), 8);
        assert!(!host.zoneinfo.is_empty(), "the reference host's zoneinfo");
        assert_eq!((machine.topology.cores_per_socket, machine.topology.threads_per_core), (4, 2));
        assert!(machine.zoneinfo.is_some_and(|zoneinfo| zoneinfo.contains("Node 0, zone")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn this_host_captures_and_simulates() {
        let profile = capture(read_host().unwrap(), 0);
        let machine = super::super::SimMachine::from_profile(&profile, "host").unwrap();
        assert_eq!(machine.topology.cpus() as usize, profile.host.cpus.len());
    }
}
