//! `highorder-trunc`: the 2022 follow-up's truncate of a long run of page cache on one CPU.

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use super::simulate::{simulate, Setup};
use crate::run::{TopologyKind, WorkloadKind};
use crate::workload::{Trunc, Workload};

pub(super) fn trunc(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, machine, .. } = job;
    let setup = Setup {
        workload: WorkloadKind::Trunc,
        topology: TopologyKind::Server80,
        cpus: 1,
        memory_gib: 8,
        duration_ms: 60_000,
        machine: machine.cloned(),
    };
    let workload = Trunc { file_pages: if quick { 1 << 16 } else { 1 << 19 }, ..Trunc::default() }
        .with_costs(&super::simulate::machine(&setup).kernel);
    let report = simulate(&setup, &workload, preset, seed, false)?;
    let mut metrics = BTreeMap::new();
    metrics.insert("elapsed".into(), report.recorded.get("truncate_s").copied().unwrap_or(0.0));
    metrics.insert("lock_contend_pct".into(), report.lock_contend_pct);
    Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics }])
}
