//! `pagelab`: the pagealloc lab.

// Layers, bottom up; a file uses items only of its own module or of modules in its layer
// or below, and no chain of files leads back to where it started. `tests/layers.rs` reads
// this list as the lab's layer table and checks every file against it.
// 0. Plumbing: output formats, the RNG, statistics, CPU pinning, huge pages, argument
//    parsers, policy files.
mod flat_csv;
mod huge_pages;
mod output_format;
mod pinning;
mod policy_file;
mod preset_arg;
mod rng;
mod stats;
// 1. Descriptions: machine cost profiles and the zoneinfo arguments, the page cache model,
//    metadata sizes.
mod machine;
mod machine_args;
mod metadata;
mod page_cache;
// 2. What runs on the host or the simulator: calibration's microbenchmarks, workloads,
//    torture.
mod calibrate;
mod torture;
mod workload;
// 3. Traces: capture, the zoneinfo reader, replay.
mod trace;
// 4. Runs of a workload under a preset.
mod run;
// 5. Over runs: benches, sweeps, the calibration check, the demo.
mod bench;
mod calibration_check;
mod demo;
mod sweep;
// 6. Experiments and the comparison of results.
mod compare;
mod experiments;

use clap::builder::TypedValueParser as _;
use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: huge_pages::HugePageHint = huge_pages::HugePageHint;

#[derive(Parser)]
#[command(name = "pagelab", version, about = "Lab for pagealloc, the Linux page allocator in Rust")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print /proc/zoneinfo as Linux would for a described machine (nothing is run).
    Zoneinfo(machine_args::ZoneinfoArgs),
    /// Measure this host (cache-line transfers, atomics, cache and memory latency, page
    /// zero and copy, and the kernel's page fault, mmap and socket costs) into a machine
    /// profile (JSON).
    Calibrate(calibrate::CalibrateArgs),
    /// The built-in simulated machines (the reference host as measured, the seeds' machines)
    /// and where every constant comes from.
    Machines(machine::listing::MachinesArgs),
    /// Machine files: `pagelab machine capture [--out FILE]` writes this host's topology,
    /// caches and zones in the calibration profile's format.
    Machine {
        #[command(subcommand)]
        command: machine::capture::MachineCommand,
    },
    /// LLFree's allocator benchmark (bulk, repeat, rand, frag) against peers, on real threads.
    Bench(bench::BenchArgs),
    /// Run one workload on the many-CPU simulator (or on real threads with --real).
    Run(run::RunArgs),
    /// One workload over presets x switch values x run options x seeds (the Cartesian
    /// product), on the simulator; `--shard I/N` runs one part, for a batch engine.
    Sweep(sweep::SweepArgs),
    /// Join the parts of a sharded sweep into what the whole sweep writes.
    Merge(sweep::MergeArgs),
    /// Two result files side by side: each metric's mean and deviation over seeds, the
    /// change, and Welch's t-test (mmtests' compare-kernels style).
    Compare(compare::CompareArgs),
    /// Run a small mixed workload on a live allocator and print its state in kernel formats.
    Demo(demo::DemoArgs),
    /// Random mixed operations on real threads (more than cores) under memory pressure,
    /// with a frame-ownership shadow and the invariant checker at quiescent points; exits 1
    /// on any violation.
    Torture(torture::TortureArgs),
    /// Real kernel traces: `pagelab trace capture [--out DIR] [--seconds S] -- CMD...`.
    Trace {
        #[command(subcommand)]
        command: trace::TraceCommand,
    },
    /// Replay a kernel kmem trace through the allocator and compare with the kernel's counts.
    Replay(trace::replay_cli::ReplayArgs),
    /// Reproduce the seeds' tables on the simulator (all experiments without a name).
    Reproduce {
        /// Experiments to run (see `pagelab experiments`); all when none given.
        experiments: Vec<String>,
        /// Smaller runs (under a minute each here).
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Seeds per preset (the given one and the next): each number becomes their mean,
        /// with its standard deviation beside it.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
        seeds: u64,
        /// Directory for JSON and CSV results.
        #[arg(long, default_value = "pagelab-out")]
        out: std::path::PathBuf,
        /// Simulations run at once, one per host thread (default: the host's CPUs). Results
        /// do not depend on it; each holds a simulated machine (up to ~0.7 GiB at 224 CPUs).
        /// A real-thread experiment (llfree-frag) runs alone.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
        jobs: Option<usize>,
        /// A machine file (`pagelab calibrate`, or `pagelab machine capture`) whose hardware and kernel costs every
        /// experiment runs with, on its own topology, instead of its seed machine's.
        #[arg(long, value_name = "FILE")]
        machine: Option<std::path::PathBuf>,
        /// Print each job's (experiment and preset) host wall time at the end, slowest
        /// first, to standard error.
        #[arg(long)]
        timings: bool,
    },
    /// List the experiments `reproduce` runs.
    Experiments {
        #[arg(long, value_enum, default_value = "table")]
        format: output_format::OutputFormat,
    },
    /// Print the allocator's metadata, part by part, per frame.
    Metadata(metadata::MetadataArgs),
    /// List the policy presets (each seed stage) and their switches.
    Presets {
        /// Print every switch of every preset, as policy files and --set name them.
        #[arg(long)]
        verbose: bool,
        /// Write one preset as a policy file (TOML): its base and every switch, to edit
        /// and pass to --policy.
        #[arg(long, value_name = "PRESET", value_parser = preset_arg::parser(), conflicts_with = "verbose")]
        dump: Option<String>,
        /// A list, or JSON / `key,value` CSV rows (name, summary, aliases, and with
        /// --verbose every switch).
        #[arg(long, value_enum, default_value = "table")]
        format: output_format::OutputFormat,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Zoneinfo(args) => machine_args::run_zoneinfo(&args),
        Command::Calibrate(args) if args.check && args.run_loop.is_none() => calibration_check::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Machines(args) => machine::listing::run(&args),
        Command::Machine { command } => machine::capture::run(&command),
        Command::Demo(args) => demo::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Merge(args) => sweep::merge(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Trace { command } => trace::run(&command),
        Command::Replay(args) => trace::replay_cli::run(&args),
        Command::Torture(args) => run_torture(&args),
        Command::Reproduce { experiments, quick, seed, seeds, out, jobs, machine, timings } => {
            let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            machine.map(|path| machine::SimMachine::read(&path)).transpose().and_then(|machine| {
                experiments::reproduce(
                    &experiments::Plan { names: &experiments, quick, seed, seeds, timings, machine },
                    &out,
                    jobs,
                )
            })
        }
        Command::Experiments { format } => list_experiments(format),
        Command::Metadata(args) => metadata::show(&args),
        Command::Presets { dump: Some(name), .. } => {
            let preset = pagealloc::presets::find(&name).expect("the parser checked the name");
            print!("{}", policy_file::dump(preset));
            Ok(())
        }
        Command::Presets { verbose, format, dump: None } => list_presets(verbose, format),
    };
    if let Err(message) = result {
        eprintln!("pagelab: {message}");
        std::process::exit(2);
    }
}

