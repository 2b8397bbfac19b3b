//! `pagelab replay`'s command line: a trace, alone or inside a `pagelab trace capture`
//! directory (whose zoneinfo before and after and cache size it then uses), replayed under
//! each preset; a table or JSON.

use std::path::{Path, PathBuf};

use pagealloc::LastLevelCache;

use super::initial::PagesetStock;
use super::machine::Machine;
use super::parse::Trace;
use super::replay::{replay, Replay, ReplayOptions};
use super::timeline::Timeline;

/// What a capture directory holds beside its trace.
#[derive(Debug, Default)]
struct CaptureDir {
    zoneinfo_before: Option<PathBuf>,
    zoneinfo_after: Option<PathBuf>,
    zoneinfo_samples: Option<PathBuf>,
    /// (KiB, CPUs) from capture.json.
    llc: Option<(u64, u32)>,
    /// Whether the capture settled the pagesets first (capture.json's `settled_pages`).
    settled: bool,
}

impl CaptureDir {
    fn beside(trace: &Path) -> CaptureDir {
        let Some(dir) = trace.parent() else { return CaptureDir::default() };
        let existing = |name: &str| Some(dir.join(name)).filter(|path| path.exists());
        let summary: Option<serde_json::Value> =
            std::fs::read_to_string(dir.join("capture.json")).ok().and_then(|text| serde_json::from_str(&text).ok());
        let settled = summary.as_ref().and_then(|summary| summary["settled_pages"].as_u64()).unwrap_or(0) > 0;
        let llc =
            summary.and_then(|summary| Some((summary["llc_kib"].as_u64()?, summary["llc_cpus"].as_u64()? as u32)));
        CaptureDir {
            zoneinfo_before: existing("zoneinfo.before"),
            zoneinfo_after: existing("zoneinfo.after"),
            zoneinfo_samples: existing(super::samples::SAMPLES_FILE),
            llc,
            settled,
        }
    }
}

/// A profile's last-level cache: (KiB, CPUs sharing it).
fn profile_llc(path: &Path) -> Result<(u64, u32), String> {
    let host = crate::machine::profile::MachineProfile::read(path)?.host;
    match (host.llc_kib(), host.llc_sharers()) {
        (Some(kib), Some(cpus)) => Ok((kib, cpus)),
        _ => Err(format!("{}: the profile names no last-level cache and its CPUs", path.display())),
    }
}

/// `pagelab replay` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayArgs {
    /// ftrace text of the kmem events (plain, .gz or .xz), e.g. from `pagelab trace capture`.
    pub trace: PathBuf,
    /// The traced machine's /proc/zoneinfo (default: zoneinfo.before beside the trace, else a
    /// PC layout spanning the trace's pfns).
    #[arg(long)]
    pub zoneinfo: Option<PathBuf>,
    /// Presets to replay under (repeatable).
    #[arg(long = "preset", default_value = "mainline", value_parser = crate::preset_arg::parser())]
    pub presets: Vec<String>,
    /// A machine file (`pagelab calibrate` or `pagelab machine capture`) of the traced
    /// machine: the replay takes its last-level cache (size and sharers), which the
    /// pagesets' cache-aware batching reads.
    /// The replay counts events, not time, so no other constant applies.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["llc_kib", "llc_cpus"])]
    pub machine: Option<PathBuf>,
    /// The traced machine's last-level cache, KiB (default: capture.json beside the trace).
    #[arg(long, requires = "llc_cpus")]
    pub llc_kib: Option<u64>,
    /// CPUs sharing it (the count in .../index3/shared_cpu_list).
    #[arg(long, requires = "llc_kib")]
    pub llc_cpus: Option<u32>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::output_format::OutputFormat,
    /// Also report the counts every N ms of trace time.
    #[arg(long)]
    pub timeline_ms: Option<u64>,
    /// Write our events as ftrace text to FILE (`.gz` compressed), to set beside the trace.
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// What the pagesets hold at the start (with a zoneinfo snapshot: its counts and highs).
    /// The default, order-0 movable pages, is what a settled capture leaves (see `trace
    /// capture --no-settle`); `implied` reconstructs the start from the kernel's refills and
    /// drains, and so is not a prediction.
    #[arg(long, value_enum, default_value = "movable")]
    pub pageset_stock: PagesetStock,
    /// When each CPU's vmstat pass (pageset decay) runs. The default is the allocator's own
    /// schedule; `trace` and `periodic` read the kernel's worker drains.
    #[arg(long, value_enum, default_value = "own")]
    pub timers: super::timers::TimerMode,
}

