//! A sweep's results as JSON: the sweep itself (what was asked, how many points), this
//! part's shard if any, and one result per point run, in point order. Host timings are
//! left out, so the same points give the same bytes anywhere.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::points::Point;
use super::{Shard, SweepArgs};
use crate::run::RunReport;

/// Report fields measured on the host, not simulated: they differ from run to run.
const HOST_FIELDS: [&str; 2] = ["host_seconds", "sim_ops_per_sec"];

/// The results document. Each result is kept as the text it was written as, one line, so a
/// merge copies it byte for byte (reading a float back need not give its last digit).
#[derive(Debug, Serialize, Deserialize)]
pub struct Document {
    pub sweep: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardPlace>,
    pub results: Vec<Box<RawValue>>,
}

/// Which part of the sweep a document holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardPlace {
    pub index: usize,
    pub count: usize,
}

impl From<Shard> for ShardPlace {
    fn from(shard: Shard) -> ShardPlace {
        ShardPlace { index: shard.index, count: shard.count }
    }
}

/// The one field of a result a merge reads.
#[derive(Deserialize)]
struct Place {
    index: usize,
}

impl Document {
    pub fn new(args: &SweepArgs, presets: &[String], points: usize) -> Document {
        let axes = |axes: &[super::points::Axis]| -> Vec<Value> {
            axes.iter().map(|axis| json!({ "name": axis.name, "values": axis.values })).collect()
        };
        let sweep = json!({
            "workload": args.workload,
            "presets": presets,
            "sets": axes(&args.sets),
            "params": axes(&args.params),
            "seeds": args.seeds,
            "policy": args.policy,
            "run_args": args.run_args,
            "points": points,
        });
        Document { sweep, shard: None, results: Vec::new() }
    }

    /// The result of `point`: where it lies in the sweep, and the run's report.
    pub fn add(&mut self, point: &Point, report: &RunReport) -> Result<(), String> {
        let mut report = serde_json::to_value(report).map_err(|error| error.to_string())?;
        if let Some(fields) = report.as_object_mut() {
            for field in HOST_FIELDS {
                fields.remove(field);
            }
        }
        let pairs = |pairs: &[(String, String)]| -> Map<String, Value> {
            pairs.iter().map(|(name, value)| (name.clone(), Value::String(value.clone()))).collect()
        };
        let result = json!({
            "index": point.index,
            "preset": point.preset,
            "sets": pairs(&point.sets),
            "params": pairs(&point.params),
            "seed": point.seed,
            "report": report,
        });
        let text = serde_json::to_string(&result).map_err(|error| error.to_string())?;
        self.results.push(RawValue::from_string(text).map_err(|error| error.to_string())?);
        Ok(())
    }

    /// The place of a result in the sweep.
    pub fn index_of(result: &RawValue) -> Result<usize, String> {
        serde_json::from_str::<Place>(result.get()).map(|place| place.index).map_err(|error| error.to_string())
    }

    /// Reads a document `pagelab sweep` or `pagelab merge` wrote.
    pub fn read(path: &Path) -> Result<Document, String> {
        let text = std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
        let not_a_sweep = |why: String| format!("{}: not a pagelab sweep's results ({why})", path.display());
        let document: Document = serde_json::from_str(&text).map_err(|error| not_a_sweep(error.to_string()))?;
        if !document.sweep.get("points").is_some_and(Value::is_u64) {
            return Err(not_a_sweep("no point count".into()));
        }
        for result in &document.results {
            Document::index_of(result).map_err(not_a_sweep)?;
        }
        Ok(document)
    }

    /// Points the sweep has in all.
    pub fn points(&self) -> usize {
        self.sweep["points"].as_u64().unwrap_or(0) as usize
    }

    pub fn write(&self, out: Option<&Path>) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|error| error.to_string())? + "\n";
        match out {
            Some(path) => std::fs::write(path, text).map_err(|error| format!("{}: {error}", path.display())),
            None => {
                print!("{text}");
                Ok(())
            }
        }
    }
}
