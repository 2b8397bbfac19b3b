//! The runner: validates the arguments, then runs every (allocator, thread count)
//! combination for the chosen iterations on fresh frame sources.

use super::peers::{BuddySystem, FrameSource, Pagealloc};
use super::results::Iteration;
use super::workloads::{bulk, frag, rand, repeat};
use super::{AllocatorKind, BenchArgs, BenchKind, RunResult, Spread};

fn make_source(
    kind: AllocatorKind,
    frames: u64,
    preset: &pagealloc::presets::Preset,
) -> Result<Box<dyn FrameSource>, String> {
    let built =
        |policy, name| Pagealloc::new(frames, policy, name).map_err(|error| format!("the bench's zone: {error}"));
    Ok(match kind {
        AllocatorKind::Pagealloc => Box::new(built(preset.policy, "pagealloc")?),
        AllocatorKind::GlobalLock => {
            let off = pagealloc::presets::find("global-lock").expect("preset exists").policy;
            Box::new(built(off, "global-lock")?)
        }
        AllocatorKind::BuddySystem => Box::new(BuddySystem::new(frames)),
    })
}

/// The bench's memory is one Normal zone, whose span is under 2^32 frames.
const MAX_MEMORY_GIB: u64 = (u32::MAX as u64) >> 18;

/// What the arguments ask for, checked: the presets, the thread counts, and the frames of
/// the memory and the blocks each thread takes.
struct Plan {
    presets: Vec<&'static pagealloc::presets::Preset>,
    thread_counts: Vec<usize>,
    frames: u64,
    blocks: usize,
}

fn plan(args: &BenchArgs) -> Result<Plan, String> {
    let presets = args
        .presets
        .iter()
        .map(|name| pagealloc::presets::find(name).ok_or_else(|| format!("unknown preset '{name}'")))
        .collect::<Result<Vec<_>, _>>()?;
    let threads_max = args.threads_max();
    if threads_max == 0 || args.memory_gib == 0 || args.iterations == 0 || args.frag_rounds == 0 {
        return Err("--threads-max, --memory-gib, --iterations and --frag-rounds must be positive".into());
    }
    if args.memory_gib > MAX_MEMORY_GIB {
        return Err(format!(
            "--memory-gib {}: the bench's memory is one zone of at most {MAX_MEMORY_GIB} GiB (under 2^32 frames)",
            args.memory_gib
        ));
    }
    if args.order > pagealloc::MAX_ORDER {
        return Err(format!("--order {} exceeds {}", args.order, pagealloc::MAX_ORDER));
    }
    if args.bench == BenchKind::Frag && args.order != 0 {
        return Err("frag runs at order 0".into());
    }
    if args.free_batch != 1 && !matches!(args.bench, BenchKind::Bulk | BenchKind::Rand) {
        return Err("--free-batch applies to bulk and rand".into());
    }
    let thread_counts = args.thread_counts();
    if let Some(&bad) = thread_counts.iter().find(|&&t| t == 0 || t > threads_max) {
        return Err(format!("-x {bad}: thread counts run from 1 to --threads-max {threads_max}"));
    }
    let frames = args.memory_gib << 18;
    let most_threads = thread_counts.iter().copied().max().unwrap_or(1);
    if args.sim {
        if args.allocator.iter().any(|&kind| kind != AllocatorKind::Pagealloc) {
            return Err("--sim runs pagealloc (with --preset global-lock for one zone lock)".into());
        }
        super::sim::machine_cpus(args, most_threads)?;
    } else {
        crate::pinning::check_pinning(most_threads).map_err(|error| format!("-x {most_threads}: {error}"))?;
    }
    let blocks = ((frames / threads_max as u64 / 2) >> args.order) as usize;
    if blocks == 0 {
        return Err("memory too small for this order and thread count".into());
    }
    Ok(Plan { presets, thread_counts, frames, blocks })
}

/// Runs every (allocator, thread count) combination.
pub fn run_benchmarks(args: &BenchArgs) -> Result<Vec<RunResult>, String> {
    let plan = plan(args)?;
    let mut results = Vec::new();
    // Presets apply to pagealloc only: other allocators run once.
    let runs = args.allocator.iter().flat_map(|&kind| {
        let presets = if kind == AllocatorKind::Pagealloc { plan.presets.clone() } else { plan.presets[..1].to_vec() };
        presets.into_iter().map(move |preset| (kind, preset))
    });
    for (kind, preset) in runs {
        for &threads in &plan.thread_counts {
            results.push(run_one(args, &plan, kind, preset, threads)?);
        }
    }
    Ok(results)
}

/// The iterations of one (allocator, preset, thread count), each on a fresh frame source,
/// and their medians.
fn run_one(
    args: &BenchArgs,
    plan: &Plan,
    kind: AllocatorKind,
    preset: &pagealloc::presets::Preset,
    threads: usize,
) -> Result<RunResult, String> {
    let mut iterations = Vec::with_capacity(args.iterations);
    let mut metadata = None;
    let mut name = "";
    for iteration in 0..args.iterations {
        if args.sim {
            iterations.push(super::sim::iteration(args, preset.name, threads, plan.blocks, iteration)?);
            (name, metadata) = ("pagealloc (simulated)", Some(pagealloc::FRAME_METADATA_BYTES));
            continue;
        }
        let source = make_source(kind, plan.frames, preset)?;
        metadata = source.metadata_bytes_per_frame();
        name = source.name();
        let (source, blocks) = (source.as_ref(), plan.blocks);
        iterations.push(match args.bench {
            BenchKind::Bulk => bulk(source, threads, blocks, args.order, args.free_batch as usize),
            BenchKind::Repeat => repeat(source, threads, blocks, args.order),
            BenchKind::Rand => rand(source, threads, blocks, args.order, args.free_batch as usize),
            BenchKind::Frag => frag(source, threads, blocks, args.frag_rounds, iteration as u64 + 1),
        });
    }
    let spread = |pick: fn(&Iteration) -> Option<f64>| {
        let mut values: Vec<f64> = iterations.iter().filter_map(pick).collect();
        Spread::of(&mut values)
    };
    let per_round = |pick: fn(&Iteration, usize) -> f64| -> Vec<f64> {
        (0..args.frag_rounds)
            .map(|round| {
                let mut values: Vec<f64> = iterations.iter().map(|it| pick(it, round)).collect();
                Spread::of(&mut values).map_or(0.0, |s| s.median)
            })
            .collect()
    };
    let frag = args.bench == BenchKind::Frag;
    Ok(RunResult {
        bench: args.bench,
        allocator: name,
        preset: (kind == AllocatorKind::Pagealloc).then(|| preset.name.to_string()),
        order: args.order,
        threads,
        threads_max: args.threads_max(),
        memory_gib: args.memory_gib,
        iterations: args.iterations,
        free_batch: args.free_batch,
        alloc_ns: spread(|it| it.alloc_ns),
        free_ns: spread(|it| it.free_ns),
        pair_ns: spread(|it| it.pair_ns),
        free_huge_pct: frag.then(|| per_round(|it, round| it.free_huge_pct[round])),
        pack_moves: frag.then(|| per_round(|it, round| it.pack_moves[round] as f64)),
        metadata_bytes_per_frame: metadata,
        sim_costs: super::sim::SimCosts::mean(&iterations.iter().filter_map(|it| it.sim_costs).collect::<Vec<_>>()),
    })
}