/// `pagelab torture`: exits 1 when the run found violations.
fn run_torture(args: &torture::TortureArgs) -> Result<(), String> {
    if torture::run(args)? {
        return Ok(());
    }
    eprintln!("pagelab: torture found violations (see above)");
    std::process::exit(1);
}

fn list_experiments(format: output_format::OutputFormat) -> Result<(), String> {
    if format == output_format::OutputFormat::Table {
        for experiment in experiments::EXPERIMENTS {
            println!("{:<24} {}", experiment.name, experiment.summary);
        }
        return Ok(());
    }
    let entries = experiments::EXPERIMENTS
        .iter()
        .map(|experiment| serde_json::json!({ "name": experiment.name, "summary": experiment.summary }))
        .collect();
    output_format::print_listing(format, entries)
}

fn list_presets(verbose: bool, format: output_format::OutputFormat) -> Result<(), String> {
    if format != output_format::OutputFormat::Table {
        let entries = (pagealloc::presets::PRESETS.iter())
            .map(|preset| {
                let mut entry = serde_json::json!({
                    "name": preset.name,
                    "summary": preset.summary,
                    "aliases": preset.aliases,
                });
                if verbose {
                    let switches =
                        policy_file::SWITCHES.iter().map(|switch| (switch.key, (switch.get)(&preset.policy)));
                    entry["switches"] =
                        switches.map(|(key, value)| (key.to_string(), serde_json::Value::String(value))).collect();
                }
                entry
            })
            .collect();
        return output_format::print_listing(format, entries);
    }
    for preset in pagealloc::presets::PRESETS {
        let aliases =
            if preset.aliases.is_empty() { String::new() } else { format!(" (alias {})", preset.aliases.join(", ")) };
        println!("{:<16} {}{}", preset.name, preset.summary, aliases);
        if verbose {
            let switches: Vec<String> = policy_file::SWITCHES
                .iter()
                .map(|switch| format!("{}={}", switch.key, (switch.get)(&preset.policy)))
                .collect();
            println!("{:16} {}", "", switches.join(" "));
        }
    }
    Ok(())
}
