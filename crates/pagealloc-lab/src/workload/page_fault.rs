//! will-it-scale page_fault1: each task loops: map a 128 MiB anonymous region, write one byte
//! per page (an order-0 movable, zeroed allocation per fault), unmap it (free every page
//! from the same CPU). Process mode: private address spaces. Thread mode: one shared address
//! space whose mm lock each fault takes briefly and each unmap holds while it frees.

use serde_json::json;

use super::{CpuTask, Env, Step, Workload};
use pagealloc::{AllocRequest, Block};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FaultMode {
    Process,
    Thread,
}

#[derive(Clone, Debug)]
pub struct PageFault {
    pub mode: FaultMode,
    /// Pages per mapping (128 MiB).
    pub region_pages: u64,
    /// Trap, page-table update and LRU add per fault, besides allocation and zeroing.
    pub fault_overhead_ns: u64,
    /// mmap + munmap system-call overhead per round.
    pub map_overhead_ns: u64,
    /// Thread mode: time a fault holds the shared mm lock.
    pub mm_lock_hold_ns: u64,
}

impl PageFault {
    pub fn new(mode: FaultMode) -> PageFault {
        PageFault { mode, region_pages: 32_768, fault_overhead_ns: 250, map_overhead_ns: 5_000, mm_lock_hold_ns: 30 }
    }
}

/// The modelled mm lock of the shared address space (thread mode).
const MM_LOCK: u16 = 0;

struct Task {
    config: PageFault,
    mapped: Vec<Block>,
}

impl CpuTask for Task {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        if (self.mapped.len() as u64) < self.config.region_pages {
            env.compute(self.config.fault_overhead_ns);
            let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) else {
                // Out of memory: unmap early, as the OOM path would shrink the workload.
                self.unmap(env);
                return Step::Continue;
            };
            env.touch(page.pfn(), 1);
            if self.config.mode == FaultMode::Thread {
                env.lock(MM_LOCK);
                env.compute(self.config.mm_lock_hold_ns);
                env.unlock(MM_LOCK);
            }
            self.mapped.push(page);
            env.done(1);
            return Step::Continue;
        }
        self.unmap(env);
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        for page in self.mapped.drain(..) {
            env.free(page);
        }
    }
}

impl Task {
    fn unmap(&mut self, env: &mut dyn Env) {
        let thread_mode = self.config.mode == FaultMode::Thread;
        if thread_mode {
            env.lock(MM_LOCK);
        }
        env.compute(self.config.map_overhead_ns);
        for page in self.mapped.drain(..) {
            env.free(page);
        }
        if thread_mode {
            env.unlock(MM_LOCK);
        }
    }
}

impl Workload for PageFault {
    fn name(&self) -> &'static str {
        match self.mode {
            FaultMode::Process => "page_fault1-process",
            FaultMode::Thread => "page_fault1-thread",
        }
    }
    fn unit(&self) -> &'static str {
        "faults"
    }
    fn params(&self) -> serde_json::Value {
        json!({
            "mode": self.mode,
            "region_pages": self.region_pages,
            "fault_overhead_ns": self.fault_overhead_ns,
            "map_overhead_ns": self.map_overhead_ns,
            "mm_lock_hold_ns": self.mm_lock_hold_ns,
        })
    }
    fn tasks(&self, cpus: usize, _seed: u64) -> Vec<Box<dyn CpuTask>> {
        (0..cpus)
            .map(|_| {
                Box::new(Task { config: self.clone(), mapped: Vec::with_capacity(self.region_pages as usize) })
                    as Box<dyn CpuTask>
            })
            .collect()
    }
}
