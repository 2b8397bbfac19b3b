//! Atomic read-modify-writes on shared lines (counter folds): a line serves one RMW at a
//! time, in simulated time's order, so RMWs from many CPUs queue on it, each holding it for
//! its transfer and the RMW.

use pagealloc::platform::SharedLine;

use super::state::SimState;
use crate::cache_key::CacheKey;

impl SimState {
    /// One atomic RMW of `line` by the current CPU: take the line (a write touch: its
    /// transfer by distance, or a local hit) and pay the RMW, in the line's first free time
    /// at or after the CPU's arrival that fits both.
    pub(super) fn atomic_line(&mut self, line: SharedLine) {
        let cpu = self.current;
        let key = CacheKey::line(line, self.layout);
        let arrived_ns = self.clocks_ns[cpu];
        self.touch_line(line, true);
        let service_ns = self.clocks_ns[cpu] - arrived_ns + self.calibration.atomic_rmw_ns;
        let start_ns = self.line_rmws.entry(key).or_default().serve(arrived_ns, service_ns);
        self.clocks_ns[cpu] = start_ns + service_ns;
        self.stats.line_rmws += 1;
        self.stats.line_rmw_wait_ns += start_ns - arrived_ns;
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::{Platform, SharedLine};

    use crate::calibration::Calibration;
    use crate::platform::test_machine as machine;

    #[test]
    fn rmws_of_one_line_queue_and_pay_the_transfer() {
        let platform = machine(2);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let line = SharedLine::GlobalCounters;
        sim.set_cpu(0);
        platform.atomic_shared(line);
        let first_done = sim.clock_ns(0);
        assert_eq!(first_done, cal.line_memory_ns + cal.atomic_rmw_ns, "first touch from memory");
        // CPU 1 arrives at time 0, while CPU 0's RMW holds the line: it waits, then takes
        // the line from CPU 0.
        sim.set_cpu(1);
        platform.atomic_shared(line);
        let transfer = cal.line_same_socket_ns;
        assert_eq!(sim.clock_ns(1), first_done + transfer + cal.atomic_rmw_ns);
        // Another line is independent.
        sim.set_cpu(0);
        let before = sim.clock_ns(0);
        platform.atomic_shared(SharedLine::GlobalNumaCounters);
        assert_eq!(sim.clock_ns(0) - before, cal.line_memory_ns + cal.atomic_rmw_ns);
        let stats = sim.stats();
        assert_eq!((stats.line_rmws, stats.line_rmw_wait_ns), (3, first_done));
    }
}
