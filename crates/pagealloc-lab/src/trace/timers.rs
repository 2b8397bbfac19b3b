//! When the traced kernel's vmstat timer ran on each CPU, as far as the trace shows it.
//!
//! Linux re-arms vmstat_update() about a second after it ran, rounded to a whole second
//! (round_jiffies_relative()) and deferrable, so an idle CPU runs it late: the real
//! period wanders between about 0.75 s and several seconds. A pass that decays a pageset
//! shows up as a burst of `mm_page_pcpu_drain` events by that CPU's kernel worker; a pass
//! with nothing to drain leaves no trace. The replay fires each CPU's timer at the bursts
//! the trace shows, and a period after the last pass where it shows none. A capture's
//! zoneinfo samples show more passes: one that drained nothing still cut some pageset's
//! high by an eighth between two samples.

use pagealloc::views::ZoneinfoZone;

use super::parse::{EventKind, TraceEvent};

/// A gap between a worker's drains that starts a new burst (one pass drains in one go).
const BURST_GAP_NS: u64 = 1_000_000;

/// Per CPU, the start of each burst of drains by its kernel worker (ns from the trace's
/// first event), ascending.
#[derive(Clone, Debug, Default)]
pub struct TimerSchedule {
    bursts_ns: Vec<Vec<u64>>,
}

/// How the replay times each CPU's vmstat pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum TimerMode {
    /// The allocator's own schedule from the trace's start: nothing read from the kernel's
    /// drains (deferrable: at the CPU's first event once due).
    #[default]
    Own,
    /// At the traced worker's drain bursts; a period after the last pass where none shows.
    Trace,
    /// Every period from the phase of the CPU's first worker drain, as the allocator alone
    /// would (deferrable: at the CPU's first event once due).
    Periodic,
}

impl TimerSchedule {
    /// The worker drain bursts of `events`. One pass drains at most `max_pass_pages`
    /// (decay_pcp_high() lowers high by at most batch << CONFIG_PCP_BATCH_SCALE_MAX below
    /// the count), so a burst that drained more was several passes back to back: it is
    /// listed once per pass.
    pub fn from_events(events: &[TraceEvent], max_pass_pages: u64) -> TimerSchedule {
        let first_ns = events.first().map_or(0, |event| event.ts_ns);
        let mut schedule = TimerSchedule::default();
        // Per CPU: the last drain's time and the open burst's pages.
        let mut open: Vec<Option<(u64, u64)>> = Vec::new();
        for event in events.iter().filter(|event| event.kind == EventKind::PcpuDrain && event.kworker) {
            let cpu = event.cpu as usize;
            if open.len() <= cpu {
                open.resize(cpu + 1, None);
                schedule.bursts_ns.resize(cpu + 1, Vec::new());
            }
            let ns = event.ts_ns.saturating_sub(first_ns);
            let pages = 1u64.checked_shl(u32::from(event.order)).unwrap_or(0);
            match open[cpu] {
                Some((last_ns, burst_pages)) if ns.saturating_sub(last_ns) <= BURST_GAP_NS => {
                    open[cpu] = Some((ns, burst_pages + pages));
                }
                _ => {
                    schedule.close_burst(cpu, open[cpu], max_pass_pages);
                    schedule.bursts_ns[cpu].push(ns);
                    open[cpu] = Some((ns, pages));
                }
            }
        }
        for (cpu, burst) in open.into_iter().enumerate() {
            schedule.close_burst(cpu, burst, max_pass_pages);
        }
        schedule
    }

    /// Lists the open burst of `cpu` (already listed once) again for each further pass.
    fn close_burst(&mut self, cpu: usize, burst: Option<(u64, u64)>, max_pass_pages: u64) {
        let Some((_, pages)) = burst else { return };
        let passes = pages.div_ceil(max_pass_pages.max(1));
        let start = *self.bursts_ns[cpu].last().expect("an open burst is listed");
        self.bursts_ns[cpu].extend((1..passes).map(|_| start));
    }

    /// Passes listed on `cpu` at exactly `ns`.
    pub fn passes_at(&self, cpu: usize, ns: u64) -> usize {
        let bursts = self.bursts(cpu);
        bursts.partition_point(|&burst| burst <= ns) - bursts.partition_point(|&burst| burst < ns)
    }

