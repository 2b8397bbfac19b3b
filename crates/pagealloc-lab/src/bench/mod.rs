//! `pagelab bench`: LLFree's allocator benchmark (eval/src/bin/bench.rs and frag.rs),
//! mirrored so numbers compare: memory M GiB of 4 KiB frames, per-thread block count
//! n = frames / threads_max / 2 / 2^order (half of memory in play at threads_max), threads
//! pinned to CPUs and released together.
//!
//! - bulk: each thread allocates n blocks then frees them, last allocated first; the cycle
//!   repeats 2^order times. ns per alloc and per free.
//! - repeat: each thread allocates n blocks and keeps them, then times n * 2^order
//!   alloc+free pairs of one block. ns per pair.
//! - rand: each thread allocates n blocks; all blocks are shuffled across threads (fixed
//!   seed) and each thread frees its share, mostly blocks others allocated.
//! - frag (order 0): all memory is allocated on all threads, shuffled, half freed at random;
//!   then for each round every thread n/10 times frees a random held frame and allocates a
//!   new one. After each round: share of memory free as whole 2 MiB blocks.
//!
//! Each iteration builds a fresh allocator; per-op times are means over a thread's ops,
//! averaged over threads; min/median/max are over iterations.

mod peers;
mod pin;

pub use pin::pin_to_cpu;

use std::sync::Barrier;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::rng::SplitMix64;
use peers::{BuddySystem, FrameSource, Pagealloc};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchKind {
    Bulk,
    Repeat,
    Rand,
    Frag,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AllocatorKind {
    /// pagealloc with the chosen preset (per-CPU pagesets per the preset).
    Pagealloc,
    /// buddy_system_allocator's FrameAllocator behind a std Mutex.
    BuddySystem,
    /// pagealloc's zone allocator with per-CPU pagesets off.
    GlobalLock,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    pub bench: BenchKind,
    #[arg(long, value_enum, default_value = "pagealloc")]
    pub allocator: Vec<AllocatorKind>,
    /// Threads the per-thread block count is sized for.
    #[arg(long, default_value_t = 2)]
    pub threads_max: usize,
    /// Thread counts to run (repeatable); default 1..=threads-max.
    #[arg(short = 'x', long = "threads")]
    pub threads: Vec<usize>,
    #[arg(long, default_value_t = 0)]
    pub order: u8,
    #[arg(long, default_value_t = 4)]
    pub memory_gib: u64,
    #[arg(long, default_value_t = 5)]
    pub iterations: usize,
    /// pagealloc policy preset (see `pagelab presets`).
    #[arg(long, default_value = "mainline")]
    pub preset: String,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// frag: rounds of churn (LLFree: 100).
    #[arg(long, default_value_t = 100)]
    pub frag_rounds: usize,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    fn of(values: &mut [f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let mid = values.len() / 2;
        let median = if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 };
        Some(Spread { min: values[0], median, max: values[values.len() - 1] })
    }
}

#[derive(Debug, Serialize)]
pub struct RunResult {
    pub bench: BenchKind,
    pub allocator: &'static str,
    pub preset: Option<String>,
    pub order: u8,
    pub threads: usize,
    pub threads_max: usize,
    pub memory_gib: u64,
    pub iterations: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alloc_ns: Option<Spread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_ns: Option<Spread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_ns: Option<Spread>,
    /// frag: per round, the median over iterations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_huge_pct: Option<Vec<f64>>,
    pub metadata_bytes_per_frame: Option<usize>,
}

/// One iteration's per-op times (ns) and, for frag, the huge-free share per round.
#[derive(Default)]
struct Iteration {
    alloc_ns: Option<f64>,
    free_ns: Option<f64>,
    pair_ns: Option<f64>,
    free_huge_pct: Vec<f64>,
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    sum / count.max(1) as f64
}

fn ns_per_op(start: Instant, ops: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

/// Runs `work(thread_index)` on `threads` pinned threads released together.
fn on_threads<T: Send>(threads: usize, work: impl Fn(usize, &Barrier) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (work, barrier) = (&work, &barrier);
                scope.spawn(move || {
                    pin::pin_to_cpu(index);
                    work(index, barrier)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("bench thread panicked")).collect()
    })
}

fn take(source: &dyn FrameSource, order: u8) -> u64 {
    source.get(order).unwrap_or_else(|| panic!("{} ran out of memory at order {order}", source.name()))
}

fn bulk(source: &dyn FrameSource, threads: usize, blocks: usize, order: u8) -> Iteration {
    let rounds = 1usize << order;
    let per_thread = on_threads(threads, |_, barrier| {
        let mut held = Vec::with_capacity(blocks);
        let (mut alloc_ns, mut free_ns) = (0.0, 0.0);
        barrier.wait();
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..blocks {
                held.push(take(source, order));
            }
            alloc_ns += ns_per_op(start, blocks);
            let start = Instant::now();
            while let Some(frame) = held.pop() {
                source.put(frame, order);
            }
            free_ns += ns_per_op(start, blocks);
        }
        (alloc_ns / rounds as f64, free_ns / rounds as f64)
    });
    Iteration {
        alloc_ns: Some(mean(per_thread.iter().map(|r| r.0))),
        free_ns: Some(mean(per_thread.iter().map(|r| r.1))),
        ..Iteration::default()
    }
}

