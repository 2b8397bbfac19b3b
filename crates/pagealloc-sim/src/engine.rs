//! The discrete-event scheduler: always runs the virtual CPU with the earliest clock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::platform::SimHandle;

/// What a CPU's step asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Run again when this CPU is the earliest.
    Continue,
    /// This CPU has finished its work.
    Done,
}

/// Runs per-CPU steps in simulated-time order.
pub struct Engine {
    sim: SimHandle,
}

impl Engine {
    pub fn new(sim: SimHandle) -> Engine {
        Engine { sim }
    }

    /// Runs `step(cpu)` for the CPUs in `cpus`, each time for the one whose clock is
    /// earliest (ties to the lowest id), until every CPU is done or the earliest clock passes
    /// `end_ns`. `step` makes allocator calls and charges computation through the handle.
    /// Returns the number of steps run.
    pub fn run(&self, cpus: &[usize], end_ns: u64, mut step: impl FnMut(usize) -> Next) -> u64 {
        let mut ready: BinaryHeap<Reverse<(u64, usize)>> =
            cpus.iter().map(|&cpu| Reverse((self.sim.clock_ns(cpu), cpu))).collect();
        let mut steps = 0u64;
        while let Some(Reverse((clock_ns, cpu))) = ready.pop() {
            if clock_ns > end_ns {
                break;
            }
            self.sim.set_cpu(cpu);
            steps += 1;
            if step(cpu) == Next::Continue {
                ready.push(Reverse((self.sim.clock_ns(cpu), cpu)));
            }
        }
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Calibration, SimPlatform, Topology};

    #[test]
    fn earliest_clock_runs_first_and_ties_go_to_the_lowest_cpu() {
        let platform = SimPlatform::new(Topology::flat(3), Calibration::XEON);
        let sim = platform.handle();
        let engine = Engine::new(sim);
        let mut order = Vec::new();
        let costs = [30u64, 20, 50];
        engine.run(&[0, 1, 2], 100, |cpu| {
            order.push(cpu);
            sim.advance(costs[cpu]);
            Next::Continue
        });
        assert_eq!(&order[..6], &[0, 1, 2, 1, 0, 1]);
        assert!(order.iter().all(|&cpu| cpu < 3));
        assert!((0..3).all(|cpu| sim.clock_ns(cpu) > 100));
    }
}