    /// Adds a pass between two consecutive zoneinfo samples wherever a CPU's high fell by
    /// exactly decay_pcp_high()'s eighth (not below high_min) in some zone, at the middle
    /// of the samples' trace markers. Returns the passes added.
    pub fn add_sampled_passes(&mut self, events: &[TraceEvent], samples: &[Vec<ZoneinfoZone>]) -> usize {
        let first_ns = events.first().map_or(0, |event| event.ts_ns);
        let mut marker_ns = vec![None; samples.len()];
        for event in events.iter().filter(|event| event.kind == EventKind::Sample) {
            if let Some(slot) = usize::try_from(event.pfn).ok().and_then(|index| marker_ns.get_mut(index)) {
                *slot = Some(event.ts_ns.saturating_sub(first_ns));
            }
        }
        let mut added = 0;
        for index in 1..samples.len() {
            let (Some(before_ns), Some(after_ns)) = (marker_ns[index - 1], marker_ns[index]) else { continue };
            let (earlier_ns, later_ns) = (before_ns.min(after_ns), before_ns.max(after_ns));
            let mut cpus: Vec<usize> = decayed_cpus(&samples[index - 1], &samples[index]);
            cpus.sort_unstable();
            cpus.dedup();
            for cpu in cpus {
                if self.bursts_ns.len() <= cpu {
                    self.bursts_ns.resize(cpu + 1, Vec::new());
                }
                // A drain burst between the markers is that pass, timed exactly.
                if self.bursts_ns[cpu].iter().any(|&burst| (earlier_ns..=later_ns).contains(&burst)) {
                    continue;
                }
                self.bursts_ns[cpu].push(earlier_ns.midpoint(later_ns));
                added += 1;
            }
        }
        self.bursts_ns.iter_mut().for_each(|passes| passes.sort_unstable());
        added
    }

    /// Bursts seen on `cpu`.
    pub fn bursts(&self, cpu: usize) -> &[u64] {
        self.bursts_ns.get(cpu).map_or(&[], Vec::as_slice)
    }

    /// When `cpu`'s pass after one at `ran_ns` is due: the first burst the trace shows
    /// between half a period and one and a half periods later, else one period later.
    pub fn next_due_ns(&self, cpu: usize, ran_ns: u64, period_ns: u64) -> u64 {
        let bursts = self.bursts(cpu);
        let earliest = ran_ns + period_ns / 2;
        let first_after = bursts.partition_point(|&burst| burst < earliest);
        match bursts.get(first_after) {
            Some(&burst) if burst <= ran_ns + period_ns + period_ns / 2 => burst,
            _ => ran_ns + period_ns,
        }
    }
}

/// Each CPU's next vmstat pass under [`TimerMode::Trace`]. The trace shows when the
/// kernel's timer ran whatever that CPU was doing, so a due pass runs at the first event
/// of any CPU from then on (not deferred to its own CPU's next event).
#[derive(Debug)]
pub struct TracedTimers {
    schedule: TimerSchedule,
    next_due_ns: Vec<u64>,
    /// The least of `next_due_ns`: most events find nothing due with one compare.
    earliest_due_ns: u64,
    period_ns: u64,
}

impl TracedTimers {
    /// First passes: each CPU's first traced pass within one and a half periods, else one
    /// period in.
    pub fn new(schedule: TimerSchedule, cpus: usize, period_ns: u64) -> TracedTimers {
        let next_due_ns: Vec<u64> = (0..cpus)
            .map(|cpu| {
                let first = schedule.bursts(cpu).first().copied();
                first.filter(|&first| first <= period_ns + period_ns / 2).unwrap_or(period_ns)
            })
            .collect();
        let earliest_due_ns = next_due_ns.iter().copied().min().unwrap_or(u64::MAX);
        TracedTimers { schedule, next_due_ns, earliest_due_ns, period_ns }
    }

    /// A CPU whose pass is due at `now_ns`, the earliest first, and how many passes the
    /// trace shows there back to back (at least 1); they count as run.
    pub fn take_due(&mut self, now_ns: u64) -> Option<(usize, usize)> {
        if now_ns < self.earliest_due_ns {
            return None;
        }
        let (cpu, &due_ns) = self.next_due_ns.iter().enumerate().min_by_key(|(_, &due)| due)?;
        self.next_due_ns[cpu] = self.schedule.next_due_ns(cpu, now_ns, self.period_ns);
        self.earliest_due_ns = self.next_due_ns.iter().copied().min().unwrap_or(u64::MAX);
        Some((cpu, self.schedule.passes_at(cpu, due_ns).max(1)))
    }
}

