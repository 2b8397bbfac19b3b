//! Real threads on a real machine: CPU id from `sched_getcpu` (glibc answers it from the
//! rseq area, no system call), a monotonic clock, and hooks that compile to nothing.
//!
//! Zone locks are parking_lot's adaptive mutex rather than the kernel's FIFO spinlock: a
//! userspace thread can be preempted while holding or waiting for a lock, and a FIFO
//! spinlock then convoys behind the preempted waiter (measured: the multi-thread stress test
//! with more threads than cores slowed by over 100x).

use std::time::Instant;

use super::{Platform, TasLock};

pub struct StdPlatform {
    nr_cpus: usize,
    epoch: Instant,
}

impl StdPlatform {
    /// Platform with one per-CPU slot per CPU the OS reports.
    pub fn new() -> StdPlatform {
        let nr_cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        StdPlatform::with_cpus(nr_cpus)
    }

    /// Platform with `nr_cpus` slots; CPU ids the OS reports are folded into that range.
    pub fn with_cpus(nr_cpus: usize) -> StdPlatform {
        assert!(nr_cpus > 0, "a platform needs at least one CPU");
        StdPlatform { nr_cpus, epoch: Instant::now() }
    }
}

impl Default for StdPlatform {
    fn default() -> Self {
        StdPlatform::new()
    }
}

impl Platform for StdPlatform {
    type RawLock = parking_lot::RawMutex;
    type PcpLock = TasLock;

    #[inline]
    fn current_cpu(&self) -> usize {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: sched_getcpu takes no arguments and only reads per-thread kernel state.
            let cpu = unsafe { libc::sched_getcpu() };
            if cpu >= 0 {
                return cpu as usize % self.nr_cpus;
            }
        }
        0
    }

    fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}
