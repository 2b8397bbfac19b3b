//! An experiment's files in the output directory: JSON (our rows, the published table, the
//! calibration and layout used), CSV (one value a line, ours and published) and the SVG figure.

use std::path::Path;

use serde::Serialize;

use super::bar_figure;
use super::experiment::{Experiment, Row};
use super::simulate::REPRODUCTION_LAYOUT;
use super::table::{published_shown, shown_rows};

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
    /// Where the simulated costs come from.
    cost_model: &'static str,
    metadata_layout: pagealloc_sim::MetadataLayout,
    rows: &'a [Row],
    published: PublishedJson,
}

pub(super) fn write_outputs(
    experiment: &Experiment,
    rows: &[Row],
    (quick, seed, machine): (bool, u64, Option<&crate::machine::SimMachine>),
    out: &Path,
) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let json = ExperimentJson {
        experiment: experiment.name,
        cpus: experiment.cpus,
        seed,
        quick,
        cost_model: super::simulate::cost_model(machine),
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
    let ours = shown_rows(experiment, rows);
    // An experiment that scales one quantity is a line chart over it, with the published
    // values as crosses where they sit on its axis; otherwise paired bars set ours beside
    // them. A parameter sweep beside a published table keeps the bars, which pair them.
    let axis = super::line_figure::axis(rows, experiment.published.columns)
        .filter(|axis| matches!(axis, super::line_figure::Axis::Columns(_)) || experiment.published.rows.is_empty());
    let figure = match axis {
        Some(axis) => super::line_figure::figure(
            experiment.summary,
            rows,
            &axis,
            experiment.published.columns,
            experiment.published,
        )?,
        None => bar_figure::figure(experiment.summary, experiment.published, &presets, &published_by_preset, &ours)?,
    };
    let svg_path = out.join(format!("{}.svg", experiment.name));
    std::fs::write(&svg_path, figure).map_err(|e| format!("{}: {e}", svg_path.display()))?;
    Ok(())
}
