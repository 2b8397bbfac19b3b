//! What an experiment is (its published table, presets, runner and costs) and the rows it
//! gives, apart from the registry that lists them, so that an experiment's runner and the
//! registry both depend on this file and not on each other.

use std::collections::BTreeMap;

use indicatif::ProgressBar;
use serde::Serialize;

use super::published::PublishedTable;

/// One of our rows: a preset (and parameters) with its metrics, named as the published
/// columns.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct Row {
    pub preset: String,
    pub params: serde_json::Value,
    pub metrics: BTreeMap<String, f64>,
}

/// One run of an experiment: a preset, at full size or quick, with a seed, on the seed's
/// machine or on `machine`'s costs (`reproduce --machine`, on the experiment's own
/// topology), reporting to `bar`.
#[derive(Clone, Copy)]
pub(super) struct Job<'a> {
    pub preset: &'a str,
    pub quick: bool,
    pub seed: u64,
    pub machine: Option<&'a crate::machine::SimMachine>,
    pub bar: &'a ProgressBar,
}

/// Runs one job and returns one row per parameter point.
type RunPreset = fn(&Job<'_>) -> Result<Vec<Row>, String>;

pub struct Experiment {
    pub name: &'static str,
    pub summary: &'static str,
    pub(super) published: &'static PublishedTable,
    pub(super) presets: &'static [&'static str],
    pub(super) run: RunPreset,
    /// CPUs of the machine.
    pub(super) cpus: usize,
    /// Rows of several parameter points per preset: each row gets `speedup_pct`, this
    /// metric against the first preset's row with the same params, and tables show raw
    /// values (normalising to the first row would mix parameter points).
    pub(super) speedup_of: Option<&'static str>,
    /// Measured on real threads (not simulated): tables show raw values.
    pub(super) real_threads: bool,
    /// Host seconds one preset's job takes at full size, the mean over its presets as
    /// measured on the reference 2-core guest (docs/experiments/README.md): `reproduce`
    /// starts the longest jobs first. No result depends on it.
    pub(super) job_host_s: f64,
}

/// Adds `speedup_pct` to every row: `metric` relative to the first preset's row with the
/// same params, in percent (0 for the baseline itself).
pub(super) fn add_speedups(experiment: &Experiment, rows: &mut [Row]) {
    let Some(metric) = experiment.speedup_of else { return };
    let baseline = experiment.presets[0];
    let bases: Vec<(serde_json::Value, f64)> = rows
        .iter()
        .filter(|row| row.preset.split(' ').next() == Some(baseline))
        .filter_map(|row| Some((row.params.clone(), *row.metrics.get(metric)?)))
        .collect();
    for row in rows.iter_mut() {
        let base = bases.iter().find(|(params, _)| *params == row.params).map(|(_, value)| *value);
        if let (Some(base), Some(&value)) = (base, row.metrics.get(metric)) {
            if base > 0.0 {
                row.metrics.insert("speedup_pct".into(), (value / base - 1.0) * 100.0);
            }
        }
    }
}
