//! `pagelab replay`: a kernel trace's alloc/free stream through the allocator, in trace
//! order, each trace CPU on one of ours, with the allocator's periodic work run on the
//! trace's clock; beside it, the kernel's own answer counted from the same trace.
//! Deterministic: one host thread, a test platform whose CPU and clock the replay sets.

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
use std::path::PathBuf;
use std::sync::Arc;

use pagealloc::types::MigrateType;
use pagealloc::views::ZoneinfoZone;
use pagealloc::{Block, PageAllocator};
use serde::Serialize;

use super::counts::Counts;
use super::initial::{LiveBlock, PagesetStock};
use super::machine::Machine;
use super::parse::{EventKind, Trace, TraceEvent};
use super::pfn_hasher::PfnHasher;
use super::platform::ReplayPlatform;
use super::timeline::{Timeline, TimelinePoint};
use super::timers::{TimerMode, TimerSchedule, TracedTimers};
use super::writer::{FtraceWriter, Tee};

/// What the replay could not do, by reason.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Skipped {
    /// Frees of blocks allocated before the trace began that we could not allocate at the
    /// start either, or frees of a block twice.
    pub free_untracked: u64,
    /// Blocks the trace frees without allocating them, allocated before the first event.
    pub live_at_start: u64,
    /// Pages put in the pagesets before the first event (zoneinfo's counts).
    pub pageset_pages_at_start: u64,
    /// Pages held for the rest of the traced machine's used memory (zoneinfo's free pages).
    pub ballast_pages: u64,
    /// CPUs whose vmstat timer runs in the phase the trace shows.
    pub timers_phased: u64,
    /// Pageset-order allocations the trace shows served straight from the buddy (a failed
    /// pageset trylock), replayed with the trylock refused.
    pub direct_pcp_order_allocs: u64,
    /// Allocations we could not satisfy.
    pub alloc_failed: u64,
    /// Allocations of a pfn the trace never freed: the earlier block is freed first.
    pub alloc_of_live_pfn: u64,
    /// Frees whose order differs from the allocation's (freed at the allocation's order).
    pub free_order_mismatch: u64,
}

/// One preset's replay.
#[derive(Debug, Serialize)]
pub struct Replay {
    pub trace: String,
    pub preset: String,
    /// Lines of the trace, events of the six kinds or not.
    pub lines: u64,
    /// Alloc and free events replayed or skipped.
    pub events: u64,
    pub skipped: Skipped,
    pub kernel: BTreeMap<String, u64>,
    pub ours: BTreeMap<String, u64>,
    /// Where our derived zone parameters differ from the traced machine's (with --zoneinfo).
    pub zoneinfo_differences: Vec<String>,
    pub wall_ms: u64,
    /// Cumulative counts every `--timeline-ms` of trace time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelinePoint>>,
    /// Each pageset's count and high at the end, the kernel's (zoneinfo.after) and ours.
    pub end_pagesets: Vec<super::zoneinfo::PagesetEnd>,
    /// Each pageset's count and high at each of the capture's zoneinfo samples, the kernel's
    /// and ours at the same point of the trace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pageset_samples: Vec<super::samples::PagesetPair>,
}

/// The replay's CPU and clock, for the events it writes.
#[derive(Debug, Default)]
struct ReplayClock {
    cpu: std::sync::atomic::AtomicUsize,
    now_ns: std::sync::atomic::AtomicU64,
}

impl ReplayClock {
    fn now(&self) -> (usize, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.cpu.load(Relaxed), self.now_ns.load(Relaxed))
    }

    fn set(&self, cpu: usize, now_ns: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.cpu.store(cpu, Relaxed);
        self.now_ns.store(now_ns, Relaxed);
    }
}

/// Per traced CPU: the zone-locked blocks just before its current event, to tell an
/// allocation served straight from the buddy (one block, then its allocation).
#[derive(Clone, Copy, Debug, Default)]
struct ZoneLockedRun {
    blocks: u32,
    last_pfn: u64,
    percpu_refill: bool,
}

