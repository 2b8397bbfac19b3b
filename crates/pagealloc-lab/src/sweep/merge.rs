//! `pagelab merge`: the shards of one sweep joined into the document the whole sweep
//! writes. Parts of different sweeps, a point twice, or a point missing are refused.

use std::path::PathBuf;

use clap::Args;
use serde_json::value::RawValue;

use super::Document;

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The parts, as `pagelab sweep --shard I/N --out FILE` wrote them.
    #[arg(required = true, value_name = "PART")]
    pub parts: Vec<PathBuf>,
    /// Write the merged results here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn merge(args: &MergeArgs) -> Result<(), String> {
    let parts: Vec<Document> = args.parts.iter().map(|path| Document::read(path)).collect::<Result<_, _>>()?;
    join(parts)?.write(args.out.as_deref())
}

/// The parts' results in point order, once each, under their common sweep.
pub fn join(parts: Vec<Document>) -> Result<Document, String> {
    let sweep = parts.first().ok_or("nothing to merge")?.sweep.clone();
    if let Some(other) = parts.iter().position(|part| part.sweep != sweep) {
        return Err(format!("part {} is of another sweep than part 1", other + 1));
    }
    let points = parts[0].points();
    let mut results: Vec<Option<Box<RawValue>>> = (0..points).map(|_| None).collect();
    for result in parts.into_iter().flat_map(|part| part.results) {
        let index = Document::index_of(&result)?;
        let slot = results.get_mut(index).ok_or_else(|| format!("point {index} is past the sweep's {points}"))?;
        if slot.replace(result).is_some() {
            return Err(format!("point {index} is in two parts"));
        }
    }
    if let Some(missing) = results.iter().position(Option::is_none) {
        let count = results.iter().filter(|result| result.is_none()).count();
        return Err(format!("{count} of {points} points are in no part, the first point {missing}"));
    }
    Ok(Document { sweep, shard: None, results: results.into_iter().flatten().collect() })
}
