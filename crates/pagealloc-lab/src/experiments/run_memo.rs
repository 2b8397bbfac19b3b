//! Simulations that two experiments both need, run once per process: `frag-thpfioscale`'s
//! 1-socket rows without madvise are `frag-thpfioscale-sweep`'s base point, run for the same
//! presets and seeds. A simulation is deterministic for its description, so its result is
//! kept under that description and handed to whichever job asks next. A job asking while
//! another runs the same simulation waits for it instead of running it twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Results by the description of the run that gave them.
pub(super) struct RunMemo<T> {
    runs: Mutex<Option<HashMap<String, Arc<OnceLock<T>>>>>,
}

impl<T: Clone> RunMemo<T> {
    pub(super) const fn new() -> RunMemo<T> {
        RunMemo { runs: Mutex::new(None) }
    }

    /// The result of the run described by `description`: `run`'s, if no job has asked for
    /// it before, else the one kept. `description` must name everything the result depends on
    /// (the `Debug` text of the workload and the run's arguments).
    pub(super) fn get_or_run(&self, description: String, run: impl FnOnce() -> T) -> T {
        let cell = {
            let mut runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            Arc::clone(runs.get_or_insert_with(HashMap::new).entry(description).or_default())
        };
        // Outside the map's lock: other runs go on meanwhile.
        cell.get_or_init(run).clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

    use super::RunMemo;

    #[test]
    fn a_described_run_runs_once_and_others_apart() {
        let memo: RunMemo<u32> = RunMemo::new();
        let runs = AtomicU32::new(0);
        let runs = &runs;
        let run = |value: u32| {
            move || {
                runs.fetch_add(1, Relaxed);
                value
            }
        };
        assert_eq!(memo.get_or_run("a".into(), run(1)), 1);
        assert_eq!(memo.get_or_run("a".into(), run(2)), 1, "the kept result, not a second run");
        assert_eq!(memo.get_or_run("b".into(), run(3)), 3);
        assert_eq!(runs.load(Relaxed), 2);
    }

    #[test]
    fn jobs_asking_at_once_share_one_run() {
        let memo: RunMemo<u64> = RunMemo::new();
        let runs = AtomicU32::new(0);
        let results: Vec<u64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        memo.get_or_run("same".into(), || {
                            runs.fetch_add(1, Relaxed);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            7
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|handle| handle.join().expect("no panic")).collect()
        });
        assert_eq!(results, [7; 4]);
        assert_eq!(runs.load(Relaxed), 1);
    }
}