/// The replay of one trace on one allocator.
struct Replayer {
    allocator: PageAllocator<ReplayPlatform>,
    runs: Vec<ZoneLockedRun>,
    /// Traced pfn -> our block.
    blocks: HashMap<u64, Block, BuildHasherDefault<PfnHasher>>,
    clock: Arc<ReplayClock>,
    /// Blocks standing for memory the traced machine had in use, held to the end.
    ballast: Vec<Block>,
    cpus: usize,
    start_ns: Option<u64>,
    now_ns: u64,
    events: u64,
    skipped: Skipped,
    /// The traced timer passes, when the replay follows them.
    traced_timers: Option<TracedTimers>,
}

impl Replayer {
    fn step(&mut self, event: &TraceEvent) {
        let traced_cpu = event.cpu as usize;
        if self.runs.len() <= traced_cpu {
            self.runs.resize(traced_cpu + 1, ZoneLockedRun::default());
        }
        let run = self.runs[traced_cpu];
        self.runs[traced_cpu] = match event.kind {
            EventKind::ZoneLocked => {
                ZoneLockedRun { blocks: run.blocks + 1, last_pfn: event.pfn, percpu_refill: event.percpu_refill }
            }
            EventKind::Extfrag | EventKind::Sample => run,
            _ => ZoneLockedRun::default(),
        };
        match event.kind {
            EventKind::Alloc | EventKind::Free => {}
            // A drain shows its CPU running: timer work due there runs now, not at that
            // CPU's next allocation or free (the trace's own clock for the timers). So does
            // a sample's marker, whose pairing then sees the passes due before it.
            EventKind::PcpuDrain | EventKind::Sample => {
                self.run_timers(event);
                return;
            }
            _ => return,
        }
        let direct =
            event.kind == EventKind::Alloc && run.blocks == 1 && run.percpu_refill && run.last_pfn == event.pfn;
        self.events += 1;
        self.run_timers(event);
        let platform = self.allocator.platform();
        match event.kind {
            EventKind::Alloc if direct => {
                // The kernel's pageset trylock failed here: so does ours.
                self.skipped.direct_pcp_order_allocs += 1;
                platform.refuse_pcp_trylock();
                self.alloc(event);
                self.allocator.platform().allow_pcp_trylock();
            }
            EventKind::Alloc => self.alloc(event),
            _ => self.free(event),
        }
    }

    /// Brings the clock to `event`'s time and runs the timer work due on its CPU (vmstat's
    /// work is deferrable: an idle CPU's waits until the CPU runs), leaving that CPU current.
    fn run_timers(&mut self, event: &TraceEvent) {
        let start_ns = *self.start_ns.get_or_insert(event.ts_ns);
        // The event's own time: a simulated trace's CPUs keep clocks of their own.
        let event_ns = event.ts_ns.saturating_sub(start_ns);
        let platform = self.allocator.platform();
        platform.advance_ns(event_ns.saturating_sub(self.now_ns));
        self.now_ns = self.now_ns.max(event_ns);
        let cpu = event.cpu as usize % self.cpus;
        platform.set_cpu(cpu);
        if let Some(timers) = self.traced_timers.as_mut() {
            while let Some((due_cpu, passes)) = timers.take_due(event_ns) {
                platform.set_cpu(due_cpu);
                self.clock.set(due_cpu, start_ns + event_ns);
                (0..passes).for_each(|_| _ = self.allocator.background().vmstat_tick(due_cpu));
            }
            platform.set_cpu(cpu);
        }
        self.clock.set(cpu, start_ns + event_ns);
        self.allocator.background().run_due_work(cpu, event_ns);
    }

    /// Allocates the blocks live before the trace, spread over the CPUs.
    fn allocate_live(&mut self, live: &[LiveBlock], zones: Option<&[pagealloc::views::ZoneinfoZone]>) {
        for (index, block) in live.iter().enumerate() {
            self.allocator.platform().set_cpu(index % self.cpus);
            match self.allocator.alloc_pages(block.order, super::initial::request_for(block.pfn, zones)) {
                Ok(ours) => {
                    self.blocks.insert(block.pfn, ours);
                    self.skipped.live_at_start += 1;
                }
                Err(_) => self.skipped.alloc_failed += 1,
            }
        }
    }

