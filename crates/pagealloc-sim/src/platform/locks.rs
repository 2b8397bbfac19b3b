//! Locks as FIFO servers in simulated time: a CPU asking for a lock held until t waits until
//! t, then pays the atomic and, if another CPU last took it, the lock word's transfer.

use pagealloc::platform::LockId;

use super::state::{distance_between, SimState};
use super::stats::LockClassStats;
use crate::dense_table;

/// A lock as a FIFO server in simulated time.
#[derive(Clone, Copy, Default)]
pub(super) struct LockState {
    /// When the lock is next free.
    pub(super) free_at_ns: u64,
    /// CPU whose cache holds the lock word.
    pub(super) word_owner: Option<u32>,
    pub(super) acquired_at_ns: u64,
}

/// Every lock's state, in arrays indexed by what the lock guards (a zone, a CPU's pageset,
/// a node's LRU, ...): one row per kind of lock, and per zone or node for the kinds with one
/// lock per CPU or per batch, so a lookup is an index, not a hash of the lock's name.
#[derive(Default)]
pub(super) struct LockTable {
    rows: Vec<Vec<LockState>>,
}

/// Rows of the kinds with a single row; the others take one row per zone or node after them.
const SINGLE_ROW_KINDS: usize = 4;
/// Kinds with a row per zone or node, interleaved after the single rows.
const PER_PLACE_KINDS: usize = 2;

impl LockTable {
    /// The state of `lock`, a new (free, never taken) one if it was never used.
    #[inline]
    pub(super) fn state(&mut self, lock: LockId) -> &mut LockState {
        let (row, number) = match lock {
            LockId::Zone(zone) => (0, usize::from(zone)),
            LockId::Lru(node) => (1, usize::from(node)),
            LockId::LruAdd { cpu } => (2, cpu as usize),
            LockId::Workload(id) => (3, usize::from(id)),
            LockId::Pcp { zone, cpu } => (SINGLE_ROW_KINDS + PER_PLACE_KINDS * usize::from(zone), cpu as usize),
            LockId::LruBatch { node, lock } => {
                (SINGLE_ROW_KINDS + PER_PLACE_KINDS * usize::from(node) + 1, usize::from(lock))
            }
        };
        dense_table::row_slot(&mut self.rows, row, number)
    }
}

impl SimState {
    /// The allocator lock class of `lock`; `None` for the workload's locks.
    fn lock_class(&mut self, lock: LockId) -> Option<&mut LockClassStats> {
        match lock {
            LockId::Zone(_) => Some(&mut self.stats.zone_lock),
            LockId::Pcp { .. } => Some(&mut self.stats.pcp_lock),
            LockId::Lru(_) => Some(&mut self.stats.lru_lock),
            LockId::LruBatch { .. } => Some(&mut self.stats.lru_batch_lock),
            LockId::LruAdd { .. } => Some(&mut self.stats.lru_add_lock),
            LockId::Workload(_) => None,
        }
    }

    /// Takes the lock at the current CPU's time, waiting for the holder if needed; returns
    /// the wait.
    pub(super) fn acquire(&mut self, lock: LockId) -> u64 {
        let cpu = self.current;
        let now = self.clocks_ns[cpu];
        // One lookup: the cost reads only fields beside the lock table.
        let state = self.locks.state(lock);
        let wait_ns = state.free_at_ns.saturating_sub(now);
        let word_owner = state.word_owner.replace(cpu as u32);
        let mut cost_ns = self.calibration.atomic_rmw_ns;
        if let Some(owner) = word_owner.filter(|&owner| owner as usize != cpu) {
            cost_ns += self.calibration.line_transfer_ns(distance_between(&self.places, owner as usize, cpu));
        }
        let acquired_at_ns = now + wait_ns + cost_ns;
        state.acquired_at_ns = acquired_at_ns;
        self.clocks_ns[cpu] = acquired_at_ns;
        if let LockId::Workload(_) = lock {
            let stats = &mut self.stats.workload_lock;
            stats.acquisitions += 1;
            if wait_ns > 0 {
                stats.contended += 1;
                stats.wait_ns += wait_ns;
            }
        }
        wait_ns
    }

    pub(super) fn try_acquire(&mut self, lock: LockId) -> bool {
        let now = self.clocks_ns[self.current];
        let held = self.locks.state(lock).free_at_ns > now;
        if held {
            if let Some(class) = self.lock_class(lock) {
                class.try_failures += 1;
            }
            return false;
        }
        // A fault may refuse a free lock, as if another CPU had just taken it.
        if self.refuse_trylock() {
            return false;
        }
        self.acquire(lock);
        true
    }

