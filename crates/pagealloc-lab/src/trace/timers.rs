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
    /// At the traced worker's drain bursts; a period after the last pass where none shows.
    #[default]
    Trace,
    /// Every period from the phase of the CPU's first worker drain, as the allocator alone
    /// would (deferrable: at the CPU's first event once due).
    Periodic,
}

impl TimerSchedule {
    pub fn from_events(events: &[TraceEvent]) -> TimerSchedule {
        let first_ns = events.first().map_or(0, |event| event.ts_ns);
        let mut schedule = TimerSchedule::default();
        let mut last_drain_ns: Vec<Option<u64>> = Vec::new();
        for event in events.iter().filter(|event| event.kind == EventKind::PcpuDrain && event.kworker) {
            let cpu = event.cpu as usize;
            if last_drain_ns.len() <= cpu {
                last_drain_ns.resize(cpu + 1, None);
                schedule.bursts_ns.resize(cpu + 1, Vec::new());
            }
            let ns = event.ts_ns - first_ns;
            if last_drain_ns[cpu].is_none_or(|last| ns.saturating_sub(last) > BURST_GAP_NS) {
                schedule.bursts_ns[cpu].push(ns);
            }
            last_drain_ns[cpu] = Some(ns);
        }
        schedule
    }

    /// Adds a pass between two consecutive zoneinfo samples wherever a CPU's high fell by
    /// exactly decay_pcp_high()'s eighth (not below high_min) in some zone, at the middle
    /// of the samples' trace markers. Returns the passes added.
    pub fn add_sampled_passes(&mut self, events: &[TraceEvent], samples: &[Vec<ZoneinfoZone>]) -> usize {
        let first_ns = events.first().map_or(0, |event| event.ts_ns);
        let mut marker_ns = vec![None; samples.len()];
        for event in events.iter().filter(|event| event.kind == EventKind::Sample) {
            if let Some(slot) = usize::try_from(event.pfn).ok().and_then(|index| marker_ns.get_mut(index)) {
                *slot = Some(event.ts_ns - first_ns);
            }
        }
        let mut added = 0;
        for index in 1..samples.len() {
            let (Some(before_ns), Some(after_ns)) = (marker_ns[index - 1], marker_ns[index]) else { continue };
            let mut cpus: Vec<usize> = decayed_cpus(&samples[index - 1], &samples[index]);
            cpus.sort_unstable();
            cpus.dedup();
            for cpu in cpus {
                if self.bursts_ns.len() <= cpu {
                    self.bursts_ns.resize(cpu + 1, Vec::new());
                }
                self.bursts_ns[cpu].push(before_ns + (after_ns - before_ns) / 2);
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

/// CPUs with a pageset whose high went from `before` to `after` as one decay pass cuts it.
fn decayed_cpus(before: &[ZoneinfoZone], after: &[ZoneinfoZone]) -> Vec<usize> {
    let mut cpus = Vec::new();
    for zone in after {
        let Some(earlier) =
            before.iter().find(|earlier| (earlier.node, earlier.zone_type) == (zone.node, zone.zone_type))
        else {
            continue;
        };
        for line in &zone.pagesets {
            let Some(old) = earlier.pagesets.iter().find(|old| old.cpu == line.cpu) else { continue };
            let decayed = (old.high_pages - (old.high_pages >> 3)).max(old.high_min_pages);
            if old.high_pages > old.high_min_pages && line.high_pages == decayed {
                cpus.push(line.cpu);
            }
        }
    }
    cpus
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
        let schedule = TimerSchedule::from_events(&events);
        assert_eq!(schedule.bursts(0), &[0, 1_048_000_000], "the user task's drain is no timer pass");
        assert_eq!(schedule.bursts(1), &[700_000_000]);
        assert_eq!(schedule.bursts(2), &[] as &[u64]);
    }

    #[test]
    fn next_due_follows_the_trace_within_half_a_period() {
        let events =
            [drain("kworker/0:1-1", 0, "10.0"), drain("kworker/0:1-1", 0, "11.2"), drain("kworker/0:1-1", 0, "14.0")];
        let schedule = TimerSchedule::from_events(&events);
        let second = 1_000_000_000;
        assert_eq!(schedule.next_due_ns(0, 0, second), 1_200_000_000, "the traced pass");
        assert_eq!(schedule.next_due_ns(0, 1_200_000_000, second), 2_200_000_000, "none traced: a period on");
        assert_eq!(schedule.next_due_ns(0, 3_100_000_000, second), 4_000_000_000);
        assert_eq!(schedule.next_due_ns(1, 5, second), second + 5, "a CPU with no bursts");
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
    }
}
