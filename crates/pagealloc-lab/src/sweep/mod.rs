//! `pagelab sweep`: one workload over the Cartesian product of presets, switch values,
//! `pagelab run` options and seeds, on the simulator. `--shard I/N` runs every N-th point
//! from the I-th, so a batch engine (a Slurm job array, GNU parallel) spreads a sweep over
//! machines; `pagelab merge` joins the parts into what the whole sweep writes, byte for
//! byte.

mod document;
mod merge;
mod points;

use std::path::PathBuf;

use clap::Args;

pub use document::Document;
pub use merge::{merge, MergeArgs};
use points::Axis;

/// `I/N`: part I (from 0) of N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    fn parse(text: &str) -> Result<Shard, String> {
        let (index, count) = text.split_once('/').ok_or_else(|| format!("`{text}` is not I/N"))?;
        let (index, count) = (index.trim().parse::<usize>(), count.trim().parse::<usize>());
        match (index, count) {
            (Ok(index), Ok(count)) if count > 0 && index < count => Ok(Shard { index, count }),
            _ => Err(format!("`{text}`: I/N with 0 <= I < N")),
        }
    }

    fn holds(&self, index: usize) -> bool {
        index % self.count == self.index
    }
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The workload, as `pagelab run` names it.
    pub workload: String,
    /// A preset to sweep (repeatable; default mainline).
    #[arg(long = "preset", value_parser = crate::preset_arg::parser())]
    pub presets: Vec<String>,
    /// A switch and the values to sweep it over, `KEY=V1,V2,...` (repeatable; the keys of
    /// `pagelab presets --dump`).
    #[arg(long = "set", value_name = "KEY=V1,V2,...", value_parser = Axis::parse)]
    pub sets: Vec<Axis>,
    /// A `pagelab run` option and its values, `NAME=V1,V2,...` (repeatable), e.g.
    /// `cpus=8,16,32` or `message-bytes=64,16384`.
    #[arg(long = "param", value_name = "NAME=V1,V2,...", value_parser = Axis::parse)]
    pub params: Vec<Axis>,
    /// Seeds 1 to N at every point.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub seeds: u64,
    /// A policy file every point starts from, before its --set values.
    #[arg(long = "policy", value_name = "FILE")]
    pub policy: Option<String>,
    /// Run only part I of N (0 <= I < N): the points whose index is I modulo N.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Write the results (JSON) here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Options every run takes, after `--` (e.g. `-- --topology 2s-224cpu --duration-ms 50`).
    #[arg(last = true, value_name = "RUN OPTIONS")]
    pub run_args: Vec<String>,
}

/// Checks every point, then runs this shard's and writes their results.
pub fn sweep(args: &SweepArgs) -> Result<(), String> {
    if args.params.iter().any(|axis| matches!(axis.name.as_str(), "seed" | "preset" | "set" | "policy" | "real")) {
        return Err(
            "--param: seeds, presets, switches and policies have options of their own; --real is not swept".into()
        );
    }
    let presets = if args.presets.is_empty() { vec!["mainline".to_string()] } else { args.presets.clone() };
    let all = points::product(&presets, &args.sets, &args.params, args.seeds);
    let run_args = points::checked(&all, &args.workload, args.policy.as_deref(), &args.run_args)?;
    let mut document = Document::new(args, &presets, all.len());
    for (point, run) in all.iter().zip(&run_args) {
        if args.shard.is_none_or(|shard| shard.holds(point.index)) {
            let workload = run.workload()?;
            let report = crate::run::run_sim(workload.as_ref(), run)?;
            document.add(point, &report)?;
        }
    }
    document.shard = args.shard.map(Into::into);
    document.write(args.out.as_deref())
}
