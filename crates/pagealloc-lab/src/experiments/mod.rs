//! The seeds' experiments: presets x parameters run on the simulator, our table printed
//! beside the published one, JSON, CSV and an SVG figure written to an output directory.
//!
//! Every experiment uses the single calibration of `pagealloc-sim`; nothing is fitted per
//! experiment. The seeds measured Linux, so every reproduction charges frame metadata as
//! Linux lays it out (a 64-byte `struct page` per frame, [`REPRODUCTION_LAYOUT`]). Normalised
//! columns follow the seed (the first preset = 100).

mod ordered;
mod published;
mod svg;

use std::collections::BTreeMap;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::run::{run_sim, LayoutKind, RunArgs, RunReport, TopologyKind, WorkloadKind};
use crate::workload::{FaultMode, Kbuild, PageFault, PairKind, Pairs, Trunc, Workload};
use published::PublishedTable;

/// One of our rows: a preset (and parameters) with its metrics, named as the published
/// columns.
#[derive(Debug, Serialize)]
pub struct Row {
    pub preset: String,
    pub params: serde_json::Value,
    pub metrics: BTreeMap<String, f64>,
}

#[derive(Debug, Serialize)]
struct PublishedJson {
    source: &'static str,
    columns: &'static [&'static str],
    rows: Vec<(&'static str, &'static [f64])>,
}

#[derive(Debug, Serialize)]
struct ExperimentJson<'a> {
    experiment: &'static str,
    cpus: usize,
    seed: u64,
    quick: bool,
    calibration: pagealloc_sim::Calibration,
    metadata_layout: pagealloc_sim::MetadataLayout,
    rows: &'a [Row],
    published: PublishedJson,
}

/// The frame-metadata layout every reproduction models: the seeds ran Linux.
pub const REPRODUCTION_LAYOUT: LayoutKind = LayoutKind::Linux;

/// What an experiment's runs share.
struct Setup {
    workload: WorkloadKind,
    topology: TopologyKind,
    cpus: usize,
    memory_gib: u64,
    duration_ms: u64,
}

/// Runs one preset (quick?, seed, progress) and returns one row per parameter point.
type RunPreset = fn(&str, bool, u64, &ProgressBar) -> Result<Vec<Row>, String>;

pub struct Experiment {
    pub name: &'static str,
    pub summary: &'static str,
    published: &'static PublishedTable,
    presets: &'static [&'static str],
    run: RunPreset,
    /// CPUs of the machine.
    cpus: usize,
}

const PCP_PRESETS: &[&str] = &["base", "patch1", "patch3", "patch5", "patch7", "patch9"];

fn simulate(
    setup: &Setup,
    workload: &dyn Workload,
    preset: &str,
    seed: u64,
    top_reuse: bool,
) -> Result<RunReport, String> {
    let args = RunArgs {
        workload: setup.workload,
        cpus: setup.cpus,
        preset: preset.to_string(),
        real: false,
        topology: setup.topology,
        metadata_layout: REPRODUCTION_LAYOUT,
        duration_ms: Some(setup.duration_ms),
        memory_gib: setup.memory_gib,
        seed,
        order: 0,
        mode: "process".into(),
        message_bytes: 0,
        role_swap_us: None,
        co_located: false,
        format: "json".into(),
        top_reuse,
    };
    run_sim(workload, &args)
}

fn cache_miss_pct(report: &RunReport) -> f64 {
    report.sim.as_ref().map_or(0.0, |s| s.page_misses as f64 * 100.0 / s.page_touches.max(1) as f64)
}

/// The 2023 seed's columns from a run (raw: normalised later).
fn pcp_metrics(report: &RunReport, first: &str) -> BTreeMap<String, f64> {
    let mut metrics = BTreeMap::new();
    metrics.insert(first.to_string(), if first == "build_time" { report.elapsed_s } else { report.work_per_sec });
    metrics.insert("lock_contend_pct".into(), report.lock_contend_pct);
    metrics.insert("free_high".into(), report.free_high as f64);
    metrics.insert("alloc_zone".into(), report.alloc_zone_pages as f64);
    metrics.insert("cache_miss_pct".into(), cache_miss_pct(report));
    metrics.insert("pcp_pages_avg".into(), report.pcp_pages_avg);
    metrics.insert("pcp_pages_end".into(), report.pcp_pages_end as f64);
    if let Some(idle) = report.pcp_pages_after_idle {
        metrics.insert("pcp_pages_idle".into(), idle as f64);
    }
    metrics.insert("elapsed".into(), report.elapsed_s);
    metrics
}

