//! The allocator's hooks: [`SimPlatform`] as a `Platform`, each hook charging the running
//! CPU through the lock, line and page models (nothing while an observer runs), and the
//! workload's own locks on the same model.

use pagealloc::platform::{LockId, Platform, SharedLine, TasLock};
use pagealloc::types::Pfn;

use super::slots::SimPlatform;

impl SimPlatform {
    /// Takes a workload-level lock (e.g. a modelled mm lock) on the running CPU: a FIFO server
    /// like the allocator's locks. Returns the wait.
    pub fn workload_lock(&self, id: u16) -> u64 {
        self.handle.with(|state| state.acquire(LockId::Workload(id)))
    }

    pub fn workload_unlock(&self, id: u16) {
        self.handle.with(|state| state.release(LockId::Workload(id)))
    }

    /// Reads the data of `pages` pages from `pfn` on the running CPU (a receiver copying out
    /// what a sender wrote): as a touch, but a page another core holds costs that core's
    /// read transfer. `Platform::touch_pages` is the write.
    pub fn read_pages(&self, pfn: Pfn, pages: u64) {
        self.handle.with(|state| {
            if !state.observing {
                state.touch_pages(pfn, pages, super::pages::PageAccess::Read)
            }
        })
    }
}

impl Platform for SimPlatform {
    // The host runs one simulated call at a time, so the real locks are never contended;
    // simulated contention is the hooks' business.
    type RawLock = TasLock;
    type PcpLock = TasLock;

    #[inline]
    fn current_cpu(&self) -> usize {
        // The task's CPU: the running engine CPU unless a fault migrated the task.
        self.handle.with(|state| state.allocator_cpu())
    }

    fn nr_cpus(&self) -> usize {
        self.handle.nr_cpus
    }

    fn now_ns(&self) -> u64 {
        self.handle.with(|state| state.clocks_ns[state.current])
    }

    #[inline]
    fn lock_acquire(&self, lock: LockId) -> u64 {
        self.handle.with(|state| if state.observing { 0 } else { state.acquire(lock) })
    }

    #[inline]
    fn lock_try_acquire(&self, lock: LockId) -> bool {
        self.handle.with(|state| state.observing || state.try_acquire(lock))
    }

    #[inline]
    fn lock_release(&self, lock: LockId) {
        self.handle.with(|state| {
            if !state.observing {
                state.release(lock)
            }
        })
    }

    #[inline]
    fn touch_shared(&self, line: SharedLine, write: bool) {
        self.handle.with(|state| {
            if !state.observing {
                state.touch_line(line, write)
            }
        })
    }

    #[inline]
    fn atomic_shared(&self, line: SharedLine) {
        self.handle.with(|state| {
            if !state.observing {
                state.atomic_line(line)
            }
        })
    }

    #[inline]
    fn percpu_counter_updates(&self, updates: u32) {
        self.handle.with(|state| {
            if !state.observing {
                let cpu = state.current;
                let owed_ps =
                    state.counter_remainder_ps[cpu] + u64::from(updates) * state.calibration.percpu_counter_update_ps;
                state.clocks_ns[cpu] += owed_ps / 1000;
                state.counter_remainder_ps[cpu] = owed_ps % 1000;
            }
        })
    }

    #[inline]
    fn touch_pages(&self, pfn: Pfn, pages: u64) {
        self.handle.with(|state| {
            if !state.observing {
                state.touch_pages(pfn, pages, super::pages::PageAccess::Write)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::{LockId, Platform, SharedLine};

    use crate::calibration::Calibration;
    use crate::platform::test_machine as machine;

    #[test]
    fn an_observer_charges_nothing_and_moves_nothing() {
        let platform = machine(2);
        let sim = platform.handle();
        sim.set_cpu(1);
        let pcp = LockId::Pcp { zone: 0, cpu: 1 };
        platform.lock_acquire(pcp);
        platform.touch_shared(SharedLine::PcpHeader { zone: 0, cpu: 1 }, true);
        platform.lock_release(pcp);
        let (clock_before, stats_before) = (sim.clock_ns(1), sim.stats());
        sim.set_cpu(0);
        sim.observe(|| {
            assert_eq!(platform.lock_acquire(pcp), 0);
            platform.touch_shared(SharedLine::PcpHeader { zone: 0, cpu: 1 }, false);
            platform.touch_pages(7, 4);
            platform.lock_release(pcp);
        });
        assert_eq!(sim.clock_ns(0), 0, "the observer's CPU was charged");
        assert_eq!(sim.stats(), stats_before);
        // CPU 1 still owns its lock word and line: its next use costs what it did before.
        sim.set_cpu(1);
        platform.lock_acquire(pcp);
        platform.touch_shared(SharedLine::PcpHeader { zone: 0, cpu: 1 }, true);
        platform.lock_release(pcp);
        let cal = Calibration::XEON;
        assert_eq!(sim.clock_ns(1) - clock_before, cal.atomic_rmw_ns + cal.line_local_ns);
    }

    #[test]
    fn counter_updates_charge_their_picoseconds_with_the_remainder_carried() {
        let calibration = Calibration { percpu_counter_update_ps: 700, ..Calibration::XEON };
        let platform = crate::SimPlatform::new(crate::topology::Topology::flat(2), calibration);
        let sim = platform.handle();
        sim.set_cpu(1);
        platform.percpu_counter_updates(1);
        assert_eq!(sim.clock_ns(1), 0, "0.7 ns owed, not yet a nanosecond");
        platform.percpu_counter_updates(2);
        assert_eq!(sim.clock_ns(1), 2, "2.1 ns owed");
        platform.percpu_counter_updates(7);
        assert_eq!(sim.clock_ns(1), 7, "7.0 ns owed in all");
        assert_eq!(sim.clock_ns(0), 0, "another CPU's clock is untouched");
        sim.observe(|| platform.percpu_counter_updates(100));
        assert_eq!(sim.clock_ns(1), 7, "an observer charges nothing");
    }
}
