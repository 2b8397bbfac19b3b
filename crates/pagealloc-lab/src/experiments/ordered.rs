//! Independent jobs on a few host threads, their results handed back in job order: each
//! simulation is deterministic and owns its state (the simulator keeps it per host thread),
//! so running several at once changes no result, only the wall time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Runs `job(0..count)` on `workers` threads and calls `each(index, result)` on the caller's
/// thread in index order, as soon as every earlier result is in. An error from `each` stops
/// the workers taking new jobs (those running finish) and is returned.
pub fn run_ordered<T: Send, E>(
    count: usize,
    workers: usize,
    job: impl Fn(usize) -> T + Sync,
    mut each: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<(), E> {
    let next_job = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, count.max(1)) {
            let sender = sender.clone();
            let (next_job, stop, job) = (&next_job, &stop, &job);
            scope.spawn(move || {
                // Bounded: each round claims a distinct index below `count`.
                while !stop.load(Ordering::Relaxed) {
                    let index = next_job.fetch_add(1, Ordering::Relaxed);
                    if index >= count || sender.send((index, job(index))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let mut pending = BTreeMap::new();
        let mut next_out = 0;
        // Ends when every worker has ended and dropped its sender.
        for (index, result) in receiver.iter() {
            pending.insert(index, result);
            while let Some(result) = pending.remove(&next_out) {
                if let Err(error) = each(next_out, result) {
                    stop.store(true, Ordering::Relaxed);
                    return Err(error);
                }
                next_out += 1;
            }
        }
        debug_assert_eq!(next_out, count, "a job's result went missing");
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_job_order_whatever_the_workers() {
        for workers in [1, 2, 5] {
            let mut seen = Vec::new();
            let result: Result<(), ()> = run_ordered(
                20,
                workers,
                |index| {
                    // Later jobs finish first.
                    std::thread::sleep(std::time::Duration::from_micros((20 - index as u64) * 50));
                    index * 10
                },
                |index, value| {
                    seen.push((index, value));
                    Ok(())
                },
            );
            assert_eq!(result, Ok(()));
            assert_eq!(seen, (0..20).map(|i| (i, i * 10)).collect::<Vec<_>>(), "{workers} workers");
        }
    }

    #[test]
    fn an_error_stops_the_run_and_is_returned() {
        let ran = AtomicUsize::new(0);
        let result = run_ordered(
            200,
            2,
            |index| {
                ran.fetch_add(1, Ordering::Relaxed);
                // All 200 would take 200 ms of the two workers' time.
                std::thread::sleep(std::time::Duration::from_millis(2));
                index
            },
            |index, _| if index == 3 { Err(format!("job {index} failed")) } else { Ok(()) },
        );
        assert_eq!(result, Err("job 3 failed".to_string()));
        assert!(ran.load(Ordering::Relaxed) < 200, "workers stopped taking jobs");
    }
}