fn kbuild(preset: &str, quick: bool, seed: u64, _bar: &ProgressBar) -> Result<Vec<Row>, String> {
    let setup = Setup {
        workload: WorkloadKind::Kbuild,
        topology: TopologyKind::Server224,
        cpus: 224,
        memory_gib: 64,
        duration_ms: 60_000,
    };
    let workload =
        Kbuild { processes_per_cpu: if quick { 6 } else { Kbuild::default().processes_per_cpu }, ..Kbuild::default() };
    let report = simulate(&setup, &workload, preset, seed, false)?;
    Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics: pcp_metrics(&report, "build_time") }])
}

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
        preset: &str,
        seed: u64,
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
        };
        let workload = Pairs { role_swap_ns, co_located, ..Pairs::new(self.kind, self.message_bytes) };
        let report = simulate(&setup, &workload, preset, seed, false)?;
        Ok((workload, report))
    }

    /// One row of the seed's table.
    fn row(&self, preset: &str, quick: bool, seed: u64) -> Result<Vec<Row>, String> {
        let (workload, report) = self.run(preset, seed, if quick { 4 } else { 20 }, Placement::Pinned)?;
        Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics: pcp_metrics(&report, "score") }])
    }
}

fn sctp(preset: &str, quick: bool, seed: u64, _bar: &ProgressBar) -> Result<Vec<Row>, String> {
    SCTP_PAIRS.row(preset, quick, seed)
}

fn unix(preset: &str, quick: bool, seed: u64, _bar: &ProgressBar) -> Result<Vec<Row>, String> {
    UNIX_PAIRS.row(preset, quick, seed)
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
fn pairs_roles(preset: &str, quick: bool, seed: u64, bar: &ProgressBar) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for &placement in PAIR_PLACEMENTS {
        let label = placement.label();
        let mut metrics = BTreeMap::new();
        let mut params = BTreeMap::new();
        for bench in [SCTP_PAIRS, UNIX_PAIRS] {
            let prefix = bench.name;
            bar.set_message(format!("{preset}, {prefix}, {label}"));
            // Full size: about ten swaps at the slowest interval (quick: one or two).
            let (workload, report) = bench.run(preset, seed, if quick { 20 } else { 100 }, placement)?;
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

fn trunc(preset: &str, quick: bool, seed: u64, _bar: &ProgressBar) -> Result<Vec<Row>, String> {
    let setup = Setup {
        workload: WorkloadKind::Trunc,
        topology: TopologyKind::Server80,
        cpus: 1,
        memory_gib: 8,
        duration_ms: 60_000,
    };
    let workload = Trunc { file_pages: if quick { 1 << 16 } else { 1 << 19 }, ..Trunc::default() };
    let report = simulate(&setup, &workload, preset, seed, false)?;
    let mut metrics = BTreeMap::new();
    metrics.insert("elapsed".into(), report.recorded.get("truncate_s").copied().unwrap_or(0.0));
    metrics.insert("lock_contend_pct".into(), report.lock_contend_pct);
    Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics }])
}

fn page_fault1(preset: &str, quick: bool, seed: u64, bar: &ProgressBar) -> Result<Vec<Row>, String> {
    let counts: &[usize] = if quick { &[2, 8] } else { &[2, 8, 30, 79] };
    let mut metrics = BTreeMap::new();
    let workload = PageFault::new(FaultMode::Process);
    for &processes in counts {
        bar.set_message(format!("{preset}, {processes} processes"));
        let setup = Setup {
            workload: WorkloadKind::PageFault1,
            topology: TopologyKind::Server80,
            cpus: processes,
            memory_gib: 32,
            duration_ms: if quick { 10 } else { 40 },
        };
        let report = simulate(&setup, &workload, preset, seed, false)?;
        metrics.insert(format!("faults_per_sec_{processes}"), report.work_per_sec);
    }
    Ok(vec![Row { preset: preset.into(), params: workload.params(), metrics }])
}

