//! Runs read from result files, grouped into samples: every seed of one policy on one
//! configuration (workload, CPUs, workload and swept parameters).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// Report fields that describe a run rather than measure it, or are not numbers to compare.
const NOT_METRICS: [&str; 8] =
    ["seed", "cpus", "params", "calibration", "sim", "top_pfn_reuse", "metadata_layout", "faults"];

/// One policy's runs on one configuration: each metric's value per run.
#[derive(Debug, Default)]
pub struct Sample {
    pub metrics: BTreeMap<String, Vec<f64>>,
    pub runs: usize,
}

/// Configuration, then policy label, to sample.
pub type Samples = BTreeMap<String, BTreeMap<String, Sample>>;

/// Every run of a file: a sweep's results (`pagelab sweep`, `pagelab merge`) or one run's
/// report (`pagelab run --format json`).
pub fn read(path: &Path) -> Result<Samples, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let value: Value = serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    let runs: Vec<(&Value, Option<&Value>)> = match value.get("results").and_then(Value::as_array) {
        Some(results) => results.iter().map(|result| (&result["report"], result.get("params"))).collect(),
        None => vec![(&value, None)],
    };
    let mut samples = Samples::new();
    for (report, swept) in runs {
        let label = report.get("preset").and_then(Value::as_str);
        let workload = report.get("workload").and_then(Value::as_str);
        let (Some(label), Some(workload)) = (label, workload) else {
            return Err(format!("{}: not a pagelab run report or sweep", path.display()));
        };
        let configuration = format!(
            "{workload} cpus={} {}{}",
            report["cpus"],
            report["params"],
            swept
                .filter(|swept| swept.as_object().is_some_and(|fields| !fields.is_empty()))
                .map(|swept| format!(" swept {swept}"))
                .unwrap_or_default()
        );
        let sample = samples.entry(configuration).or_default().entry(label.to_string()).or_default();
        sample.runs += 1;
        collect(report, "", &mut sample.metrics);
    }
    Ok(samples)
}

/// Every numeric leaf of `report` under `prefix`, by dotted name.
fn collect(report: &Value, prefix: &str, metrics: &mut BTreeMap<String, Vec<f64>>) {
    let Some(fields) = report.as_object() else { return };
    for (name, value) in fields {
        if prefix.is_empty() && NOT_METRICS.contains(&name.as_str()) {
            continue;
        }
        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        match value {
            Value::Number(number) => metrics.entry(key).or_default().extend(number.as_f64()),
            Value::Object(_) => collect(value, &key, metrics),
            _ => {}
        }
    }
}
