//! The 2023 seed's pair benchmarks on the 128-CPU machine: `pcp-sctp` and `pcp-unix` (tasks
//! pinned), and `pcp-pairs-roles` (the same pairs at each task placement).

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use super::simulate::{cache_miss_pct, pcp_metrics, simulate, Setup};
use crate::run::{RunReport, TopologyKind, WorkloadKind};
use crate::workload::{PairKind, Pairs, Workload};

/// One of the 2023 seed's pair benchmarks as we run it on the 128-CPU machine.
struct PairBench {
    kind: PairKind,
    /// Column prefix in `pcp-pairs-roles`.
    name: &'static str,
    /// CPUs running pairs pinned or trading CPUs (two per pair; co-located runs use half).
    cpus: usize,
    message_bytes: u64,
}

/// netperf SCTP_STREAM_MANY: 64 pairs.
const SCTP_PAIRS: PairBench = PairBench { kind: PairKind::Netperf, name: "sctp", cpus: 128, message_bytes: 4096 };
/// lmbench3 AF_UNIX: 16 pairs.
const UNIX_PAIRS: PairBench = PairBench { kind: PairKind::Unix, name: "unix", cpus: 32, message_bytes: 65_536 };

impl PairBench {
    /// Runs the benchmark for `duration_ms` with its tasks placed as `placement` says.
    fn run(
        &self,
        (preset, seed, machine): (&str, u64, Option<&crate::machine::SimMachine>),
        duration_ms: u64,
        placement: Placement,
    ) -> Result<(Pairs, RunReport), String> {
        let (role_swap_ns, co_located) = match placement {
            Placement::Pinned => (None, false),
            Placement::Swapping(interval_ns) => (Some(interval_ns), false),
            Placement::CoLocated => (None, true),
        };
        let setup = Setup {
            workload: match self.kind {
                PairKind::Netperf => WorkloadKind::NetperfPairs,
                PairKind::Unix => WorkloadKind::UnixPairs,
            },
            topology: TopologyKind::Server128,
            // The same pairs either way: co-located, one CPU each.
            cpus: if co_located { self.cpus / 2 } else { self.cpus },
            memory_gib: 64,
            duration_ms,
            machine: machine.cloned(),
        };
        let machine = super::simulate::machine(&setup);
        let workload = Pairs { role_swap_ns, co_located, ..Pairs::new(self.kind, self.message_bytes) }
            .with_costs(&machine.kernel, &machine.calibration);
        let report = simulate(&setup, &workload, preset, seed, false)?;
        Ok((workload, report))
    }

    /// One row of the seed's table.
    fn row(&self, job: &Job<'_>) -> Result<Vec<Row>, String> {
        let &Job { preset, quick, seed, machine, .. } = job;
        let (workload, report) = self.run((preset, seed, machine), if quick { 4 } else { 20 }, Placement::Pinned)?;
        Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics: pcp_metrics(&report, "score") }])
    }
}

pub(super) fn sctp(job: &Job<'_>) -> Result<Vec<Row>, String> {
    SCTP_PAIRS.row(job)
}

pub(super) fn unix(job: &Job<'_>) -> Result<Vec<Row>, String> {
    UNIX_PAIRS.row(job)
}

/// Where a pair's two tasks run.
#[derive(Clone, Copy)]
enum Placement {
    /// Each on its own CPU for the whole run.
    Pinned,
    /// On two CPUs, trading them at this mean interval.
    Swapping(u64),
    /// Both on one CPU, taking turns.
    CoLocated,
}

impl Placement {
    fn label(self) -> String {
        match self {
            Placement::Pinned => "pinned".into(),
            Placement::Swapping(ns) if ns >= 1_000_000 => format!("{}ms", ns / 1_000_000),
            Placement::Swapping(ns) => format!("{}us", ns / 1_000),
            Placement::CoLocated => "co-located".into(),
        }
    }
}

/// Placements swept by `pcp-pairs-roles`: pinned, trading CPUs every 10 ms or 1 ms on
/// average, and co-located. Not fitted values: the seed does not say where its tasks ran,
/// so the experiment sweeps from never moving to sharing one CPU.
const PAIR_PLACEMENTS: &[Placement] =
    &[Placement::Pinned, Placement::Swapping(10_000_000), Placement::Swapping(1_000_000), Placement::CoLocated];

/// Patch 9's explanation of patch 7's regression, tested: the SCTP and AF_UNIX pairs (as in
/// `pcp-sctp` and `pcp-unix`) at each placement of [`PAIR_PLACEMENTS`]. One row per
/// placement; columns prefixed by workload.
pub(super) fn pairs_roles(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, bar, machine, .. } = job;
    let mut rows = Vec::new();
    for &placement in PAIR_PLACEMENTS {
        let label = placement.label();
        let mut metrics = BTreeMap::new();
        let mut params = BTreeMap::new();
        for bench in [SCTP_PAIRS, UNIX_PAIRS] {
            let prefix = bench.name;
            bar.set_message(format!("{preset}, {prefix}, {label}"));
            // Full size: about ten swaps at the slowest interval (quick: one or two).
            let (workload, report) = bench.run((preset, seed, machine), if quick { 20 } else { 100 }, placement)?;
            params.insert(prefix, workload.params());
            metrics.insert(format!("{prefix}_score"), report.work_per_sec);
            metrics.insert(format!("{prefix}_cache_miss_pct"), cache_miss_pct(&report));
            metrics.insert(format!("{prefix}_free_high"), report.free_high as f64);
            metrics.insert(format!("{prefix}_lock_contend_pct"), report.lock_contend_pct);
            metrics.insert(format!("{prefix}_alloc_zone"), report.alloc_zone_pages as f64);
            metrics.insert(format!("{prefix}_pcp_pages_avg"), report.pcp_pages_avg);
        }
        rows.push(Row {
            preset: format!("{preset} {label}"),
            params: serde_json::json!({ "preset": preset, "placement": label, "workloads": params }),
            metrics,
        });
    }
    Ok(rows)
}