fn netperf_tcp(preset: &str, quick: bool, seed: u64, bar: &ProgressBar) -> Result<Vec<Row>, String> {
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
        };
        let workload = Pairs::new(PairKind::Netperf, message_bytes);
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

pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "pcp-kbuild",
        summary: "2023 PCP auto-tuning, kbuild on 224 CPUs: build time, zone lock contention, free_high, alloc_zone",
        published: &published::PCP_KBUILD,
        presets: PCP_PRESETS,
        run: kbuild,
        cpus: 224,
    },
    Experiment {
        name: "pcp-sctp",
        summary: "2023 PCP auto-tuning, netperf SCTP_STREAM_MANY, 64 pairs on 128 CPUs",
        published: &published::PCP_SCTP,
        presets: PCP_PRESETS,
        run: sctp,
        cpus: 128,
    },
    Experiment {
        name: "pcp-unix",
        summary: "2023 PCP auto-tuning, lmbench AF_UNIX, 16 pairs on a 128-CPU machine",
        published: &published::PCP_UNIX,
        presets: PCP_PRESETS,
        run: unix,
        cpus: 128,
    },
    Experiment {
        name: "pcp-pairs-roles",
        summary: "2023 PCP auto-tuning, patch 9's explanation tested: SCTP and AF_UNIX pairs whose tasks trade CPUs or share one",
        published: &published::PCP_PAIRS_ROLES,
        presets: &["base", "patch3", "patch7", "patch9"],
        run: pairs_roles,
        cpus: 128,
    },
    Experiment {
        name: "highorder-trunc",
        summary: "2022 high-order PCP follow-up, trunc: one CPU frees a long run of page cache",
        published: &published::HIGHORDER_TRUNC,
        presets: &["vanilla-5.17", "revert-highpcp", "highpcp-full"],
        run: trunc,
        cpus: 80,
    },
    Experiment {
        name: "highorder-page-fault1",
        summary: "2022 high-order PCP follow-up, page_fault1 processes on 80 CPUs",
        published: &published::HIGHORDER_PAGE_FAULT1,
        presets: &["vanilla-5.17", "highpcp-full"],
        run: page_fault1,
        cpus: 80,
    },
    Experiment {
        name: "highorder-netperf-tcp",
        summary: "2022 high-order PCP follow-up, netperf TCP on a small-cache machine, with top-5 frame reuse",
        published: &published::HIGHORDER_NETPERF_TCP,
        presets: &["vanilla-5.17", "revert-highpcp", "highpcp-full"],
        run: netperf_tcp,
        cpus: 8,
    },
];

/// Metrics shown normalised to the first preset (= 100), as the seeds print them.
fn normalised(column: &str) -> bool {
    !(column.contains("pct") || column.starts_with("top_pfn") || column.contains("pcp_pages"))
}

/// Rows with normalised metrics replaced by their ratio to the first row.
fn normalise(rows: &[Row]) -> Vec<BTreeMap<String, f64>> {
    let Some(first) = rows.first() else { return Vec::new() };
    rows.iter()
        .map(|row| {
            row.metrics
                .iter()
                .map(|(column, &value)| {
                    let shown = if normalised(column) {
                        let base = first.metrics.get(column).copied().unwrap_or(0.0);
                        if base == 0.0 {
                            0.0
                        } else {
                            value * 100.0 / base
                        }
                    } else {
                        value
                    };
                    (column.clone(), shown)
                })
                .collect()
        })
        .collect()
}

/// Published values as displayed: normalised columns relative to the first row.
fn published_shown(table: &PublishedTable) -> Vec<Vec<Option<f64>>> {
    let base_row = table.rows.first().map(|r| r.1);
    table
        .rows
        .iter()
        .map(|(_, values)| {
            table
                .columns
                .iter()
                .zip(values.iter())
                .enumerate()
                .map(|(i, (column, value))| {
                    Some(match base_row {
                        Some(base) if normalised(column) && base[i] != 0.0 => value * 100.0 / base[i],
                        _ => *value,
                    })
                })
                .collect()
        })
        .collect()
}

