//! The simulator runs of `pagelab run`: every workload, exact repeats, and the model's
//! regression checks.

use super::*;
use crate::run::{TopologyKind, WorkloadKind};

fn args(workload: WorkloadKind, cpus: usize, duration_ms: u64) -> RunArgs {
    RunArgs {
        cpus,
        topology: TopologyKind::SmallCache,
        duration_ms: Some(duration_ms),
        memory_gib: 1,
        seed: 7,
        mode: crate::workload::FaultMode::Thread,
        ..RunArgs::defaults(workload)
    }
}

#[test]
fn every_workload_runs_on_the_simulator_and_repeats_exactly() {
    for (workload, duration_ms) in [
        (WorkloadKind::PageBench03, 1),
        (WorkloadKind::PageFault1, 5),
        (WorkloadKind::NetperfPairs, 2),
        (WorkloadKind::UnixPairs, 2),
        (WorkloadKind::Trunc, 10_000),
        (WorkloadKind::Kbuild, 40),
    ] {
        let run = || {
            let args = args(workload, 4, duration_ms);
            run_sim(args.workload().unwrap().as_ref(), &args).unwrap()
        };
        let (first, second) = (run(), run());
        assert!(first.work_units > 0, "{workload:?} did no work");
        assert_eq!(first.work_units, second.work_units, "{workload:?}");
        assert_eq!(first.sim, second.sim, "{workload:?}");
        assert_eq!(first.elapsed_s, second.elapsed_s, "{workload:?}");
    }
}

/// Patch 9's explanation of patch 7's regression, as a regression test of the model: once
/// a pair's tasks trade CPUs, a CPU whose high grew while it sent keeps receiving into a
/// large pageset under patch 7 (no free_high until it fills), while patch 9's free_count
/// detects the consecutive high-order frees at once. Pinned, the two behave alike.
#[test]
fn role_swaps_grow_patch7_pagesets_but_not_patch9s() {
    let pcp_pages_avg = |preset: &str, role_swap_us: Option<u64>| {
        let args = RunArgs {
            preset: preset.into(),
            message_bytes: 65_536,
            role_swap_us,
            co_located: false,
            ..args(WorkloadKind::UnixPairs, 4, 20)
        };
        run_sim(args.workload().unwrap().as_ref(), &args).unwrap().pcp_pages_avg
    };
    let (patch7, patch9) = (pcp_pages_avg("patch7", Some(2_000)), pcp_pages_avg("patch9", Some(2_000)));
    assert!(patch7 > 4.0 * patch9, "patch7 {patch7:.0} pages vs patch9 {patch9:.0}");
    let (pinned7, pinned9) = (pcp_pages_avg("patch7", None), pcp_pages_avg("patch9", None));
    assert!(pinned7 < 2.0 * pinned9, "pinned: patch7 {pinned7:.0} pages vs patch9 {pinned9:.0}");
}

/// Co-located, a pair's frees refill the pageset its next writes allocate from: after the
/// first refills the buddy is left alone, whatever the preset; split over two CPUs, every
/// block the sender allocates comes from the buddy.
#[test]
fn co_located_pairs_allocate_from_their_own_frees() {
    let run = |preset: &str, co_located: bool| {
        let args = RunArgs {
            preset: preset.into(),
            message_bytes: 65_536,
            co_located,
            ..args(WorkloadKind::UnixPairs, if co_located { 2 } else { 4 }, 20)
        };
        run_sim(args.workload().unwrap().as_ref(), &args).unwrap()
    };
    for preset in ["base", "patch9"] {
        let (split, together) = (run(preset, false), run(preset, true));
        // 16 pages a message (blocks of order 3, 2, 1, 0).
        let split_per_message = split.alloc_zone_pages as f64 / split.work_units as f64;
        let together_per_message = together.alloc_zone_pages as f64 / together.work_units as f64;
        assert!(split_per_message > 14.0, "{preset} split: {split_per_message:.2} pages a message");
        assert!(together_per_message < 0.5, "{preset} co-located: {together_per_message:.2} pages a message");
        assert_eq!(together.free_high, 0, "{preset}: no pageset outgrows its high");
    }
}

#[test]
fn trunc_records_its_truncate_time() {
    let args = args(WorkloadKind::Trunc, 2, 10_000);
    let report = run_sim(args.workload().unwrap().as_ref(), &args).unwrap();
    assert_eq!(report.work_units, 1 << 16);
    assert!(report.recorded["truncate_s"] > 0.0);
}

/// Thread-mode page_fault1 follows the preset's release: up to 6.3 every fault and munmap
/// takes the shared mmap_sem, so one thread's munmap stalls the others' faults; from 6.4
/// (per-VMA locks) a fault takes and drops its VMA's lock and only mmap and munmap take the
/// mmap_lock.
#[test]
fn thread_mode_faults_take_the_mmap_sem_before_six_four_and_only_their_vma_after() {
    let run = |preset: &str| {
        let args =
            RunArgs { preset: preset.into(), topology: TopologyKind::Flat, ..args(WorkloadKind::PageFault1, 4, 60) };
        run_sim(args.workload().unwrap().as_ref(), &args).unwrap()
    };
    let (old, new) = (run("lru-k1"), run("mainline"));
    let (old_lock, new_lock) = (&old.sim.as_ref().unwrap().workload_lock, &new.sim.as_ref().unwrap().workload_lock);
    assert!(old_lock.rmws >= 2 * old.work_units, "down_read and up_read per fault: {old_lock:?}");
    assert!(old_lock.rmw_wait_ns > 0, "munmaps under the write lock stall faults: {old_lock:?}");
    // vma_start_read and vma_end_read per fault, an RSS fold per 32 faults at most.
    let per_vma_rmws = 2 * new.work_units;
    assert!((per_vma_rmws..=per_vma_rmws + new.work_units / 32 + 4).contains(&new_lock.rmws), "{new_lock:?}");
    assert!(new_lock.acquisitions * 1000 <= new.work_units, "the mmap_lock at mmap and munmap only: {new_lock:?}");
}

/// `--machine-memory`: the profile's /proc/zoneinfo is the simulated machine's memory, its
/// zones and managed pages as the file has them.
#[test]
fn a_profiles_zoneinfo_is_the_machine_memory() {
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/reference-host.json");
    let mut run = args(WorkloadKind::PageFault1, 2, 2);
    run.machine = Some(crate::run::parse_machine(profile).unwrap());
    run.machine_memory = true;
    let (allocator, ..) = build_machine(&run).unwrap();
    let zones = crate::trace::zoneinfo::parse_zoneinfo(run.sim_machine().zoneinfo.as_deref().unwrap()).unwrap();
    let managed: u64 = zones.iter().map(|zone| zone.managed_pages).sum();
    assert_eq!(allocator.counters().managed_pages(), managed);
    let types: Vec<_> = allocator.zones().iter().map(|zone| zone.state().zone_type()).collect();
    assert_eq!(types, [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]);
    // A built-in machine has no zoneinfo to take.
    let mut seed = args(WorkloadKind::PageFault1, 2, 2);
    seed.machine_memory = true;
    assert!(build_machine(&seed).is_err());
}
