//! Deterministic single-host-thread platform for tests: the test says which CPU it is on.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

#[cfg(not(feature = "std"))]
use super::TicketLock;
use super::{Platform, TasLock};

#[derive(Debug)]
pub struct TestPlatform {
    nr_cpus: usize,
    current_cpu: AtomicUsize,
    clock_ns: AtomicU64,
}

impl TestPlatform {
    pub fn new(nr_cpus: usize) -> TestPlatform {
        assert!(nr_cpus > 0, "a platform needs at least one CPU");
        TestPlatform { nr_cpus, current_cpu: AtomicUsize::new(0), clock_ns: AtomicU64::new(0) }
    }

    /// Makes later calls run "on" `cpu`.
    pub fn set_cpu(&self, cpu: usize) {
        assert!(cpu < self.nr_cpus, "cpu {cpu} out of range 0..{}", self.nr_cpus);
        self.current_cpu.store(cpu, Relaxed);
    }

    /// Advances the clock.
    pub fn advance_ns(&self, delta_ns: u64) {
        self.clock_ns.fetch_add(delta_ns, Relaxed);
    }
}

impl Platform for TestPlatform {
    #[cfg(feature = "std")]
    type RawLock = parking_lot::RawMutex;
    #[cfg(not(feature = "std"))]
    type RawLock = TicketLock;
    type PcpLock = TasLock;

    fn current_cpu(&self) -> usize {
        self.current_cpu.load(Relaxed)
    }

    fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    fn now_ns(&self) -> u64 {
        self.clock_ns.load(Relaxed)
    }
}