fn print_tables(experiment: &Experiment, rows: &[Row]) {
    let table = experiment.published;
    let shown = normalise(rows);
    println!("\n== {}: {}", experiment.name, experiment.summary);
    println!("published ({}), normalised columns as printed there:", table.source);
    print!("  {:<16}", "preset");
    for column in table.columns {
        print!(" {column:>18}");
    }
    println!();
    // The 2022 tables print absolute values; they are shown relative to the first row too.
    for ((preset, _), values) in table.rows.iter().zip(published_shown(table)) {
        print!("  {preset:<16}");
        for value in values.into_iter().flatten() {
            print!(" {value:>18.1}");
        }
        println!();
    }
    println!("ours (simulated; normalised columns: first preset = 100):");
    print!("  {:<16}", "preset");
    for column in table.columns {
        print!(" {column:>18}");
    }
    println!("  extra");
    for (row, metrics) in rows.iter().zip(&shown) {
        print!("  {:<16}", row.preset);
        for column in table.columns {
            match metrics.get(*column) {
                Some(value) => print!(" {value:>18.1}"),
                None => print!(" {:>18}", "-"),
            }
        }
        let extra: Vec<String> = metrics
            .iter()
            .filter(|(column, _)| !table.columns.contains(&column.as_str()))
            .map(|(column, value)| format!("{column}={value:.1}"))
            .collect();
        println!("  {}", extra.join(" "));
    }
}

fn write_outputs(experiment: &Experiment, rows: &[Row], quick: bool, seed: u64, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let json = ExperimentJson {
        experiment: experiment.name,
        cpus: experiment.cpus,
        seed,
        quick,
        calibration: pagealloc_sim::Calibration::XEON,
        metadata_layout: REPRODUCTION_LAYOUT.layout(),
        rows,
        published: PublishedJson {
            source: experiment.published.source,
            columns: experiment.published.columns,
            rows: experiment.published.rows.to_vec(),
        },
    };
    let json_path = out.join(format!("{}.json", experiment.name));
    std::fs::write(&json_path, serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?)
        .map_err(|e| format!("{}: {e}", json_path.display()))?;
    let csv_path = out.join(format!("{}.csv", experiment.name));
    let mut writer = csv::Writer::from_path(&csv_path).map_err(|e| format!("{}: {e}", csv_path.display()))?;
    writer.write_record(["source", "preset", "metric", "value"]).map_err(|e| e.to_string())?;
    for row in rows {
        for (metric, value) in &row.metrics {
            writer.write_record(["ours", &row.preset, metric, &value.to_string()]).map_err(|e| e.to_string())?;
        }
    }
    for (preset, values) in experiment.published.rows {
        for (metric, value) in experiment.published.columns.iter().zip(values.iter()) {
            writer.write_record(["published", preset, metric, &value.to_string()]).map_err(|e| e.to_string())?;
        }
    }
    writer.flush().map_err(|e| e.to_string())?;
    // The figure has a line per row of ours, beside the published row of its preset (a row
    // label is the preset name, then any parameter point: "patch7 10ms").
    let presets: Vec<&str> = rows.iter().map(|row| row.preset.as_str()).collect();
    let published_by_preset: Vec<Vec<Option<f64>>> = {
        let shown = published_shown(experiment.published);
        presets
            .iter()
            .map(|label| {
                let preset = label.split(' ').next().unwrap_or(label);
                experiment
                    .published
                    .rows
                    .iter()
                    .position(|(name, _)| *name == preset)
                    .map(|i| shown[i].clone())
                    .unwrap_or_else(|| vec![None; experiment.published.columns.len()])
            })
            .collect()
    };
    let ours = normalise(rows);
    let figure = svg::figure(experiment.summary, experiment.published, &presets, &published_by_preset, &ours);
    let svg_path = out.join(format!("{}.svg", experiment.name));
    std::fs::write(&svg_path, figure).map_err(|e| format!("{}: {e}", svg_path.display()))?;
    Ok(())
}

