//! Atomic read-modify-writes on a workload lock's word that do not take the lock: a reader
//! of an rwsem adding to its count (down_read, up_read), a VMA lock's reader, a refcount. One
//! waits only while a holder's last hold covers its time, then is served in simulated time's
//! order with the word's other RMWs, each paying the word's transfer from its last owner.

use pagealloc::platform::LockId;

use super::slots::SimPlatform;
use super::state::{distance_between, SimState};

impl SimState {
    fn workload_rmw(&mut self, id: u16) -> u64 {
        let cpu = self.current;
        let arrived_ns = self.clocks_ns[cpu];
        let atomic_ns = self.calibration.atomic_rmw_ns;
        let state = self.locks.state(LockId::Workload(id));
        // A holder's last hold: a writer, whom readers arriving during its hold wait for.
        let held = (state.acquired_at_ns..state.free_at_ns).contains(&arrived_ns);
        let ready_ns = if held { state.free_at_ns } else { arrived_ns };
        let previous_owner = state.word_owner.replace(cpu as u32);
        let transfer_ns = previous_owner
            .filter(|&owner| owner as usize != cpu)
            .map_or(0, |owner| self.calibration.line_transfer_ns(distance_between(&self.places, owner as usize, cpu)));
        let service_ns = transfer_ns + atomic_ns;
        let start_ns = self.workload_rmws.entry(id).or_default().serve(ready_ns, service_ns);
        self.clocks_ns[cpu] = start_ns + service_ns;
        let wait_ns = start_ns - arrived_ns;
        let stats = &mut self.stats.workload_lock;
        stats.rmws += 1;
        stats.rmw_wait_ns += wait_ns;
        wait_ns
    }
}

impl SimPlatform {
    /// An atomic RMW by the running CPU on the word of workload lock `id` that does not
    /// take the lock (see the module). Returns the wait.
    pub fn workload_rmw(&self, id: u16) -> u64 {
        self.handle.with(|state| if state.observing { 0 } else { state.workload_rmw(id) })
    }
}

#[cfg(test)]
mod tests {
    use crate::calibration::Calibration;
    use crate::platform::test_machine as machine;

    #[test]
    fn readers_wait_only_inside_a_writers_hold_and_queue_in_time_order() {
        let platform = machine(3);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        // CPU 0 holds the lock from 1000 to 2000 (a writer).
        sim.set_cpu(0);
        sim.advance(1_000 - cal.atomic_rmw_ns);
        platform.workload_lock(5);
        sim.advance(1_000);
        platform.workload_unlock(5);
        let released_ns = sim.clock_ns(0);
        // CPU 1 before the hold: no wait, though the engine runs it after.
        sim.set_cpu(1);
        sim.advance(100);
        assert_eq!(platform.workload_rmw(5), 0);
        assert_eq!(sim.clock_ns(1), 100 + cal.line_same_socket_ns + cal.atomic_rmw_ns);
        // CPU 2 inside the hold: waits for the release.
        sim.set_cpu(2);
        sim.advance(1_500);
        assert_eq!(platform.workload_rmw(5), released_ns - 1_500);
        let stats = sim.stats().workload_lock;
        assert_eq!((stats.rmws, stats.rmw_wait_ns), (2, released_ns - 1_500));
    }
}