pub fn run(args: &ReplayArgs) -> Result<(), String> {
    let capture = CaptureDir::beside(&args.trace);
    let zoneinfo = args.zoneinfo.clone().or(capture.zoneinfo_before);
    let loading = std::time::Instant::now();
    let trace = Trace::load(&args.trace)?;
    if trace.events.is_empty() {
        return Err(format!(
            "{}: no page-allocator events in {} lines (ftrace text of kmem:mm_page_alloc and its kin, \
             as `pagelab trace capture` writes)",
            args.trace.display(),
            trace.lines
        ));
    }
    let load_ms = loading.elapsed().as_millis();
    if args.pageset_stock == PagesetStock::Movable && zoneinfo.is_some() && !capture.settled {
        eprintln!(
            "note: the capture did not settle its pagesets (`trace capture --no-settle`, or an older capture): \
             the default start's order-0 movable pagesets are a guess"
        );
    }
    let mut machine = Machine::for_trace(&trace, zoneinfo.as_deref())?;
    let llc = match (args.llc_kib, args.llc_cpus, &args.machine) {
        (Some(kib), Some(cpus), _) => Some((kib, cpus)),
        (_, _, Some(profile)) => Some(profile_llc(profile)?),
        _ => capture.llc,
    };
    machine.llc = llc.map(|(kib, cpus)| LastLevelCache { size_bytes: kib << 10, shared_by_cpus: cpus });
    let after = match &capture.zoneinfo_after {
        Some(path) => {
            Some(super::zoneinfo::parse_zoneinfo(&std::fs::read_to_string(path).map_err(|e| e.to_string())?)?)
        }
        None => None,
    };
    let samples = match &capture.zoneinfo_samples {
        Some(path) => super::samples::parse_samples(&std::fs::read_to_string(path).map_err(|e| e.to_string())?)?,
        None => Vec::new(),
    };
    let replays: Vec<Replay> = args
        .presets
        .iter()
        .map(|preset| {
            let options = ReplayOptions {
                stock: args.pageset_stock,
                timeline_ms: args.timeline_ms,
                trace_out: args.trace_out.clone(),
                after: after.clone(),
                timers: args.timers,
                samples: samples.clone(),
            };
            replay(&trace, &machine, preset, options)
        })
        .collect::<Result<_, _>>()?;
    let table = || {
        println!("read {} lines ({} events) in {load_ms} ms", trace.lines, trace.events.len());
        replays.iter().for_each(print_table);
        Ok(())
    };
    // One preset's JSON is its replay, not a list of one.
    let json_one = args.format == crate::output_format::OutputFormat::Json && replays.len() == 1;
    if json_one {
        crate::output_format::print_report(args.format, &replays[0], table)
    } else {
        crate::output_format::print_report(args.format, &replays, table)
    }
}

/// Kernel and ours side by side, with ours/kernel.
fn print_table(replay: &Replay) {
    println!(
        "trace {} under {}: {} alloc/free events in {} ms",
        replay.trace, replay.preset, replay.events, replay.wall_ms
    );
    println!("skipped: {:?}", replay.skipped);
    for line in &replay.zoneinfo_differences {
        println!("zoneinfo differs: {line}");
    }
    println!("{:<26} {:>12} {:>12} {:>8}", "event", "kernel", "ours", "ours/k");
    let keys: std::collections::BTreeSet<&String> = replay.kernel.keys().chain(replay.ours.keys()).collect();
    for key in keys {
        let kernel = replay.kernel.get(key).copied().unwrap_or(0);
        let ours = replay.ours.get(key).copied().unwrap_or(0);
        let ratio = if kernel == 0 { "-".to_string() } else { format!("{:.3}", ours as f64 / kernel as f64) };
        println!("{key:<26} {kernel:>12} {ours:>12} {ratio:>8}");
    }
    let ends = replay.end_pagesets.iter().filter(|end| end.kernel_count + end.ours_count > 0);
    for end in ends {
        println!(
            "at the end, {} cpu {}: count kernel {} ours {}, high kernel {} ours {}",
            end.zone, end.cpu, end.kernel_count, end.ours_count, end.kernel_high, end.ours_high
        );
    }
    print_sample_summary(&replay.pageset_samples);
    if let Some(points) = &replay.timeline {
        println!("per step, kernel/ours:");
        let keys = ["zone_locked_refill_o0", "pcpu_drain_o0", "zone_locked_refill_o2", "pcpu_drain_o2"];
        Timeline::print_points(points, &keys);
    }
}

/// Per pageset: how far our count and high were from the kernel's over the samples (median
/// of the absolute differences, and the kernel's median for scale).
fn print_sample_summary(pairs: &[super::samples::PagesetPair]) {
    use super::samples::median_differences;
    use crate::stats::median_count as median;
    let mut groups: std::collections::BTreeMap<(&str, usize), Vec<&super::samples::PagesetPair>> = Default::default();
    for pair in pairs {
        groups.entry((pair.pageset.zone.as_str(), pair.pageset.cpu)).or_default().push(pair);
    }
    for ((zone, cpu), of) in groups {
        if of.iter().all(|pair| pair.pageset.kernel_count + pair.pageset.ours_count == 0) {
            continue;
        }
        let (count_off, high_off) = median_differences(&of).expect("a non-empty group");
        println!(
            "{} samples, {zone} cpu {cpu}: |ours - kernel| median count {count_off} high {high_off} (kernel median count {} high {})",
            of.len(),
            median(of.iter().map(|pair| pair.pageset.kernel_count).collect()),
            median(of.iter().map(|pair| pair.pageset.kernel_high).collect()),
        );
    }
}
