//! `highorder-page-fault1`: the 2022 follow-up's page_fault1 processes on the 80-CPU machine,
//! a column per process count.

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use super::simulate::{simulate, Setup};
use crate::run::{TopologyKind, WorkloadKind};
use crate::workload::{FaultMode, PageFault, Workload};

pub(super) fn page_fault1(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, bar, machine, .. } = job;
    let counts: &[usize] = if quick { &[2, 8] } else { &[2, 8, 30, 79] };
    let mut metrics = BTreeMap::new();
    let setup_of = |processes| Setup {
        workload: WorkloadKind::PageFault1,
        topology: TopologyKind::Server80,
        cpus: processes,
        memory_gib: 32,
        duration_ms: if quick { 10 } else { 40 },
        machine: machine.cloned(),
    };
    let machine = super::simulate::machine(&setup_of(counts[0]));
    let workload = PageFault::new(FaultMode::Process, crate::preset_arg::release_of(preset)).on_machine(&machine);
    for &processes in counts {
        bar.set_message(format!("{preset}, {processes} processes"));
        let setup = setup_of(processes);
        let report = simulate(&setup, &workload, preset, seed, false)?;
        metrics.insert(format!("faults_per_sec_{processes}"), report.work_per_sec);
    }
    Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics }])
}
