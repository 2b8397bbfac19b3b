//! Real threads hammering one allocator while "migrating" between CPUs (the test platform's
//! CPU id is one shared value any thread may change at any moment, so threads constantly
//! find their CPU's pageset busy or belonging to someone else), with concurrent drains,
//! vmstat ticks and bad frees. At quiescent points the invariant checker and
//! conservation must hold. Short by default; `cargo test --release -- --ignored` runs the
//! long version.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use common::*;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, FreeError, PageAllocator};

const REQUESTS: [AllocRequest; 4] =
    [AllocRequest::USER_MOVABLE, AllocRequest::KERNEL, AllocRequest::RECLAIMABLE, AllocRequest::ATOMIC];

fn stress(preset_name: &str, ops_per_thread: u64, workers: usize) {
    let cpus = 4;
    let builder = AllocatorBuilder::pc_layout(128).policy(preset(preset_name));
    let allocator = build_allocator(builder, cpus);
    let managed = allocator.counters().managed_pages();
    let bad_frees_rejected = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (allocator, rejected) = (&allocator, &bad_frees_rejected);
            scope.spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (worker as u64 + 1));
                let mut held: Vec<Block> = Vec::new();
                for _ in 0..ops_per_thread {
                    match rng.below(100) {
                        0..=4 => allocator.platform().set_cpu(rng.below(cpus as u64) as usize),
                        5..=54 => {
                            let order = [0, 0, 0, 0, 1, 2, 3, 9][rng.below(8) as usize];
                            let request = REQUESTS[rng.below(REQUESTS.len() as u64) as usize];
                            if let Ok(block) = allocator.alloc_pages(order, request) {
                                held.push(block);
                            }
                        }
                        55..=96 if !held.is_empty() => {
                            let block = held.swap_remove(rng.below(held.len() as u64) as usize);
                            allocator.free_pages(block).expect("a held block frees");
                        }
                        97..=99 if !held.is_empty() => {
                            // A bad free of a frame this thread holds inside a larger block
                            // (or with the wrong order) must fail and change nothing. (A
                            // second free of a freed frame is no test under concurrency:
                            // another thread may own that frame again by then.)
                            let block = &held[rng.below(held.len() as u64) as usize];
                            let error = if block.order() > 0 {
                                free_unowned(allocator, block.pfn() + 1, 0).expect_err("interior frame")
                            } else {
                                free_unowned(allocator, block.pfn(), 1).expect_err("wrong order")
                            };
                            assert!(matches!(
                                error,
                                FreeError::NotAllocated { .. }
                                    | FreeError::WrongOrder { .. }
                                    | FreeError::Misaligned { .. }
                            ));
                            rejected.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {}
                    }
                }
                allocator.free_bulk(held).expect("held blocks free");
            });
        }
        // A housekeeping thread: remote drains and vmstat ticks for every CPU.
        let allocator = &allocator;
        scope.spawn(move || {
            for round in 0..ops_per_thread / 200 {
                allocator.pagesets().drain_all();
                allocator.background().vmstat_tick((round % cpus as u64) as usize);
                std::thread::yield_now();
            }
        });
    });
    allocator.pagesets().drain_all();
    let census = allocator.check_invariants().unwrap_or_else(|v| panic!("{preset_name}: {v}"));
    assert_eq!(census.free_pages, managed, "{preset_name}: every page came back");
    assert_eq!(census.pcp_pages + census.allocated_pages, 0);
    assert!(bad_frees_rejected.load(Ordering::Relaxed) > 0);
}

#[test]
fn concurrent_mixed_operations_keep_invariants() {
    for preset_name in ["mainline", "base", "vanilla-5.17", "global-lock"] {
        stress(preset_name, 20_000, 3);
    }
}

#[test]
#[ignore = "long: run with --release -- --ignored"]
fn concurrent_mixed_operations_keep_invariants_long() {
    for preset_name in ["mainline", "patch7", "base", "highpcp-full", "vanilla-5.17", "revert-highpcp", "global-lock"] {
        stress(preset_name, 2_000_000, 4);
    }
}

