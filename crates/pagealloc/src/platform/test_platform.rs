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

#[cfg(all(test, feature = "spin"))]
mod spin_lock_tests {
    use super::*;
    use crate::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};

    /// A platform whose locks are spin's: the allocator builds and runs on it.
    struct SpinPlatform(TestPlatform);

    impl Platform for SpinPlatform {
        type RawLock = super::super::SpinRawLock;
        type PcpLock = super::super::SpinRawLock;
        fn current_cpu(&self) -> usize {
            self.0.current_cpu()
        }
        fn nr_cpus(&self) -> usize {
            self.0.nr_cpus()
        }
        fn now_ns(&self) -> u64 {
            self.0.now_ns()
        }
    }

    #[test]
    fn spin_locks_drive_the_allocator() {
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4096);
        let allocator = PageAllocator::build(builder, SpinPlatform(TestPlatform::new(2))).unwrap();
        let blocks: alloc::vec::Vec<_> =
            (0..100).map(|_| allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap()).collect();
        allocator.free_bulk(blocks).unwrap();
        allocator.check_invariants().unwrap();
    }
}
