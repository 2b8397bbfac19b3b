//! `lru-page-fault1`: the 2018 lru_lock scalability RFC's benchmark. will-it-scale
//! page_fault1 with every faulted page added to the LRU and taken off at munmap, in process
//! and thread modes, on a 2-socket, 44-core / 88-thread Xeon E5-2699 v4, on four cumulative
//! kernels: `lru-k1` (PCP batch and high as computed, classic LRU), `lru-k2` (order-0 batch
//! 310, high 1860), `lru-k3` (+ removals under batch locks), `lru-k4` (+ prepared local lists
//! spliced in one hold), and `lru-k4` again with add batches four times larger.
//!
//! The seed's figures are withheld on purpose: the result must come from the mechanism.

use std::collections::BTreeMap;

use super::experiment::{Job, Row};
use super::simulate::{run_args, Setup};
use crate::run::{run_sim, RunArgs, TopologyKind, WorkloadKind};
use crate::workload::{FaultMode, PageFault};

/// The RFC's "batch size x4" run: 4 x the 2018 add batch of 14.
const BATCH_X4_PAGES: u8 = 56;

/// One run of the experiment: a preset, a mode, a task count, an add-batch override.
#[derive(Clone, Copy, Debug)]
struct Point<'a> {
    preset: &'a str,
    mode: FaultMode,
    tasks: usize,
    lru_batch: Option<u8>,
    /// Pages per mapping.
    region_pages: u64,
    duration_ms: u64,
}

pub(super) fn lru_page_fault1(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, bar, machine, .. } = job;
    let task_counts: &[usize] = if quick { &[1, 16] } else { &[1, 4, 16, 32, 64] };
    let batches: &[Option<u8>] = if preset == "lru-k4" { &[None, Some(BATCH_X4_PAGES)] } else { &[None] };
    // will-it-scale maps 128 MiB; quick runs map 32 MiB, so that munmap (where removals
    // happen) still comes several times per task in a shorter run. Full runs last 500 ms:
    // two or more rounds of map, fault and unmap per task at 64 tasks.
    let (region_pages, duration_ms) = if quick { (8_192, 40) } else { (32_768, 500) };
    let mut rows = Vec::new();
    for mode in [FaultMode::Process, FaultMode::Thread] {
        for &tasks in task_counts {
            for &lru_batch in batches {
                bar.set_message(format!("{preset}, {mode:?} x{tasks}"));
                let point = Point { preset, mode, tasks, lru_batch, region_pages, duration_ms };
                rows.push(run_point(&point, seed, machine)?);
            }
        }
    }
    Ok(rows)
}

fn run_point(point: &Point<'_>, seed: u64, machine: Option<&crate::machine::SimMachine>) -> Result<Row, String> {
    let Point { preset, mode, tasks, lru_batch, region_pages, duration_ms } = *point;
    let setup = Setup {
        workload: WorkloadKind::PageFault1,
        topology: TopologyKind::Server88,
        cpus: tasks,
        memory_gib: 32,
        duration_ms,
        machine: machine.cloned(),
    };
    let workload = PageFault { lru: true, region_pages, ..PageFault::new(mode, crate::preset_arg::release_of(preset)) }
        .on_machine(&super::simulate::machine(&setup));
    let args = RunArgs { lru_batch, mode, ..run_args(&setup, preset, seed, false) };
    let report = run_sim(&workload, &args)?;
    // Every wait as a share of all tasks' time over the run.
    let cpu_ns = (report.elapsed_s * 1e9 * tasks as f64).max(1.0);
    let mut metrics = BTreeMap::new();
    metrics.insert("faults_per_sec".to_string(), report.work_per_sec);
    let lru = report.lru.as_ref().ok_or("the run built no LRU")?;
    metrics.insert("lru_lock_wait_pct".to_string(), lru.lock_wait_ns as f64 * 100.0 / cpu_ns);
    metrics.insert("lru_lock_wait_ms".to_string(), lru.lock_wait_ns as f64 / 1e6);
    metrics.insert("lru_batch_lock_wait_pct".to_string(), lru.batch_lock_wait_ns as f64 * 100.0 / cpu_ns);
    metrics.insert("zone_lock_wait_pct".to_string(), report.zone_lock.wait_ns as f64 * 100.0 / cpu_ns);
    if let Some(stats) = &report.sim {
        // Writers' waits for the lock and readers' for a writer's hold or the word.
        let mm_wait_ns = stats.workload_lock.wait_ns + stats.workload_lock.rmw_wait_ns;
        let mm_wait_pct = mm_wait_ns as f64 * 100.0 / cpu_ns;
        metrics.insert("mm_wait_pct".to_string(), mm_wait_pct);
    }
    let mode_name = if mode == FaultMode::Process { "process" } else { "thread" };
    let label = match lru_batch {
        None => format!("{preset} {mode_name} x{tasks}"),
        Some(pages) => format!("{preset} batch-{pages} {mode_name} x{tasks}"),
    };
    let params = serde_json::json!({ "mode": mode, "tasks": tasks });
    Ok(Row { preset: label, params, metrics })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight processes on 2 MiB mappings for 4 ms: several munmaps per process.
    fn small(preset: &str, seed: u64) -> Row {
        let point =
            Point { preset, mode: FaultMode::Process, tasks: 8, lru_batch: None, region_pages: 512, duration_ms: 4 };
        run_point(&point, seed, None).unwrap()
    }

    #[test]
    fn runs_are_deterministic_and_batch_locks_take_removals_off_the_lru_lock() {
        let classic = small("lru-k2", 3);
        assert_eq!(serde_json::to_string(&classic).unwrap(), serde_json::to_string(&small("lru-k2", 3)).unwrap());
        let scaled = small("lru-k3", 3);
        assert!(classic.metrics["lru_lock_wait_ms"] > 0.0, "{classic:?}");
        // Under batch locks only the adds take the node lock; the removals' batch locks
        // collide too (three of 32 per page), but all LRU waits together stay below the
        // classic node lock's.
        assert!(scaled.metrics["lru_lock_wait_ms"] < classic.metrics["lru_lock_wait_ms"] / 2.0, "{scaled:?}");
        assert_eq!(classic.metrics["lru_batch_lock_wait_pct"], 0.0);
        let scaled_wait_pct = scaled.metrics["lru_lock_wait_pct"] + scaled.metrics["lru_batch_lock_wait_pct"];
        assert!(scaled_wait_pct < classic.metrics["lru_lock_wait_pct"], "{scaled:?} against {classic:?}");
    }

    #[test]
    fn thread_mode_waits_on_the_shared_mmap_sem_and_process_mode_does_not() {
        let point =
            |mode| Point { preset: "lru-k1", mode, tasks: 4, lru_batch: None, region_pages: 512, duration_ms: 4 };
        let process = run_point(&point(FaultMode::Process), 1, None).unwrap();
        let thread = run_point(&point(FaultMode::Thread), 1, None).unwrap();
        assert_eq!(process.metrics["mm_wait_pct"], 0.0);
        assert!(thread.metrics["mm_wait_pct"] > 1.0, "{thread:?}");
    }
}
