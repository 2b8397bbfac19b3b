//! `pagelab torture`: random mixed operations on real threads, more of them than cores,
//! against one allocator per preset, checked three ways: every frame's owner in a shadow
//! kept beside the allocator (double allocations, frees of frames not held), every error
//! other than OutOfMemory, and at quiescent points the invariant checker with its census
//! compared to the shadow. Any violation makes the exit status non-zero.
//!
//! - `args`: the command line;
//! - `machine`: the machine (DMA, DMA32, Normal, Movable, and a memory-only node) per preset;
//! - `shadow`: the frame-ownership shadow;
//! - `cache`: a reclaimable page cache, the allocator's reclaim client;
//! - `panicky`: the cache as migration client, panicking now and then;
//! - `worker`, `ops`: a worker's batches, phases and operations;
//! - `checker`: the quiescent and final checks;
//! - `session`: one preset's run (threads, schedule, progress bar);
//! - `tally`, `violations`, `report`: counts, violations, summaries.

mod args;
mod cache;
mod checker;
mod machine;
mod ops;
mod panicky;
mod ranges;
mod report;
mod session;
mod shadow;
mod tally;
mod violations;
mod worker;

pub use args::TortureArgs;

/// Runs every preset in turn, printing each one's summary as it ends and the totals last.
/// `Ok(false)` when any violation was found.
pub fn run(args: &TortureArgs) -> Result<bool, String> {
    let workers = args.threads();
    panicky::quiet_client_panics();
    let mut runs = Vec::with_capacity(args.presets.len());
    let table = args.format == crate::output_format::OutputFormat::Table;
    for preset in &args.presets {
        let run = session::run_preset(preset, args, workers)?;
        if table {
            print!("{}", report::preset_summary(&run));
        }
        runs.push(run);
    }
    let json = serde_json::Value::Array(runs.iter().map(report::preset_json).collect());
    crate::output_format::print_report(args.format, &json, || {
        print!("{}", report::total_line(&runs));
        Ok(())
    })?;
    Ok(runs.iter().all(|run| run.violations == 0))
}
