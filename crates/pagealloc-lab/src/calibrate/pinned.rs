//! Threads pinned one to each CPU of a list, each preparing its own state on its CPU (buffers
//! faulted in there), then released together by one barrier and timed from the release to
//! the last thread's end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use crate::pinning::pin_to_cpu_id;

/// Runs a thread pinned to each CPU of `cpus`: `prepare(index)` before the barrier, then
/// `work(index, &mut prepared)` once every thread is ready. Returns the seconds from the
/// first thread's release to the last thread's end, and each thread's result in the order of
/// `cpus`. The prepared state is dropped after the thread's end is timed. When a thread
/// cannot pin or prepare, no thread works, and the first error is returned.
pub fn released_together<S, T: Send>(
    cpus: &[usize],
    what: &str,
    prepare: impl Fn(usize) -> Result<S, String> + Sync,
    work: impl Fn(usize, &mut S) -> Result<T, String> + Sync,
) -> Result<(f64, Vec<T>), String> {
    let barrier = Barrier::new(cpus.len());
    let unready = AtomicBool::new(false);
    let timed: Vec<_> = std::thread::scope(|scope| {
        let threads: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(index, &cpu)| {
                let (barrier, unready, prepare, work) = (&barrier, &unready, &prepare, &work);
                scope.spawn(move || {
                    let prepared = pin_to_cpu_id(cpu).and_then(|()| prepare(index));
                    if prepared.is_err() {
                        unready.store(true, Ordering::SeqCst);
                    }
                    barrier.wait();
                    let start = Instant::now();
                    let result = match prepared {
                        Ok(_) if unready.load(Ordering::SeqCst) => Err(String::new()),
                        Ok(mut state) => work(index, &mut state),
                        Err(error) => Err(error),
                    };
                    (start, Instant::now(), result)
                })
            })
            .collect();
        threads.into_iter().map(|thread| thread.join()).collect()
    });
    let mut first_start = None::<Instant>;
    let mut last_end = None::<Instant>;
    let mut results = Vec::with_capacity(cpus.len());
    let mut errors = Vec::new();
    for thread in timed {
        let (start, end, result) = thread.map_err(|_| format!("a {what} thread panicked"))?;
        first_start = Some(first_start.map_or(start, |first| first.min(start)));
        last_end = Some(last_end.map_or(end, |last| last.max(end)));
        match result {
            Ok(value) => results.push(value),
            Err(error) => errors.push(error),
        }
    }
    // The empty errors are threads that stood down for another's; report that other's.
    if let Some(error) = errors.iter().find(|error| !error.is_empty()).or(errors.first()) {
        return Err(format!("{what}: {error}"));
    }
    let elapsed_s = match (first_start, last_end) {
        (Some(start), Some(end)) => end.saturating_duration_since(start).as_secs_f64(),
        _ => 0.0,
    };
    Ok((elapsed_s, results))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_works_on_its_own_state_and_is_timed() {
        let cpu = crate::pinning::allowed_cpus()[0];
        let (elapsed_s, results) = released_together(
            &[cpu, cpu],
            "test",
            |index| Ok(vec![index as u64; 4]),
            |index, state| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                Ok(state.iter().sum::<u64>() + index as u64)
            },
        )
        .unwrap();
        assert_eq!(results, [0, 5]);
        assert!(elapsed_s >= 0.005, "{elapsed_s}");
    }

    #[test]
    fn a_thread_that_cannot_prepare_stops_them_all() {
        let cpu = crate::pinning::allowed_cpus()[0];
        let error = released_together(
            &[cpu, cpu],
            "test",
            |index| if index == 1 { Err("no buffer".to_string()) } else { Ok(()) },
            |_, ()| -> Result<(), String> { panic!("no thread works when one is not ready") },
        )
        .unwrap_err();
        assert_eq!(error, "test: no buffer");
        let error = released_together(&[usize::MAX], "test", |_| Ok(()), |_, ()| Ok(())).unwrap_err();
        assert!(error.contains("cannot pin"), "{error}");
    }
}