/// Two threads free copies of one block at the same moment (a barrier releases both), many
/// times over: exactly one free may win, the other gets a typed error, and nothing leaks.
#[test]
fn racing_double_frees_of_one_block_free_it_exactly_once() {
    let allocator = pc_with(64, "mainline", 2);
    let barrier = std::sync::Barrier::new(2);
    for round in 0..2_000 {
        let raw = allocator.alloc_pages((round % 4) as u8, AllocRequest::KERNEL).unwrap().into_raw();
        let results: Vec<Result<(), FreeError>> = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..2)
                .map(|_| {
                    let (allocator, barrier) = (&allocator, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        // SAFETY: deliberately broken: two owners of one block race to free it.
                        allocator.free_pages(unsafe { Block::from_raw(raw) })
                    })
                })
                .collect();
            racers.into_iter().map(|racer| racer.join().unwrap()).collect()
        });
        assert_eq!(results.iter().filter(|result| result.is_ok()).count(), 1, "round {round}: {results:?}");
        let error = results.into_iter().find_map(Result::err).unwrap();
        // The loser saw the block free or merged, never a half state.
        assert!(
            matches!(error, FreeError::DoubleFree { .. } | FreeError::NotAllocated { .. }),
            "round {round}: {error:?}"
        );
    }
    allocator.pagesets().drain_all();
    assert_eq!(allocator.check_invariants().unwrap().free_pages, allocator.counters().managed_pages());
}

/// Real threads on `StdPlatform` (their CPU ids are the kernel's) allocate and free while
/// another thread takes CPUs offline (draining their pagesets) and runs the periodic work,
/// round after round; between rounds, with every thread joined, the checker and
/// conservation must hold.
#[test]
#[cfg(feature = "std")]
fn cpu_offline_races_users_on_std_platform_and_quiescent_checks_pass() {
    let platform = pagealloc::platform::StdPlatform::new();
    let cpus = pagealloc::platform::Platform::nr_cpus(&platform);
    let builder = AllocatorBuilder::pc_layout(64).policy(preset("mainline"));
    let allocator = PageAllocator::build(builder, platform).unwrap();
    let managed = allocator.counters().managed_pages();
    let stop = std::sync::atomic::AtomicBool::new(false);
    for round in 0..20u64 {
        stop.store(false, Ordering::Relaxed);
        let offlined = AtomicU64::new(0);
        std::thread::scope(|scope| {
            let users: Vec<_> = (0..3u64)
                .map(|worker| {
                    let allocator = &allocator;
                    scope.spawn(move || {
                        let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (round * 8 + worker + 1));
                        let mut held: Vec<Block> = Vec::new();
                        for _ in 0..3_000 {
                            if rng.below(100) < 55 || held.is_empty() {
                                let order = [0, 0, 0, 1, 2, 3, 9][rng.below(7) as usize];
                                let request = REQUESTS[rng.below(REQUESTS.len() as u64) as usize];
                                held.extend(allocator.alloc_pages(order, request).ok());
                            } else {
                                let block = held.swap_remove(rng.below(held.len() as u64) as usize);
                                allocator.free_pages(block).expect("a held block frees");
                            }
                        }
                        allocator.free_bulk(held).expect("held blocks free");
                    })
                })
                .collect();
            let (allocator, stop, offlined) = (&allocator, &stop, &offlined);
            scope.spawn(move || {
                let mut now_ns = round * 1_000_000_000;
                // At least one pass; then bounded by the users, who stop after a fixed
                // number of operations.
                loop {
                    for cpu in 0..cpus {
                        allocator.hotplug().cpu_offline(cpu);
                        offlined.fetch_add(1, Ordering::Relaxed);
                        now_ns += 10_000_000;
                        allocator.background().run_due_work(cpu, now_ns);
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::yield_now();
                }
            });
            // Every user joined before the offliner is stopped, and only then a user's
            // panic propagates: stopping first keeps a failing round from hanging.
            let results: Vec<_> = users.into_iter().map(|user| user.join()).collect();
            stop.store(true, Ordering::Relaxed);
            for result in results {
                if let Err(panic) = result {
                    std::panic::resume_unwind(panic);
                }
            }
        });
        assert!(offlined.load(Ordering::Relaxed) > 0);
        let census = allocator.check_invariants().unwrap_or_else(|error| panic!("round {round}: {error}"));
        assert_eq!(census.allocated_pages, 0, "round {round}");
        assert_eq!(census.free_pages + census.pcp_pages, managed, "round {round}");
    }
}
