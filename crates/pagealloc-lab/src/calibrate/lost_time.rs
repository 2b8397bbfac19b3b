//! Time a CPU loses to another CPU's events, from how fast it spins with and without them:
//! threads that each count their loop's iterations into a line of their own, a controller
//! that snapshots the counts at the phases' edges, and the loss per event derived from the
//! two rates: the readers of a read-mostly word (`read_mostly`), the targets of TLB
//! shootdowns (`shootdown`).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A value alone on its cache lines (two, against the adjacent-line prefetcher).
#[repr(align(128))]
#[derive(Default)]
pub struct Padded<T>(pub T);

/// Iterations a spinner runs between publishing its count and looking at the stop flag.
pub const SPIN_BATCH: u64 = 256;

/// The spinners' shared state: a count per spinner, each on its own line, and a stop flag
/// on another, written once.
pub struct Spinners {
    counts: Vec<Padded<AtomicU64>>,
    stop: Padded<AtomicBool>,
}

/// The spinners' counts at one instant.
pub struct Snapshot {
    at: Instant,
    counts: Vec<u64>,
}

/// Iterations counted over an elapsed time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    pub iterations: u64,
    pub ns: f64,
}

impl Spinners {
    pub fn new(spinners: usize) -> Spinners {
        Spinners { counts: (0..spinners).map(|_| Padded::default()).collect(), stop: Padded::default() }
    }

    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Runs `batch` (which does `SPIN_BATCH` iterations of the spinner's loop) until stopped,
    /// publishing the iterations done after each batch.
    pub fn spin(&self, spinner: usize, mut batch: impl FnMut()) {
        let mut iterations = 0u64;
        while !self.stop.0.load(Ordering::Relaxed) {
            batch();
            iterations += SPIN_BATCH;
            self.counts[spinner].0.store(iterations, Ordering::Relaxed);
        }
    }

    /// A counting loop: what a CPU runs in user space between the events it loses time to.
    pub fn count(&self, spinner: usize) {
        let mut counter = 0u64;
        self.spin(spinner, || {
            for _ in 0..SPIN_BATCH {
                counter = black_box(counter + 1);
            }
        });
    }

    /// Waits until every spinner has published a count (they leave the barrier at different
    /// times), a second at most: one that never runs shows as no progress.
    pub fn wait_until_running(&self) {
        let start = Instant::now();
        while self.counts.iter().any(|count| count.0.load(Ordering::Relaxed) == 0)
            && start.elapsed() < Duration::from_secs(1)
        {
            std::hint::spin_loop();
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let counts = self.counts.iter().map(|count| count.0.load(Ordering::Relaxed)).collect();
        Snapshot { at: Instant::now(), counts }
    }

    /// Stops every spinner when dropped: on the controller's every way out, an error's too.
    pub fn stop_on_drop(&self) -> StopOnDrop<'_> {
        StopOnDrop(&self.stop.0)
    }
}

pub struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Snapshot {
    /// Ns from `self` to `later`.
    pub fn ns_to(&self, later: &Snapshot) -> f64 {
        later.at.saturating_duration_since(self.at).as_nanos() as f64
    }

    /// Spinner `spinner`'s iterations from `self` to `later`.
    pub fn phase_to(&self, later: &Snapshot, spinner: usize) -> Phase {
        Phase { iterations: later.counts[spinner].saturating_sub(self.counts[spinner]), ns: self.ns_to(later) }
    }
}

/// What a spinner loses per event, ns: (1 - its rate with the events / its rate without)
/// x the eventful phase's time / events. Equal to (ns per iteration with the events - ns
/// per iteration without) x iterations with them / events. At least 0 (noise can make the
/// eventful rate the higher); an error where the quiet phase counted nothing or no event
/// happened.
pub fn lost_ns_per_event(quiet: Phase, eventful: Phase, events: u64) -> Result<f64, String> {
    if quiet.iterations == 0 || quiet.ns <= 0.0 || eventful.ns <= 0.0 {
        return Err(format!("a spinner made no progress in its quiet phase ({quiet:?})"));
    }
    if events == 0 {
        return Err("no event happened in the eventful phase".into());
    }
    let quiet_rate = quiet.iterations as f64 / quiet.ns;
    let eventful_rate = eventful.iterations as f64 / eventful.ns;
    Ok(((1.0 - eventful_rate / quiet_rate) * eventful.ns / events as f64).max(0.0))
}

/// Slices each phase is cut into, the quiet and eventful slices alternating.
pub const SLICES: u32 = 10;

/// Each spinner's iterations and time summed over the quiet slices and over the eventful
/// ones. The phases alternate in short slices, so that a drift in a spinner's rate (the
/// clock, another guest on the host) weighs on both alike.
pub struct Slices {
    quiet: Vec<Phase>,
    eventful: Vec<Phase>,
    eventful_ns: f64,
}

impl Slices {
    pub fn new(spinners: usize) -> Slices {
        let none = Phase { iterations: 0, ns: 0.0 };
        Slices { quiet: vec![none; spinners], eventful: vec![none; spinners], eventful_ns: 0.0 }
    }

