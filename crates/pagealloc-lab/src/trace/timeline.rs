//! Where in a trace the kernel's answer and ours part: cumulative counts at fixed steps of
//! trace time (`pagelab replay --timeline-ms N`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::counts::Counts;

/// Both counts at one moment, since the first event.
#[derive(Debug, Serialize)]
pub struct TimelinePoint {
    pub t_ms: u64,
    pub kernel: BTreeMap<String, u64>,
    pub ours: BTreeMap<String, u64>,
}

/// Snapshots every `step_ns` of trace time.
#[derive(Debug)]
pub struct Timeline {
    step_ns: u64,
    next_ns: u64,
    pub points: Vec<TimelinePoint>,
}

impl Timeline {
    pub fn new(step_ms: u64) -> Timeline {
        let step_ns = step_ms.max(1) * 1_000_000;
        Timeline { step_ns, next_ns: step_ns, points: Vec::new() }
    }

    /// Call before each event at `since_start_ns`: snapshots every step boundary passed.
    pub fn observe(&mut self, since_start_ns: u64, kernel: &Counts, ours: &Counts) {
        while since_start_ns >= self.next_ns {
            self.points.push(TimelinePoint {
                t_ms: self.next_ns / 1_000_000,
                kernel: kernel.to_map(),
                ours: ours.to_map(),
            });
            self.next_ns += self.step_ns;
        }
    }

    /// The final snapshot.
    pub fn finish(&mut self, end_ns: u64, kernel: &Counts, ours: &Counts) {
        self.points.push(TimelinePoint { t_ms: end_ns / 1_000_000, kernel: kernel.to_map(), ours: ours.to_map() });
    }

    /// One line per step: each key's increase in the step, kernel/ours.
    pub fn print_points(points: &[TimelinePoint], keys: &[&str]) {
        print!("{:>8}", "t_ms");
        for key in keys {
            print!(" {key:>24}");
        }
        println!();
        let mut previous: Option<&TimelinePoint> = None;
        for point in points {
            print!("{:>8}", point.t_ms);
            for key in keys {
                let delta = |map: &BTreeMap<String, u64>, before: Option<&BTreeMap<String, u64>>| {
                    map.get(*key).copied().unwrap_or(0) - before.and_then(|b| b.get(*key).copied()).unwrap_or(0)
                };
                let kernel = delta(&point.kernel, previous.map(|p| &p.kernel));
                let ours = delta(&point.ours, previous.map(|p| &p.ours));
                print!(" {:>24}", format!("{kernel}/{ours}"));
            }
            println!();
            previous = Some(point);
        }
    }
}