/// CPUs with a pageset whose high went from `before` to `after` as one decay pass cuts it.
fn decayed_cpus(before: &[ZoneinfoZone], after: &[ZoneinfoZone]) -> Vec<usize> {
    super::zoneinfo::paired_pagesets(before, after)
        .into_iter()
        .filter(|(_, old, new)| {
            let decayed = (old.high_pages - (old.high_pages >> 3)).max(old.high_min_pages);
            old.high_pages > old.high_min_pages && new.high_pages == decayed
        })
        .map(|(_, old, _)| old.cpu)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse::parse_line;

    fn drain(task: &str, cpu: u32, seconds: &str) -> TraceEvent {
        let line = format!(
            "{task} [{cpu:03}] d..2. {seconds}: mm_page_pcpu_drain: page=0000000051921008 pfn=0x1bbb8c order=0 migratetype=1"
        );
        parse_line(&line).expect("a drain line")
    }

    #[test]
    fn bursts_are_worker_drains_a_millisecond_apart() {
        let events = [
            drain("kworker/0:1-11286", 0, "100.000000"),
            drain("kworker/0:1-11286", 0, "100.000400"),
            drain("cc1-400", 0, "100.500000"),
            drain("kworker/1:2-30929", 1, "100.700000"),
            drain("kworker/0:1-11286", 0, "101.048000"),
        ];
        let schedule = TimerSchedule::from_events(&events, 2016);
        assert_eq!(schedule.bursts(0), &[0, 1_048_000_000], "the user task's drain is no timer pass");
        assert_eq!(schedule.bursts(1), &[700_000_000]);
        assert_eq!(schedule.bursts(2), &[] as &[u64]);
    }

    #[test]
    fn a_burst_beyond_one_pass_is_several_passes() {
        let mut events: Vec<TraceEvent> = (0..5).map(|_| drain("kworker/0:1-1", 0, "10.0")).collect();
        events.push(drain("kworker/0:1-1", 0, "11.0"));
        let schedule = TimerSchedule::from_events(&events, 2);
        assert_eq!(schedule.bursts(0), &[0, 0, 0, 1_000_000_000], "5 pages at 2 a pass: 3 passes");
        assert_eq!(schedule.passes_at(0, 0), 3);
        assert_eq!(schedule.passes_at(0, 1_000_000_000), 1);
    }

    #[test]
    fn next_due_follows_the_trace_within_half_a_period() {
        let events =
            [drain("kworker/0:1-1", 0, "10.0"), drain("kworker/0:1-1", 0, "11.2"), drain("kworker/0:1-1", 0, "14.0")];
        let schedule = TimerSchedule::from_events(&events, 2016);
        let second = 1_000_000_000;
        assert_eq!(schedule.next_due_ns(0, 0, second), 1_200_000_000, "the traced pass");
        assert_eq!(schedule.next_due_ns(0, 1_200_000_000, second), 2_200_000_000, "none traced: a period on");
        assert_eq!(schedule.next_due_ns(0, 3_100_000_000, second), 4_000_000_000);
        assert_eq!(schedule.next_due_ns(1, 5, second), second + 5, "a CPU with no bursts");
    }

    #[test]
    fn traced_timers_run_due_passes_earliest_first() {
        let events =
            [drain("kworker/1:1-1", 1, "10.0"), drain("kworker/1:1-1", 1, "10.3"), drain("kworker/0:1-1", 0, "11.2")];
        let second = 1_000_000_000;
        let mut timers = TracedTimers::new(TimerSchedule::from_events(&events, 2016), 2, second);
        assert_eq!(timers.take_due(0), Some((1, 1)), "CPU 1's traced pass at 0");
        assert_eq!(timers.take_due(0), None);
        assert_eq!(timers.take_due(1_300_000_000), Some((1, 1)), "a period on (its 0.3 s burst is too soon)");
        assert_eq!(timers.take_due(1_300_000_000), Some((0, 1)), "CPU 0's traced pass at 1.2 s");
        assert_eq!(timers.take_due(1_300_000_000), None);
    }

    #[test]
    fn a_high_cut_by_an_eighth_between_samples_is_a_pass() {
        let zone = |high: u64| {
            format!(
                "Node 0, zone   Normal\n  pages free     1000\n        min      10\n        low      12\n        high     14\n        spanned  4096\n        present  4096\n        managed  4096\n        protection: (0, 0, 0, 0, 0)\n  pagesets\n    cpu: 0\n              count:    50\n              high:     {high}\n              batch:    63\n              high_min: 100\n              high_max: 1000\n  vm stats threshold: 16\n  node_unreclaimable:  0\n  start_pfn:           0\n"
            )
        };
        let tag = crate::trace::samples::SAMPLE_TAG;
        let text = format!("{tag}0\n{}{tag}1\n{}{tag}2\n{}", zone(800), zone(700), zone(650));
        let samples = crate::trace::samples::parse_samples(&text).unwrap();
        let marker = |number: u32, seconds: &str| {
            parse_line(&format!("pagelab-1 [001] ..... {seconds}: tracing_mark_write: pagelab-sample {number}"))
                .unwrap()
        };
        let events = [marker(0, "10.0"), marker(1, "10.2"), marker(2, "10.4")];
        let mut schedule = TimerSchedule::default();
        assert_eq!(schedule.add_sampled_passes(&events, &samples), 1, "700 is 800 less an eighth; 650 is not 612");
        assert_eq!(schedule.bursts(0), &[100_000_000], "between the two markers");
        // A traced drain burst between the markers is that pass already.
        let mut events = events.to_vec();
        events.insert(1, drain("kworker/0:1-1", 0, "10.15"));
        let mut schedule = TimerSchedule::from_events(&events, 2016);
        assert_eq!(schedule.add_sampled_passes(&events, &samples), 0);
        assert_eq!(schedule.bursts(0), &[150_000_000]);
    }
}
