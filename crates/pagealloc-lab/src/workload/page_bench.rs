//! page_bench03 (prototype-kernel mm/bench): one pinned thread per CPU, all starting
//! together, each looping alloc_pages(order) and freeing the page at once. Measures the
//! allocator's fast-path overhead.

use serde_json::json;

use super::{CpuTask, Env, Step, Workload};
use pagealloc::AllocRequest;

#[derive(Clone, Debug)]
pub struct PageBench {
    pub order: u8,
    /// Work between iterations (the benchmark's loop overhead).
    pub loop_ns: u64,
}

impl Default for PageBench {
    fn default() -> Self {
        PageBench { order: 0, loop_ns: 10 }
    }
}

struct Task {
    order: u8,
    loop_ns: u64,
}

impl CpuTask for Task {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        if let Some(block) = env.alloc(self.order, AllocRequest::KERNEL) {
            env.free(block);
            env.done(1);
        }
        env.compute(self.loop_ns);
        Step::Continue
    }

    fn finish(&mut self, _env: &mut dyn Env) {}
}

impl Workload for PageBench {
    fn name(&self) -> &'static str {
        "page_bench03"
    }
    fn unit(&self) -> &'static str {
        "alloc+free pairs"
    }
    fn params(&self) -> serde_json::Value {
        json!({ "order": self.order, "loop_ns": self.loop_ns })
    }
    fn tasks(&self, cpus: usize, _seed: u64) -> Vec<Box<dyn CpuTask>> {
        (0..cpus).map(|_| Box::new(Task { order: self.order, loop_ns: self.loop_ns }) as Box<dyn CpuTask>).collect()
    }
}
