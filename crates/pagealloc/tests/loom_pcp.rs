//! Loom model of the pageset locking protocol, running the real allocator code: the owner's
//! trylock with buddy fallback, a second thread on the same CPU (a migrated task), and a
//! remote drain taking pageset then zone locks. Loom explores the interleavings of every
//! lock operation; afterwards the invariant checker and conservation must hold, and no
//! interleaving may deadlock.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod loom_lock;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom_lock::LoomLock;
use pagealloc::platform::Platform;
use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};

/// Two CPUs; the CPU a thread runs on is a loom value the model sets.
struct LoomPlatform {
    cpu: AtomicUsize,
}

impl Platform for LoomPlatform {
    type RawLock = LoomLock;
    type PcpLock = LoomLock;

    fn current_cpu(&self) -> usize {
        self.cpu.load(Ordering::Relaxed)
    }
    fn nr_cpus(&self) -> usize {
        2
    }
    fn now_ns(&self) -> u64 {
        0
    }
}

fn small_allocator() -> PageAllocator<LoomPlatform> {
    // 4 pageblocks: the smallest zone with mobility grouping on and pagesets sized normally.
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4096);
    PageAllocator::build(builder, LoomPlatform { cpu: AtomicUsize::new(0) }).unwrap()
}

/// Explores with at most `preemptions` forced preemptions per execution; returns how many
/// executions loom ran.
fn explore(preemptions: usize) -> usize {
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executions.clone();
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(preemptions);
    // The model runs whole allocator calls; spin-yield lock loops add branches.
    model.max_branches = 100_000;
    model.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let allocator = Arc::new(small_allocator());
        // Takes every zone and pageset lock once, creating their loom atomics on this thread
        // before any other thread can see them.
        let managed = allocator.check_invariants().unwrap().managed_pages;
        // Both tasks run on CPU 0: one of them finds the pageset busy and uses the buddy.
        let tasks: Vec<_> = (0..2)
            .map(|i| {
                let allocator = allocator.clone();
                loom::thread::spawn(move || {
                    let order = i as u8;
                    let block = allocator.alloc_pages(order, AllocRequest::USER_MOVABLE).unwrap();
                    allocator.free_pages(block).unwrap();
                })
            })
            .collect();
        // Meanwhile CPU 1 drains CPU 0's pageset remotely.
        allocator.pagesets().drain_all();
        for task in tasks {
            task.join().unwrap();
        }
        allocator.pagesets().drain_all();
        let census = allocator.check_invariants().unwrap();
        assert_eq!(census.free_pages, managed);
    });
    let executions = executions.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("loom explored {executions} interleavings");
    executions
}

#[test]
fn trylock_fallback_and_remote_drain_are_safe() {
    let executions = explore(2);
    assert!(executions > 100, "loom explored only {executions} interleavings");
}

#[test]
#[ignore = "minutes: cargo test --release --test loom_pcp -- --ignored"]
fn trylock_fallback_and_remote_drain_are_safe_deeper() {
    explore(3);
}