    pub(super) fn release(&mut self, lock: LockId) {
        let now = self.clocks_ns[self.current];
        let state = self.locks.state(lock);
        state.free_at_ns = now;
        let hold_ns = now.saturating_sub(state.acquired_at_ns);
        match self.lock_class(lock) {
            Some(class) => class.hold_ns += hold_ns,
            None => self.stats.workload_lock.hold_ns += hold_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::{LockId, Platform};

    use crate::calibration::Calibration;
    use crate::platform::test_machine as machine;

    #[test]
    fn a_lock_held_until_t_makes_a_later_cpu_wait_until_t() {
        let platform = machine(2);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        sim.set_cpu(0);
        assert_eq!(platform.lock_acquire(LockId::Zone(0)), 0);
        sim.advance(1_000);
        platform.lock_release(LockId::Zone(0));
        let released_at = sim.clock_ns(0);
        assert_eq!(released_at, cal.atomic_rmw_ns + 1_000);
        // CPU 1 asks at time 100: it waits until the release, then pays the RMW and the
        // transfer of the lock word from CPU 0.
        sim.set_cpu(1);
        sim.advance(100);
        assert_eq!(platform.lock_acquire(LockId::Zone(0)), released_at - 100);
        assert_eq!(sim.clock_ns(1), released_at + cal.atomic_rmw_ns + cal.line_same_socket_ns);
        platform.lock_release(LockId::Zone(0));
        let stats = sim.stats();
        assert_eq!(stats.zone_lock.hold_ns, 1_000);
        assert_eq!(stats.workload_lock, Default::default(), "allocator locks count their own waits");
        // The workload's locks have no other counter: the simulator counts their waits.
        sim.set_cpu(0);
        platform.lock_acquire(LockId::Workload(3));
        sim.advance(2_000);
        platform.lock_release(LockId::Workload(3));
        sim.set_cpu(1);
        let wait_ns = platform.lock_acquire(LockId::Workload(3));
        assert!(wait_ns > 0);
        let workload = sim.stats().workload_lock;
        assert_eq!((workload.acquisitions, workload.contended, workload.wait_ns), (2, 1, wait_ns));
    }

    #[test]
    fn a_cpu_arriving_after_the_release_does_not_wait_and_trylock_sees_simulated_holds() {
        let platform = machine(2);
        let sim = platform.handle();
        sim.set_cpu(0);
        platform.lock_acquire(LockId::Zone(0));
        sim.advance(500);
        platform.lock_release(LockId::Zone(0));
        sim.set_cpu(1);
        sim.advance(10_000);
        assert_eq!(platform.lock_acquire(LockId::Zone(0)), 0);
        platform.lock_release(LockId::Zone(0));
        // CPU 0 holds a pageset lock until its time 2000; CPU 1 tries at time ~10000: free.
        // Rewind: CPU 1 tries a lock held until later in simulated time.
        sim.set_cpu(0);
        let pcp = LockId::Pcp { zone: 0, cpu: 0 };
        platform.lock_acquire(pcp);
        sim.advance(20_000);
        platform.lock_release(pcp);
        sim.set_cpu(1);
        assert!(!platform.lock_try_acquire(pcp), "held until CPU 0's time ~20500");
        sim.advance(20_000);
        assert!(platform.lock_try_acquire(pcp));
        assert_eq!(sim.stats().pcp_lock.try_failures, 1);
    }

    /// Locks of different kinds, or of the same kind for different zones, nodes or CPUs,
    /// have states of their own, however their numbers coincide.
    #[test]
    fn every_lock_has_its_own_state() {
        let locks = [
            LockId::Zone(1),
            LockId::Zone(2),
            LockId::Lru(1),
            LockId::LruAdd { cpu: 1 },
            LockId::Workload(1),
            LockId::Pcp { zone: 1, cpu: 1 },
            LockId::Pcp { zone: 2, cpu: 1 },
            LockId::Pcp { zone: 1, cpu: 2 },
            LockId::LruBatch { node: 1, lock: 1 },
            LockId::LruBatch { node: 2, lock: 1 },
            LockId::LruBatch { node: 1, lock: 2 },
        ];
        for held in locks {
            let platform = machine(2);
            let sim = platform.handle();
            sim.set_cpu(0);
            platform.lock_acquire(held);
            sim.advance(1_000);
            platform.lock_release(held);
            sim.set_cpu(1);
            for other in locks {
                assert_eq!(platform.lock_try_acquire(other), other != held, "{other:?} while {held:?} is held");
                if other != held {
                    platform.lock_release(other);
                }
            }
        }
    }
}
