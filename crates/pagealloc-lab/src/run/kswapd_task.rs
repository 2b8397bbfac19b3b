//! kswapd as a task of the simulated machine. Linux's kswapd is a kernel thread per node
//! that runs beside the allocating tasks: while it reclaims, the boosts that woke it stay
//! raised and the pages it frees appear a batch at a time. In a run with a reclaim client,
//! the first CPU of a node whose own task is done (an idle CPU of the seed's machines) takes
//! the node's kswapd: it runs the pass a round of SWAP_CLUSTER_MAX pages at a time
//! ([`pagealloc::Background::kswapd_round`]), each round taking the simulated time its frees cost,
//! and while kswapd sleeps it looks again after every other CPU's step. A node without such
//! a CPU keeps whole passes in the periodic work of its CPUs.

use pagealloc::PageAllocator;
use pagealloc_sim::engine::Next;
use pagealloc_sim::platform::SimHandle;
use pagealloc_sim::SimPlatform;

pub(super) struct KswapdTasks {
    enabled: bool,
    /// The node whose kswapd each CPU runs, once its own task is done.
    kswapd_of_cpu: Vec<Option<u16>>,
    /// Nodes whose kswapd has a CPU.
    node_has_cpu: Vec<bool>,
    /// CPUs whose workload task is still running.
    running: Vec<bool>,
    /// Time the kswapd CPUs slept (not CPU time).
    pub(super) idle_ns: u64,
}

impl KswapdTasks {
    pub(super) fn new(enabled: bool, cpus: usize, nodes: usize) -> KswapdTasks {
        KswapdTasks {
            enabled,
            kswapd_of_cpu: vec![None; cpus],
            node_has_cpu: vec![false; nodes],
            running: vec![true; cpus],
            idle_ns: 0,
        }
    }

    /// Gives kswapd back to the periodic work (the run is over, or stopped at its time
    /// limit with tasks still running): an open pass finishes there.
    pub(super) fn release(&self, allocator: &PageAllocator<SimPlatform>) {
        for (node, &taken) in self.node_has_cpu.iter().enumerate() {
            if taken {
                allocator.background().set_kswapd_task(node as u16, false);
            }
        }
    }

    pub(super) fn runs_kswapd(&self, cpu: usize) -> bool {
        self.kswapd_of_cpu[cpu].is_some()
    }

    /// `cpu`'s workload task is done: the CPU takes its node's kswapd if no CPU has it yet.
    pub(super) fn task_done(&mut self, allocator: &PageAllocator<SimPlatform>, cpu: usize) -> Next {
        self.running[cpu] = false;
        let node = allocator.node_of_cpu(cpu);
        if !self.enabled || self.node_has_cpu[node as usize] {
            return Next::Done;
        }
        self.node_has_cpu[node as usize] = true;
        self.kswapd_of_cpu[cpu] = Some(node);
        allocator.background().set_kswapd_task(node, true);
        Next::Continue
    }

    /// A step of a CPU that runs its node's kswapd: a round if kswapd is awake, else sleep
    /// until another CPU has run. Done once every workload task is.
    pub(super) fn step(&mut self, allocator: &PageAllocator<SimPlatform>, sim: SimHandle, cpu: usize) -> Next {
        let Some(node) = self.kswapd_of_cpu[cpu] else { return Next::Done };
        let next_ns =
            (0..self.running.len()).filter(|&other| self.running[other]).map(|other| sim.clock_ns(other)).min();
        let Some(next_ns) = next_ns else {
            allocator.background().set_kswapd_task(node, false);
            return Next::Done;
        };
        allocator.background().run_due_work(cpu, sim.clock_ns(cpu));
        if !allocator.background().kswapd_round(node) {
            let now_ns = sim.clock_ns(cpu);
            if next_ns + 1 > now_ns {
                self.idle_ns += next_ns + 1 - now_ns;
                sim.idle_until(cpu, next_ns + 1);
            }
        }
        Next::Continue
    }
}
