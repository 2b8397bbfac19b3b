//! Independent jobs on a few host threads, their results handed back in job order: each
//! simulation is deterministic and owns its state (the simulator keeps it per host thread),
//! so running several at once changes no result, only the wall time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Sets the flag when dropped during a panic, so a panicking job or `each` stops the other
/// workers taking new jobs instead of leaving them to run every remaining one.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs `job(0..count)` on `workers` threads, started in `start_order` (a permutation of
/// `0..count`), and calls `each(index, result)` on the caller's thread in index order, as
/// soon as every earlier result is in. An error from `each` stops the workers taking new
/// jobs (those running finish) and is returned; a panic in a job or in `each` stops them
/// too, then propagates.
pub fn run_ordered<T: Send, E>(
    start_order: &[usize],
    workers: usize,
    job: impl Fn(usize) -> T + Sync,
    mut each: impl FnMut(usize, T) -> Result<(), E>,
) -> Result<(), E> {
    let count = start_order.len();
    let mut seen = vec![false; count];
    for &index in start_order {
        assert!(index < count && !std::mem::replace(&mut seen[index], true), "start order is not a permutation");
    }
    let next_job = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (sender, receiver) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, count.max(1)) {
            let sender = sender.clone();
            let (next_job, stop, job) = (&next_job, &stop, &job);
            scope.spawn(move || {
                let _stop_on_panic = StopOnPanic(stop);
                // Bounded: each round claims the next place in `start_order`.
                while !stop.load(Ordering::Relaxed) {
                    let Some(&index) = start_order.get(next_job.fetch_add(1, Ordering::Relaxed)) else { break };
                    if sender.send((index, job(index))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        let _stop_on_panic = StopOnPanic(&stop);
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
        // Fewer than `count` results means a job panicked: the scope propagates that panic
        // when it joins the workers.
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_order(count: usize) -> Vec<usize> {
        (0..count).collect()
    }

    #[test]
    fn results_come_back_in_job_order_whatever_the_workers_and_start_order() {
        for (workers, start_order) in
            [(1, in_order(20)), (2, in_order(20)), (5, in_order(20)), (2, (0..20).rev().collect())]
        {
            let mut seen = Vec::new();
            let result: Result<(), ()> = run_ordered(
                &start_order,
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
            assert_eq!(seen, (0..20).map(|i| (i, i * 10)).collect::<Vec<_>>(), "{workers} workers, {start_order:?}");
        }
    }

    #[test]
    fn jobs_start_in_the_start_order() {
        let started = std::sync::Mutex::new(Vec::new());
        let start_order = [3, 0, 2, 1];
        let result: Result<(), ()> =
            run_ordered(&start_order, 1, |index| started.lock().unwrap().push(index), |_, _| Ok(()));
        assert_eq!(result, Ok(()));
        assert_eq!(*started.lock().unwrap(), start_order);
    }

    #[test]
    #[should_panic(expected = "not a permutation")]
    fn a_start_order_naming_a_job_twice_is_refused() {
        let _ = run_ordered(&[0, 0], 1, |index| index, |_, _| Ok::<(), ()>(()));
    }

    #[test]
    fn a_panicking_job_stops_the_workers_and_propagates() {
        let ran = AtomicUsize::new(0);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_ordered(
                &in_order(200),
                2,
                |index| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    assert_ne!(index, 0, "job 0 fails");
                    // All 200 would take 200 ms of the two workers' time.
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    index
                },
                |_, _| Ok::<(), ()>(()),
            )
        }));
        assert!(outcome.is_err(), "the job's panic reached the caller");
        assert!(ran.load(Ordering::Relaxed) < 200, "workers stopped taking jobs");
    }

    #[test]
    fn an_error_stops_the_run_and_is_returned() {
        let ran = AtomicUsize::new(0);
        let result = run_ordered(
            &in_order(200),
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