pub fn find(name: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

/// Runs experiments (all when `names` is empty), printing tables and writing outputs. Each
/// preset of each experiment is one job; `jobs` of them run at once on host threads, and
/// tables come out in order as experiments complete. Results do not depend on `jobs`.
pub fn reproduce(names: &[String], quick: bool, seed: u64, out: &Path, jobs: usize) -> Result<(), String> {
    let chosen: Vec<&Experiment> = if names.is_empty() {
        EXPERIMENTS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| find(n).ok_or_else(|| format!("unknown experiment '{n}' (see `pagelab experiments`)")))
            .collect::<Result<_, _>>()?
    };
    // (position in `chosen`, experiment, preset): an experiment named twice runs twice.
    let runs: Vec<(usize, &Experiment, &str)> = chosen
        .iter()
        .enumerate()
        .flat_map(|(position, &experiment)| {
            experiment.presets.iter().map(move |&preset| (position, experiment, preset))
        })
        .collect();
    let bar = ProgressBar::new(runs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    ordered::run_ordered(
        runs.len(),
        jobs,
        |index| {
            let (_, experiment, preset) = runs[index];
            bar.set_message(format!("{}: {preset}", experiment.name));
            (experiment.run)(preset, quick, seed, &bar)
        },
        |index, result: Result<Vec<Row>, String>| -> Result<(), String> {
            rows.extend(result?);
            bar.inc(1);
            let (position, experiment, _) = runs[index];
            let last_of_experiment = runs.get(index + 1).map(|next| next.0) != Some(position);
            if last_of_experiment {
                bar.suspend(|| print_tables(experiment, &rows));
                write_outputs(experiment, &rows, quick, seed, out)?;
                rows.clear();
            }
            Ok(())
        },
    )?;
    bar.finish_with_message(format!("done; JSON, CSV and SVG in {}", out.display()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_tables_are_well_formed_and_presets_exist() {
        for experiment in EXPERIMENTS {
            let table = experiment.published;
            for (preset, values) in table.rows {
                assert_eq!(values.len(), table.columns.len(), "{}: {preset}", experiment.name);
                assert!(pagealloc::presets::find(preset).is_some(), "{}: no preset {preset}", experiment.name);
            }
            for preset in experiment.presets {
                assert!(pagealloc::presets::find(preset).is_some(), "{}: no preset {preset}", experiment.name);
            }
            assert_eq!(
                table.rows[0].0, experiment.presets[0],
                "{}: both tables start from one baseline",
                experiment.name
            );
        }
    }

    #[test]
    fn normalisation_divides_by_the_first_row_except_percentages() {
        let row = |preset: &str, score: f64, pct: f64| Row {
            preset: preset.into(),
            params: serde_json::Value::Null,
            metrics: [("score".to_string(), score), ("lock_contend_pct".to_string(), pct)].into_iter().collect(),
        };
        let shown = normalise(&[row("base", 50.0, 10.0), row("patch1", 75.0, 4.0)]);
        assert_eq!(shown[0]["score"], 100.0);
        assert_eq!(shown[1]["score"], 150.0);
        assert_eq!(shown[1]["lock_contend_pct"], 4.0);
    }

    #[test]
    fn same_seed_same_json_byte_for_byte_however_many_jobs() {
        let base = std::env::temp_dir().join(format!("pagelab-determinism-{}", std::process::id()));
        let run = |dir: &str, jobs: usize| {
            let out = base.join(dir);
            reproduce(&["pcp-unix".to_string(), "highorder-netperf-tcp".to_string()], true, 3, &out, jobs).unwrap();
            ["pcp-unix.json", "highorder-netperf-tcp.json", "pcp-unix.csv", "pcp-unix.svg"]
                .map(|file| std::fs::read(out.join(file)).unwrap())
        };
        assert_eq!(run("one-job", 1), run("three-jobs", 3));
        std::fs::remove_dir_all(base).ok();
    }

    #[test]
    fn a_quick_experiment_writes_json_and_csv() {
        let out = std::env::temp_dir().join(format!("pagelab-test-{}", std::process::id()));
        reproduce(&["highorder-trunc".to_string()], true, 1, &out, 1).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("highorder-trunc.json")).unwrap()).unwrap();
        assert_eq!(json["experiment"], "highorder-trunc");
        assert_eq!(json["rows"].as_array().unwrap().len(), 3);
        assert!(std::fs::read_to_string(out.join("highorder-trunc.csv")).unwrap().contains("published,vanilla-5.17"));
        let figure = std::fs::read_to_string(out.join("highorder-trunc.svg")).unwrap();
        assert!(
            figure.starts_with("<svg") && figure.contains("revert-highpcp") && figure.trim_end().ends_with("</svg>")
        );
        std::fs::remove_dir_all(out).ok();
    }
}