    /// Adds the slice from `from` to `to`, eventful or quiet.
    pub fn add(&mut self, from: &Snapshot, to: &Snapshot, eventful: bool) {
        if eventful {
            self.eventful_ns += from.ns_to(to);
        }
        let phases = if eventful { &mut self.eventful } else { &mut self.quiet };
        for (spinner, phase) in phases.iter_mut().enumerate() {
            let slice = from.phase_to(to, spinner);
            phase.iterations += slice.iterations;
            phase.ns += slice.ns;
        }
    }

    /// The eventful slices' time together, ns.
    pub fn eventful_ns(&self) -> f64 {
        self.eventful_ns
    }

    /// What each spinner lost per event ([`lost_ns_per_event`]) over all the slices, averaged
    /// over the spinners; 0 without spinners.
    pub fn mean_lost_ns_per_event(&self, events: u64) -> Result<f64, String> {
        let mut lost_ns = 0.0;
        for (&quiet, &eventful) in self.quiet.iter().zip(&self.eventful) {
            lost_ns += lost_ns_per_event(quiet, eventful, events)? / self.quiet.len() as f64;
        }
        Ok(lost_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_lost_per_event_is_the_rate_lost_times_the_time_per_event() {
        let quiet = Phase { iterations: 1_000, ns: 1_000.0 };
        // 10% slower over 2,000 ns with 4 events: 200 ns lost, 50 ns per event.
        let eventful = Phase { iterations: 1_800, ns: 2_000.0 };
        assert!((lost_ns_per_event(quiet, eventful, 4).unwrap() - 50.0).abs() < 1e-9);
        // The same by loads: (2000/1800 - 1) ns per load x 1800 loads / 4 writes.
        assert!(((2_000.0 / 1_800.0 - 1.0) * 1_800.0 / 4.0 - 50.0_f64).abs() < 1e-9);
        // Faster with the events (noise) loses nothing.
        let faster = Phase { iterations: 2_200, ns: 2_000.0 };
        assert_eq!(lost_ns_per_event(quiet, faster, 4).unwrap(), 0.0);
    }

    #[test]
    fn slices_sum_each_spinners_quiet_and_eventful_phases() {
        let at = Instant::now();
        let snapshot =
            |ns: u64, counts: [u64; 2]| Snapshot { at: at + Duration::from_nanos(ns), counts: counts.to_vec() };
        let mut slices = Slices::new(2);
        // Spinner 0 runs 1 iteration per ns quiet, 0.9 eventful; spinner 1 loses nothing.
        slices.add(&snapshot(0, [0, 0]), &snapshot(1_000, [1_000, 500]), false);
        slices.add(&snapshot(1_000, [1_000, 500]), &snapshot(2_000, [1_900, 1_000]), true);
        slices.add(&snapshot(2_000, [1_900, 1_000]), &snapshot(3_000, [2_900, 1_500]), false);
        slices.add(&snapshot(3_000, [2_900, 1_500]), &snapshot(4_000, [3_800, 2_000]), true);
        assert_eq!(slices.eventful_ns(), 2_000.0);
        // Spinner 0: 10% of 2,000 ns over 4 events, 50 ns each; spinner 1: none; mean 25.
        assert!((slices.mean_lost_ns_per_event(4).unwrap() - 25.0).abs() < 1e-9);
        assert_eq!(Slices::new(0).mean_lost_ns_per_event(4).unwrap(), 0.0);
    }

    #[test]
    fn a_spinner_that_never_ran_or_no_event_is_an_error() {
        let quiet = Phase { iterations: 0, ns: 1_000.0 };
        let eventful = Phase { iterations: 10, ns: 1_000.0 };
        assert!(lost_ns_per_event(quiet, eventful, 1).unwrap_err().contains("no progress"));
        let quiet = Phase { iterations: 10, ns: 1_000.0 };
        assert!(lost_ns_per_event(quiet, eventful, 0).unwrap_err().contains("no event"));
    }
}
