//! The replay's machine: one host thread playing every traced CPU (the test platform: the
//! replay sets the CPU and the clock), plus one switch. A traced allocation the kernel
//! served straight from the buddy although its order is a pageset order (a single
//! zone-locked block and then the allocation of that same block: its pageset trylock failed
//! under contention) makes the replay refuse the pageset trylock for that one call, so the
//! allocator takes the same path.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use pagealloc::platform::{LockId, Platform, TestPlatform};

#[derive(Debug)]
pub struct ReplayPlatform {
    pub inner: TestPlatform,
    refuse_pcp_trylock: AtomicBool,
}

impl ReplayPlatform {
    pub fn new(nr_cpus: usize) -> ReplayPlatform {
        ReplayPlatform { inner: TestPlatform::new(nr_cpus), refuse_pcp_trylock: AtomicBool::new(false) }
    }

    /// Makes pageset trylocks fail until [`Self::allow_pcp_trylock`].
    pub fn refuse_pcp_trylock(&self) {
        self.refuse_pcp_trylock.store(true, Relaxed);
    }

    pub fn allow_pcp_trylock(&self) {
        self.refuse_pcp_trylock.store(false, Relaxed);
    }

    pub fn set_cpu(&self, cpu: usize) {
        self.inner.set_cpu(cpu);
    }

    pub fn advance_ns(&self, delta_ns: u64) {
        self.inner.advance_ns(delta_ns);
    }
}

impl Platform for ReplayPlatform {
    type RawLock = <TestPlatform as Platform>::RawLock;
    type PcpLock = <TestPlatform as Platform>::PcpLock;

    fn current_cpu(&self) -> usize {
        self.inner.current_cpu()
    }

    fn nr_cpus(&self) -> usize {
        self.inner.nr_cpus()
    }

    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }

    fn lock_try_acquire(&self, lock: LockId) -> bool {
        !(matches!(lock, LockId::Pcp { .. }) && self.refuse_pcp_trylock.load(Relaxed))
    }
}
