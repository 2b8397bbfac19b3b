//! `pcp-kbuild`: the 2023 seed's kernel build on the 224-CPU machine, one row per preset;
//! `pcp-kbuild-768`: the same build on a 2-socket EPYC 9965 (Turin) of 768 CPUs, which no
//! one has published.

use super::experiment::{Job, Row};
use super::simulate::{pcp_metrics, simulate, Setup};
use crate::run::{TopologyKind, WorkloadKind};
use crate::workload::{Kbuild, Workload};

/// The seed's machine's memory, GiB: its kbuild ran on a 224-CPU machine of this size.
const SEED_MEMORY_GIB: u64 = 64;

pub(super) fn kbuild(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, machine, .. } = job;
    let processes_per_cpu = if quick { 6 } else { Kbuild::default().processes_per_cpu };
    kbuild_on(TopologyKind::Server224, SEED_MEMORY_GIB, processes_per_cpu, (preset, seed, machine))
}

/// The build on the 768-CPU Turin with the seed machine's memory per CPU (64 GiB for 224
/// CPUs: 219 GiB). Each CPU runs fewer processes than `pcp-kbuild`'s 40 (10, 1 with
/// --quick), so that the run stays short: the build still ends with every CPU's last exits,
/// where the presets differ.
pub(super) fn kbuild_768(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, machine, .. } = job;
    let memory_gib = SEED_MEMORY_GIB * 768 / 224;
    kbuild_on(TopologyKind::Server768, memory_gib, if quick { 1 } else { 10 }, (preset, seed, machine))
}

fn kbuild_on(
    topology: TopologyKind,
    memory_gib: u64,
    processes_per_cpu: u64,
    (preset, seed, machine): (&str, u64, Option<&crate::machine::SimMachine>),
) -> Result<Vec<Row>, String> {
    let cpus = topology.topology(0).cpus() as usize;
    let setup = Setup {
        workload: WorkloadKind::Kbuild,
        topology,
        cpus,
        memory_gib,
        duration_ms: 60_000,
        machine: machine.cloned(),
    };
    let workload =
        Kbuild { processes_per_cpu, ..Kbuild::default() }.with_costs(&super::simulate::machine(&setup).kernel);
    let report = simulate(&setup, &workload, preset, seed, false)?;
    Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics: pcp_metrics(&report, "build_time") }])
}
