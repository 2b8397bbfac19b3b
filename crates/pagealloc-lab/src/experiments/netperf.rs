//! `highorder-netperf-tcp`: the 2022 follow-up's netperf TCP pair on a small-cache machine at
//! three message sizes, with the top-5 frame reuse of the largest.

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use super::simulate::{cache_miss_pct, simulate, Setup};
use crate::run::{TopologyKind, WorkloadKind};
use crate::workload::{PairKind, Pairs};

pub(super) fn netperf_tcp(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, bar, machine, .. } = job;
    let mut metrics = BTreeMap::new();
    let mut top = Vec::new();
    for message_bytes in [64u64, 1024, 16_384] {
        bar.set_message(format!("{preset}, {message_bytes} B"));
        let setup = Setup {
            workload: WorkloadKind::NetperfPairs,
            topology: TopologyKind::SmallCache,
            cpus: 2,
            memory_gib: 4,
            duration_ms: if quick { 20 } else { 100 },
            machine: machine.cloned(),
        };
        let machine = super::simulate::machine(&setup);
        let workload = Pairs::new(PairKind::Netperf, message_bytes).with_costs(&machine.kernel, &machine.calibration);
        let report = simulate(&setup, &workload, preset, seed, message_bytes == 16_384)?;
        metrics.insert(format!("score_{message_bytes}"), report.work_per_sec * message_bytes as f64 * 8.0 / 1e6);
        metrics.insert(format!("cache_miss_pct_{message_bytes}"), cache_miss_pct(&report));
        if message_bytes == 16_384 {
            top = report.top_pfn_reuse;
        }
    }
    for (rank, (_, count)) in top.iter().enumerate() {
        metrics.insert(format!("top_pfn_reuse_{}", rank + 1), *count as f64);
    }
    Ok(vec![Row { preset: preset.into(), params: serde_json::json!({ "message_bytes": [64, 1024, 16384] }), metrics }])
}
