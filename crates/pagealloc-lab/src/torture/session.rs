//! One preset's torture run: a fresh machine and shadow, the workers on their own threads,
//! and this thread as the supervisor that runs the quiescent checks on schedule and keeps
//! the progress bar current.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use pagealloc::platform::Platform;
use pagealloc::presets::Preset;

use super::cache::PageCache;
use super::checker::{final_check, quiescent_check, CheckStats};
use super::machine;
use super::panicky::PanickyClient;
use super::shadow::FrameShadow;
use super::tally::Tally;
use super::violations::Violations;
use super::worker::{Shared, Worker};
use super::TortureArgs;

/// How often the supervisor wakes to redraw the bar when no check is due sooner.
const BAR_REFRESH: Duration = Duration::from_millis(100);

/// What one preset's run did.
pub struct PresetRun {
    pub preset: &'static str,
    pub workers: usize,
    pub cpus: usize,
    pub managed_pages: u64,
    pub memory_mib: u64,
    pub elapsed_s: f64,
    pub tally: Tally,
    pub checks: CheckStats,
    /// Pages reclaim took from the page cache: (background, direct); direct reclaims.
    pub reclaimed_pages: (u64, u64),
    pub allocstalls: u64,
    /// Pages compaction moved in the cache, moves the cache refused, and the allocator's
    /// compaction counters summed over nodes.
    pub migrated_pages: (u64, u64),
    /// The migration client's deliberate panics, each caught by the worker it unwound to.
    pub client_panics: u64,
    pub compaction: pagealloc::compaction::CompactStats,
    pub violations: u64,
    pub first_violations: Vec<String>,
}

fn progress_bar(preset: &str, seconds: u64) -> Result<ProgressBar, String> {
    // Drawn on stderr, and not at all when stderr is not a terminal.
    let bar = ProgressBar::new(seconds);
    let style = ProgressStyle::with_template("{prefix} {elapsed_precise} [{bar:30}] {pos}/{len} s {msg}")
        .map_err(|e| e.to_string())?
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(preset.to_string());
    Ok(bar)
}

/// Runs `preset` for `args.seconds` with `workers` threads and returns its counts.
pub fn run_preset(preset: &'static Preset, args: &TortureArgs, workers: usize) -> Result<PresetRun, String> {
    let mut allocator = machine::build(preset, args.memory_mib, args.memory_only_node_mib)?;
    let shadow = Arc::new(FrameShadow::new(machine::spans(&allocator)));
    let bar = progress_bar(preset.name, args.seconds)?;
    let violations = Arc::new(Violations::new(bar.clone()));
    let cache = Arc::new(PageCache::new(shadow.clone(), violations.clone()));
    allocator.set_reclaim(cache.clone());
    let client = Arc::new(PanickyClient::new(cache.clone(), args.client_panic_every));
    allocator.set_migrate(client.clone());
    let (gate, stop, totals) = (RwLock::new(()), AtomicBool::new(false), Mutex::new(Tally::default()));
    let offline = Mutex::new(Vec::new());
    let shared = Shared {
        allocator: &allocator,
        shadow: &shadow,
        violations: &violations,
        gate: &gate,
        stop: &stop,
        totals: &totals,
        churn_cap_pages: allocator.counters().managed_pages() / workers as u64,
        cache: &cache,
        // A quarter of memory: enough to carry the hogs' fills through reclaim.
        cache_cap_pages: allocator.counters().managed_pages() / 4,
        offline: &offline,
    };
    let mut stats = CheckStats::default();
    let elapsed_s = run_workers(&shared, args, workers, &bar, &mut stats)?;
    bring_back(&allocator, &cache, &offline, &violations);
    final_check(&shared, &mut stats);
    let allocstalls =
        (0..allocator.nodes().len() as u16).map(|node| allocator.counters().reclaim_stats(node).allocstall).sum();
    let mut compaction = pagealloc::compaction::CompactStats::default();
    for node in 0..allocator.nodes().len() as u16 {
        compaction += allocator.counters().compaction_stats(node);
    }
    bar.finish_and_clear();
    let tally = totals.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(PresetRun {
        preset: preset.name,
        workers,
        cpus: allocator.platform().nr_cpus(),
        managed_pages: allocator.counters().managed_pages(),
        memory_mib: args.memory_mib,
        elapsed_s,
        tally,
        checks: stats,
        reclaimed_pages: cache.reclaimed(),
        allocstalls,
        migrated_pages: cache.migrations(),
        client_panics: client.panics(),
        compaction,
        violations: violations.count(),
        first_violations: violations.first(),
    })
}

/// Runs `workers` torture threads under `supervise` until `args.seconds` pass; returns the
/// seconds elapsed. A thread that cannot start stops the others.
fn run_workers(
    shared: &Shared<'_>,
    args: &TortureArgs,
    workers: usize,
    bar: &ProgressBar,
    stats: &mut CheckStats,
) -> Result<f64, String> {
    let start = Instant::now();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(workers);
        for index in 0..workers {
            let builder = std::thread::Builder::new().name(format!("torture-{index}"));
            match builder.spawn_scoped(scope, move || Worker::new(shared, index, args.seed).run()) {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    shared.stop.store(true, Ordering::Relaxed);
                    return Err(format!("starting worker {index}: {error}"));
                }
            }
        }
        let deadline = start + Duration::from_secs(args.seconds);
        supervise(shared, Duration::from_millis(args.check_ms), deadline, bar, stats);
        shared.stop.store(true, Ordering::Relaxed);
        for (index, handle) in handles.into_iter().enumerate() {
            if handle.join().is_err() {
                shared.violations.report(format!("worker {} panicked", index + 1));
            }
        }
        Ok(())
    })?;
    Ok(start.elapsed().as_secs_f64())
}

/// After the workers: the page cache gives back everything it holds and every range taken
/// offline comes back, so the final check sees all memory.
fn bring_back(
    allocator: &pagealloc::PageAllocator<pagealloc::platform::StdPlatform>,
    cache: &PageCache,
    offline: &Mutex<Vec<std::ops::Range<u64>>>,
    violations: &Violations,
) {
    cache.evict(allocator, u64::MAX);
    for range in offline.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).drain(..) {
        if let Err(error) = allocator.hotplug().online(range.clone()) {
            violations.report(format!("end: online {:#x}..{:#x}: {error}", range.start, range.end));
        }
    }
}

/// Until the deadline: a quiescent check every `check_period`, and the bar redrawn between.
fn supervise(
    shared: &Shared<'_>,
    check_period: Duration,
    deadline: Instant,
    bar: &ProgressBar,
    stats: &mut CheckStats,
) {
    let start = Instant::now();
    let mut next_check = start + check_period;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        std::thread::sleep(next_check.min(deadline).min(now + BAR_REFRESH) - now);
        if Instant::now() >= next_check {
            quiescent_check(shared, stats);
            // From the check's end: a slow check must not make the next one due at once.
            next_check = Instant::now() + check_period;
        }
        let ops = shared.totals.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).total_ops();
        bar.set_position(start.elapsed().as_secs());
        bar.set_message(format!("{ops} ops, {} checks, {} violations", stats.checks, shared.violations.count()));
    }
}