    fn alloc(&mut self, event: &TraceEvent) {
        let migratetype = MigrateType::from_index(event.migratetype.max(0) as usize);
        let migratetype = if migratetype.is_mergeable() { migratetype } else { MigrateType::Unmovable };
        let request = event.gfp.request(migratetype);
        match self.allocator.alloc_pages(event.order, request) {
            Ok(block) => {
                if let Some(earlier) = self.blocks.insert(event.pfn, block) {
                    self.skipped.alloc_of_live_pfn += 1;
                    self.allocator.free_pages(earlier).expect("a replayed block frees");
                }
            }
            Err(_) => self.skipped.alloc_failed += 1,
        }
    }

    /// Feeds every event of `trace`, counting the kernel's answer into `counts.0` beside
    /// ours (`counts.1`); returns the timeline, if asked for, and the zoneinfo samples' log.
    fn feed(
        &mut self,
        trace: &Trace,
        (kernel, ours): (&Counts, &Counts),
        timeline_ms: Option<u64>,
        samples: Vec<Vec<ZoneinfoZone>>,
    ) -> (Option<Timeline>, super::samples::SampleLog) {
        let mut sample_log = super::samples::SampleLog::new(samples);
        let mut timeline = timeline_ms.map(Timeline::new);
        let mut first_ns = None;
        let mut last_ns = 0;
        for event in &trace.events {
            if let Some(timeline) = timeline.as_mut() {
                last_ns = event.ts_ns - *first_ns.get_or_insert(event.ts_ns);
                timeline.observe(last_ns, kernel, ours);
            }
            kernel.count_kernel(event);
            self.step(event);
            sample_log.observe(event, || ZoneinfoZone::from_allocator(&self.allocator));
        }
        if let Some(timeline) = timeline.as_mut() {
            timeline.finish(last_ns, kernel, ours);
        }
        (timeline, sample_log)
    }

    /// Each CPU's vmstat timer runs from the traced passes (the allocator's own schedule
    /// then never fires), in the phase of its first drain by a kernel worker, or (`own`) on
    /// the allocator's schedule as it stands.
    fn phase_timers(&mut self, start: &super::initial::TraceStart, interval_ns: u64, timers: TimerMode) {
        if timers == TimerMode::Own {
            return;
        }
        let traced = self.traced_timers.is_some();
        for cpu in 0..self.cpus {
            let first = start.first_worker_drain_ns.get(cpu).copied().flatten();
            self.skipped.timers_phased += u64::from(first.is_some());
            match first {
                _ if traced => _ = self.allocator.background().set_vmstat_due(cpu, u64::MAX),
                Some(first_ns) => _ = self.allocator.background().set_vmstat_due(cpu, first_ns % interval_ns),
                None => {}
            }
        }
    }

    fn free(&mut self, event: &TraceEvent) {
        let Some(block) = self.blocks.remove(&event.pfn) else {
            self.skipped.free_untracked += 1;
            return;
        };
        if block.order() != event.order {
            self.skipped.free_order_mismatch += 1;
        }
        self.allocator.free_pages(block).expect("a replayed block frees");
    }
}

/// How a replay runs, besides its trace, machine and preset.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    pub stock: PagesetStock,
    pub timeline_ms: Option<u64>,
    /// Write our events as ftrace text here.
    pub trace_out: Option<PathBuf>,
    /// The traced machine's zoneinfo at the end, to compare the pagesets' end state.
    pub after: Option<Vec<ZoneinfoZone>>,
    /// When each CPU's vmstat pass runs.
    pub timers: TimerMode,
    /// The capture's zoneinfo samples (`zoneinfo.samples`), by sample number.
    pub samples: Vec<Vec<ZoneinfoZone>>,
}

