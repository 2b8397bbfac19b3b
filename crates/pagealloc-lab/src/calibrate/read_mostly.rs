//! A read-mostly word: one CPU writes it now and then, the others keep reading it, and each
//! write costs every reader a miss. A zone counter fold, an rwsem's count or a refcount
//! read on many CPUs shares a line this way.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::curve_points::CurveMethod;
use super::lost_time::{Padded, Slices, Spinners, SLICES, SPIN_BATCH};
use super::pinned::released_together;
use super::Effort;
use crate::machine::profile::Curve;

/// Time between the writer's stores to the word.
const WRITE_INTERVAL: Duration = Duration::from_micros(1);

/// Spins until `slice` has passed since `start`, storing to `word` every
/// [`WRITE_INTERVAL`] when `writing`: the stores made.
fn writer_slice(word: &AtomicU64, start: Instant, slice: Duration, writing: bool, writes: u64) -> u64 {
    let mut stores = 0;
    let mut next = start;
    loop {
        let now = Instant::now();
        if now.saturating_duration_since(start) >= slice {
            return stores;
        }
        if writing && now >= next {
            stores += 1;
            word.store(writes + stores, Ordering::Relaxed);
            next = now + WRITE_INTERVAL;
        }
    }
}

/// The word on CPUs `cpus` (at least 2): the first writes, the others read. Each reader's
/// extra ns per write, averaged over the readers.
fn read_mostly_once(cpus: &[usize], phase: Duration) -> Result<f64, String> {
    let readers = cpus.len() - 1;
    // Two words on one line: only the first is written and read, but the index a reader
    // computes could be either, so each load waits for the one before.
    let words = Padded([AtomicU64::new(0), AtomicU64::new(0)]);
    let spinners = Spinners::new(readers);
    let (_, mut results) = released_together(
        cpus,
        "read-mostly",
        |_| Ok(()),
        |index, ()| {
            if index > 0 {
                let mask = black_box(0usize);
                let mut at = 0usize;
                spinners.spin(index - 1, || {
                    for _ in 0..SPIN_BATCH {
                        at = black_box(words.0[at].load(Ordering::Relaxed)) as usize & mask;
                    }
                });
                return Ok(None);
            }
            let _stop = spinners.stop_on_drop();
            spinners.wait_until_running();
            let mut slices = Slices::new(readers);
            let mut writes = 0u64;
            let slice = phase / SLICES;
            for _ in 0..SLICES {
                let quiet_start = spinners.snapshot();
                writer_slice(&words.0[0], Instant::now(), slice, false, writes);
                let eventful_start = spinners.snapshot();
                writes += writer_slice(&words.0[0], Instant::now(), slice, true, writes);
                let end = spinners.snapshot();
                slices.add(&quiet_start, &eventful_start, false);
                slices.add(&eventful_start, &end, true);
            }
            slices.mean_lost_ns_per_event(writes).map(Some)
        },
    )?;
    results.swap_remove(0).ok_or_else(|| "read-mostly: the writer returned no loss".to_string())
}

/// `read_mostly_miss_ns`: at 2 CPUs and up, one writer storing to a shared word about every
/// microsecond and the other CPUs reading it in a dependent loop.
pub fn read_mostly_miss(order: &[usize], effort: &Effort) -> Result<Curve, String> {
    let phase = Duration::from_millis(effort.times(50));
    let method = format!(
        "a writer thread and n-1 reader threads pinned to n CPUs; each reader loads one shared word in a \
         dependent loop while the writer alternates {SLICES} slices of silence and {SLICES} of storing to \
         the word every {} ns, {} ms of each in all; per reader (ns per load with the writes - ns per \
         load without) x loads / writes, averaged over the readers",
        WRITE_INTERVAL.as_nanos(),
        phase.as_millis()
    );
    CurveMethod { unit: "ns", method }
        .measure(order, 2, |cpus| (0..effort.repeats).map(|_| read_mostly_once(cpus, phase)).collect())
}
