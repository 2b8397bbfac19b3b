//! `pcp-kbuild`: the 2023 seed's kernel build on the 224-CPU machine, one row per preset.

use indicatif::ProgressBar;

use super::registry::Row;
use super::simulate::{pcp_metrics, simulate, Setup};
use crate::run::{TopologyKind, WorkloadKind};
use crate::workload::{Kbuild, Workload};

pub(super) fn kbuild(preset: &str, quick: bool, seed: u64, _bar: &ProgressBar) -> Result<Vec<Row>, String> {
    let setup = Setup {
        workload: WorkloadKind::Kbuild,
        topology: TopologyKind::Server224,
        cpus: 224,
        memory_gib: 64,
        duration_ms: 60_000,
    };
    let workload =
        Kbuild { processes_per_cpu: if quick { 6 } else { Kbuild::default().processes_per_cpu }, ..Kbuild::default() }
            .with_costs(&super::simulate::machine(&setup).kernel);
    let report = simulate(&setup, &workload, preset, seed, false)?;
    Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics: pcp_metrics(&report, "build_time") }])
}