/// Our allocator for `machine` under `preset`, its events counted in `ours` and, with
/// `trace_out`, written as ftrace text stamped by `clock`.
fn build_allocator(
    machine: &Machine,
    preset: &pagealloc::presets::Preset,
    trace_out: Option<&PathBuf>,
    clock: &Arc<ReplayClock>,
    ours: &Arc<Counts>,
) -> Result<PageAllocator<ReplayPlatform>, String> {
    let builder = machine.builder()?.policy(preset.policy);
    let builder = match trace_out {
        Some(path) => {
            let seen = clock.clone();
            let writer = FtraceWriter::create(path, Box::new(move || seen.now()))?;
            builder.event_sink(Box::new(Tee(ours.clone(), writer)))
        }
        None => builder.event_sink(Box::new(ours.clone())),
    };
    PageAllocator::build(builder, ReplayPlatform::new(machine.cpus)).map_err(|error| format!("building: {error:?}"))
}

/// Replays `trace` on `machine` under `preset`.
pub fn replay(trace: &Trace, machine: &Machine, preset_name: &str, options: ReplayOptions) -> Result<Replay, String> {
    let ReplayOptions { stock, timeline_ms, trace_out, after, timers, samples } = options;
    let started = std::time::Instant::now();
    let preset = pagealloc::presets::find(preset_name).ok_or_else(|| format!("unknown preset '{preset_name}'"))?;
    let ours = Arc::new(Counts::default());
    let clock = Arc::new(ReplayClock::default());
    let allocator = build_allocator(machine, preset, trace_out.as_ref(), &clock, &ours)?;
    let zoneinfo_differences = machine.zoneinfo.as_ref().map_or_else(Vec::new, |file| {
        super::zoneinfo::differences(file, &pagealloc::views::ZoneinfoZone::from_allocator(&allocator))
    });
    let kernel = Counts::default();
    let start = super::initial::trace_start(&trace.events);
    let interval_ns = u64::from(pagealloc::sizing::Tunables::default().stat_interval_ms) * 1_000_000;
    // The most one decay pass drains: batch << CONFIG_PCP_BATCH_SCALE_MAX.
    let batch_pages = ZoneinfoZone::from_allocator(&allocator)
        .iter()
        .flat_map(|zone| zone.pagesets.iter().map(|line| line.batch_pages))
        .max()
        .unwrap_or(1);
    let max_pass_pages = batch_pages << preset.policy.pcp.scale_max();
    let mut replayer = Replayer {
        allocator,
        runs: Vec::new(),
        blocks: HashMap::default(),
        clock,
        ballast: Vec::new(),
        cpus: machine.cpus,
        // The trace's first event, whatever its kind: the timer schedule counts from it too.
        start_ns: trace.events.first().map(|event| event.ts_ns),
        now_ns: 0,
        events: 0,
        skipped: Skipped::default(),
        traced_timers: (timers == TimerMode::Trace).then(|| {
            let mut schedule = TimerSchedule::from_events(&trace.events, max_pass_pages);
            schedule.add_sampled_passes(&trace.events, &samples);
            TracedTimers::new(schedule, machine.cpus, interval_ns)
        }),
    };
    replayer.allocate_live(&start.live, machine.zoneinfo.as_deref());
    // What those allocations left in the pagesets is not the snapshot's.
    replayer.allocator.pagesets().drain_all();
    if let Some(zones) = &machine.zoneinfo {
        let seeded = super::initial::seed_pagesets(&replayer.allocator, zones, &start, stock);
        replayer.skipped.pageset_pages_at_start = seeded.pageset_pages;
        replayer.skipped.ballast_pages = seeded.ballast_pages;
        replayer.ballast = seeded.ballast;
    }
    replayer.phase_timers(&start, interval_ns, timers);
    // The start state is not the replay's doing.
    ours.reset();
    let (timeline, sample_log) = replayer.feed(trace, (&kernel, &ours), timeline_ms, samples);
    Ok(Replay {
        trace: trace.name.clone(),
        lines: trace.lines,
        preset: preset_name.to_string(),
        events: replayer.events,
        skipped: replayer.skipped,
        kernel: kernel.to_map(),
        ours: ours.to_map(),
        zoneinfo_differences,
        wall_ms: started.elapsed().as_millis() as u64,
        timeline: timeline.map(|timeline| timeline.points),
        end_pagesets: after.map_or_else(Vec::new, |after| {
            super::zoneinfo::pageset_ends(&after, &ZoneinfoZone::from_allocator(&replayer.allocator))
        }),
        pageset_samples: sample_log.pairs,
    })
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
