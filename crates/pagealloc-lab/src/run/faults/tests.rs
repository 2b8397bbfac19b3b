//! `--faults` on every workload and a few presets: faults happen, the checker finds nothing,
//! a seed repeats, the observer changes no result, and a violation fails the run.

use clap::ValueEnum;

use super::*;
use crate::run::sim::run_sim_checked;
use crate::run::{run_sim, RunArgs, RunReport, TopologyKind, WorkloadKind};

/// Short runs: long enough for a few checks and hundreds of faults, short enough for CI.
fn duration_ms(workload: WorkloadKind) -> u64 {
    match workload {
        WorkloadKind::PageBench03 | WorkloadKind::NetperfPairs | WorkloadKind::UnixPairs => 2,
        WorkloadKind::PageFault1 => 3,
        // Fixed work: it stops when the file is truncated (~25 simulated ms).
        WorkloadKind::Trunc => 10_000,
        WorkloadKind::Kbuild => 20,
        // Fixed work: both regions and the file (~50 simulated ms on 1 GiB).
        WorkloadKind::Thpcompact | WorkloadKind::Thpfioscale => 10_000,
    }
}

fn args(workload: WorkloadKind, preset: &str, faults: FaultArgs) -> RunArgs {
    RunArgs {
        cpus: 4,
        preset: preset.into(),
        topology: TopologyKind::SmallCache,
        duration_ms: Some(duration_ms(workload)),
        memory_gib: 1,
        seed: 5,
        mode: crate::workload::FaultMode::Thread,
        faults,
        ..RunArgs::defaults(workload)
    }
}

fn faults_on() -> FaultArgs {
    FaultArgs { faults: true, ..FaultArgs::default() }
}

fn run(args: &RunArgs) -> RunReport {
    run_sim(args.workload().unwrap().as_ref(), args).unwrap()
}

#[test]
fn every_workload_and_preset_takes_faults_with_no_violation() {
    for &workload in WorkloadKind::value_variants() {
        for preset in ["mainline", "patch7", "vanilla-5.17"] {
            let report = run(&args(workload, preset, faults_on()));
            let faults = report.faults.expect("faults on");
            let case = format!("{workload:?} {preset}: {faults:?}");
            assert_eq!(faults.violations, 0, "{case}");
            assert!(faults.first_violations.is_empty(), "{case}");
            assert!(faults.trylock_refusals > 0 && faults.migrations > 0, "{case}");
            assert!(faults.checks >= 3, "{case}");
        }
    }
}

#[test]
fn a_seed_gives_the_same_faults_and_results() {
    let key = |report: RunReport| {
        let faults = report.faults.expect("faults on");
        (report.sim, report.elapsed_s, report.work_units, faults.trylock_refusals, faults.migrations, faults.checks)
    };
    let unix = args(WorkloadKind::UnixPairs, "mainline", faults_on());
    let first = key(run(&unix));
    assert_eq!(first, key(run(&unix)));
    assert_ne!(first, key(run(&RunArgs { seed: 6, ..unix })), "another seed, other faults");
}

/// Faults on at zero probability: only the observer runs, and every result is what the run
/// without it gives.
#[test]
fn the_observer_changes_no_result() {
    let quiet = FaultArgs { fault_trylock_ppm: 0, fault_migrate_ppm: 0, ..faults_on() };
    for workload in [WorkloadKind::UnixPairs, WorkloadKind::Kbuild] {
        let (plain, observed) =
            (run(&args(workload, "mainline", FaultArgs::default())), run(&args(workload, "mainline", quiet)));
        let faults = observed.faults.clone().expect("observer on");
        assert!(faults.checks >= 3 && faults.trylock_refusals == 0 && faults.migrations == 0);
        assert!(plain.faults.is_none());
        assert_eq!(plain.sim, observed.sim, "{workload:?}");
        let lock =
            |report: &RunReport| (report.zone_lock.acquisitions, report.zone_lock.contended, report.zone_lock.wait_ns);
        assert_eq!(lock(&plain), lock(&observed), "{workload:?}: the checks' lock acquisitions are left out");
        let counts =
            |r: &RunReport| (r.work_units, r.allocator_calls, r.alloc_zone_pages, r.free_high, r.pcp_pages_end);
        assert_eq!(counts(&plain), counts(&observed), "{workload:?}");
        assert_eq!((plain.elapsed_s, plain.pcp_pages_avg), (observed.elapsed_s, observed.pcp_pages_avg));
        assert_eq!(plain.pcp_pages_after_idle, observed.pcp_pages_after_idle);
    }
}

/// No hook of the library corrupts its state from outside, so a planted check stands in for
/// a broken allocator: every check fails, the first few are kept with their times, and the
/// run's verdict is an error.
#[test]
fn a_violation_is_counted_kept_and_fails_the_run() {
    fn planted(_: &PageAllocator<SimPlatform>) -> Result<(), String> {
        Err("planted corruption".into())
    }
    let args = RunArgs { duration_ms: Some(8), ..args(WorkloadKind::PageBench03, "mainline", faults_on()) };
    let report = run_sim_checked(args.workload().unwrap().as_ref(), &args, planted).unwrap();
    let faults = report.faults.expect("faults on");
    assert!(faults.checks >= 8);
    assert_eq!(faults.violations, faults.checks);
    assert_eq!(faults.first_violations.len(), KEPT_VIOLATIONS);
    assert_eq!(faults.first_violations[0], "at 1.000 ms: planted corruption");
    let verdict = faults.verdict().unwrap_err();
    assert!(verdict.starts_with(&format!("{} invariant violations", faults.checks)), "{verdict}");
}