fn repeat(source: &dyn FrameSource, threads: usize, blocks: usize, order: u8) -> Iteration {
    let pairs = blocks << order;
    let per_thread = on_threads(threads, |_, barrier| {
        let held: Vec<u64> = (0..blocks).map(|_| take(source, order)).collect();
        barrier.wait();
        let start = Instant::now();
        for _ in 0..pairs {
            let frame = take(source, order);
            source.put(std::hint::black_box(frame), order);
        }
        let pair_ns = ns_per_op(start, pairs);
        barrier.wait();
        for frame in held {
            source.put(frame, order);
        }
        pair_ns
    });
    Iteration { pair_ns: Some(mean(per_thread.into_iter())), ..Iteration::default() }
}

fn shuffle(frames: &mut [u64], rng: &mut SplitMix64) {
    for i in (1..frames.len()).rev() {
        frames.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

fn split(frames: Vec<u64>, parts: usize) -> Vec<Vec<u64>> {
    let chunk = frames.len().div_ceil(parts.max(1)).max(1);
    let mut shares: Vec<Vec<u64>> = frames.chunks(chunk).map(<[u64]>::to_vec).collect();
    shares.resize_with(parts, Vec::new);
    shares
}

fn rand(source: &dyn FrameSource, threads: usize, blocks: usize, order: u8) -> Iteration {
    let allocated = on_threads(threads, |_, barrier| {
        let mut held = Vec::with_capacity(blocks);
        barrier.wait();
        let start = Instant::now();
        for _ in 0..blocks {
            held.push(take(source, order));
        }
        (ns_per_op(start, blocks), held)
    });
    let alloc_ns = mean(allocated.iter().map(|r| r.0));
    let mut all: Vec<u64> = allocated.into_iter().flat_map(|r| r.1).collect();
    shuffle(&mut all, &mut SplitMix64::new(42));
    let shares = split(all, threads);
    let free_ns = on_threads(threads, |index, barrier| {
        let share = &shares[index];
        barrier.wait();
        let start = Instant::now();
        for &frame in share {
            source.put(frame, order);
        }
        ns_per_op(start, share.len())
    });
    Iteration { alloc_ns: Some(alloc_ns), free_ns: Some(mean(free_ns.into_iter())), ..Iteration::default() }
}

fn frag(source: &dyn FrameSource, threads: usize, blocks: usize, rounds: usize, seed: u64) -> Iteration {
    // Everything the allocator will give, on all threads.
    let filled = on_threads(threads, |_, barrier| {
        barrier.wait();
        std::iter::from_fn(|| source.get(0)).collect::<Vec<u64>>()
    });
    let mut all: Vec<u64> = filled.into_iter().flatten().collect();
    let mut rng = SplitMix64::new(seed);
    shuffle(&mut all, &mut rng);
    let keep_from = all.len() / 2;
    for &frame in &all[..keep_from] {
        source.put(frame, 0);
    }
    let mut shares = split(all.split_off(keep_from), threads);
    let churn = (blocks / 10).max(1);
    let mut huge = Vec::with_capacity(rounds);
    let (mut alloc_total, mut free_total) = (0.0, 0.0);
    for round in 0..rounds {
        let results = on_threads(threads, |index, barrier| {
            let mut held = shares[index].clone();
            let mut rng = SplitMix64::new(seed ^ ((round as u64) << 32) ^ index as u64);
            let (mut alloc_ns, mut free_ns) = (0u128, 0u128);
            barrier.wait();
            for _ in 0..churn {
                if held.is_empty() {
                    break;
                }
                let victim = rng.below(held.len() as u64) as usize;
                let start = Instant::now();
                source.put(held.swap_remove(victim), 0);
                free_ns += start.elapsed().as_nanos();
                let start = Instant::now();
                if let Some(frame) = source.get(0) {
                    held.push(frame);
                }
                alloc_ns += start.elapsed().as_nanos();
            }
            (held, alloc_ns as f64 / churn as f64, free_ns as f64 / churn as f64)
        });
        alloc_total += mean(results.iter().map(|r| r.1));
        free_total += mean(results.iter().map(|r| r.2));
        for (index, result) in results.into_iter().enumerate() {
            shares[index] = result.0;
        }
        huge.push(source.free_huge_pct());
    }
    for frame in shares.into_iter().flatten() {
        source.put(frame, 0);
    }
    Iteration {
        alloc_ns: Some(alloc_total / rounds.max(1) as f64),
        free_ns: Some(free_total / rounds.max(1) as f64),
        free_huge_pct: huge,
        ..Iteration::default()
    }
}

fn make_source(kind: AllocatorKind, frames: u64, preset: &pagealloc::presets::Preset) -> Box<dyn FrameSource> {
    match kind {
        AllocatorKind::Pagealloc => Box::new(Pagealloc::new(frames, preset.policy, "pagealloc")),
        AllocatorKind::GlobalLock => {
            let off = pagealloc::presets::find("global-lock").expect("preset exists").policy;
            Box::new(Pagealloc::new(frames, off, "global-lock"))
        }
        AllocatorKind::BuddySystem => Box::new(BuddySystem::new(frames)),
    }
}

/// Runs every (allocator, thread count) combination.
pub fn run_benchmarks(args: &BenchArgs) -> Result<Vec<RunResult>, String> {
    let preset = pagealloc::presets::find(&args.preset).ok_or_else(|| format!("unknown preset '{}'", args.preset))?;
    if args.threads_max == 0 || args.memory_gib == 0 || args.iterations == 0 {
        return Err("--threads-max, --memory-gib and --iterations must be positive".into());
    }
    if args.order > pagealloc::MAX_ORDER {
        return Err(format!("--order {} exceeds {}", args.order, pagealloc::MAX_ORDER));
    }
    if args.bench == BenchKind::Frag && args.order != 0 {
        return Err("frag runs at order 0".into());
    }
    let thread_counts: Vec<usize> =
        if args.threads.is_empty() { (1..=args.threads_max).collect() } else { args.threads.clone() };
    if let Some(&bad) = thread_counts.iter().find(|&&t| t == 0 || t > args.threads_max) {
        return Err(format!("-x {bad}: thread counts run from 1 to --threads-max {}", args.threads_max));
    }
    let frames = args.memory_gib << 18;
    let blocks = ((frames / args.threads_max as u64 / 2) >> args.order) as usize;
    if blocks == 0 {
        return Err("memory too small for this order and thread count".into());
    }
    let mut results = Vec::new();
    for &kind in &args.allocator {
        for &threads in &thread_counts {
            let mut iterations = Vec::with_capacity(args.iterations);
            let mut metadata = None;
            let mut name = "";
            for iteration in 0..args.iterations {
                let source = make_source(kind, frames, preset);
                metadata = source.metadata_bytes_per_frame();
                name = source.name();
                iterations.push(match args.bench {
                    BenchKind::Bulk => bulk(source.as_ref(), threads, blocks, args.order),
                    BenchKind::Repeat => repeat(source.as_ref(), threads, blocks, args.order),
                    BenchKind::Rand => rand(source.as_ref(), threads, blocks, args.order),
                    BenchKind::Frag => frag(source.as_ref(), threads, blocks, args.frag_rounds, iteration as u64 + 1),
                });
            }
            let spread = |pick: fn(&Iteration) -> Option<f64>| {
                let mut values: Vec<f64> = iterations.iter().filter_map(pick).collect();
                Spread::of(&mut values)
            };
            let free_huge_pct = (args.bench == BenchKind::Frag).then(|| {
                (0..args.frag_rounds)
                    .map(|round| {
                        let mut values: Vec<f64> = iterations.iter().map(|it| it.free_huge_pct[round]).collect();
                        Spread::of(&mut values).map_or(0.0, |s| s.median)
                    })
                    .collect()
            });
            results.push(RunResult {
                bench: args.bench,
                allocator: name,
                preset: (kind == AllocatorKind::Pagealloc).then(|| preset.name.to_string()),
                order: args.order,
                threads,
                threads_max: args.threads_max,
                memory_gib: args.memory_gib,
                iterations: args.iterations,
                alloc_ns: spread(|it| it.alloc_ns),
                free_ns: spread(|it| it.free_ns),
                pair_ns: spread(|it| it.pair_ns),
                free_huge_pct,
                metadata_bytes_per_frame: metadata,
            });
        }
    }
    Ok(results)
}

fn cell(spread: &Option<Spread>) -> String {
    spread.map_or_else(|| "-".into(), |s| format!("{:.1} [{:.1}-{:.1}]", s.median, s.min, s.max))
}

pub fn run(args: &BenchArgs) -> Result<(), String> {
    let results = run_benchmarks(args)?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?),
        Format::Table => {
            println!(
                "{:<7} {:<13} {:<9} {:>5} {:>7}  {:<24} {:<24} {:<24}",
                "bench", "allocator", "preset", "order", "threads", "alloc ns median [min-max]", "free ns", "pair ns"
            );
            for r in &results {
                println!(
                    "{:<7} {:<13} {:<9} {:>5} {:>7}  {:<24} {:<24} {:<24}",
                    format!("{:?}", r.bench).to_lowercase(),
                    r.allocator,
                    r.preset.as_deref().unwrap_or("-"),
                    r.order,
                    r.threads,
                    cell(&r.alloc_ns),
                    cell(&r.free_ns),
                    cell(&r.pair_ns)
                );
                if let Some(huge) = &r.free_huge_pct {
                    let at = |round: usize| huge.get(round.saturating_sub(1)).copied().unwrap_or(0.0);
                    println!(
                        "        free as whole 2 MiB blocks: {:.1}% after 10 rounds, {:.1}% after 50, {:.1}% after {}",
                        at(10),
                        at(50),
                        at(huge.len()),
                        huge.len()
                    );
                }
            }
        }
    }
    Ok(())
}
