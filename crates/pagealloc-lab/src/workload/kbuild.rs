//! A kernel-build-like load: many short-lived processes per CPU. Each process faults in
//! anonymous memory and page cache with compute between faults and allocates page tables
//! (an order-1 root and order-0 tables), then exits: a burst of order-0 frees (its pages and
//! tables) followed by the order-1 root (facts section 3). Kernel objects of processes
//! (task_struct, mm_struct) live in order-1..3 slab pages shared by several processes, so a
//! slab page is released only every few exits, after an RCU grace period: the CPU frees it
//! (consecutive high-order frees) before its next process starts. Some processes have
//! migrated by the time they exit, so their exit runs on another CPU. Page cache stays (up
//! to a per-CPU share, then the oldest pages are reclaimed). Metric: build time, the time
//! until every CPU has run its processes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::{CpuTask, Env, Step, Workload};
use crate::rng::SplitMix64;
use pagealloc::{AllocRequest, Block};

#[derive(Clone, Debug)]
pub struct Kbuild {
    pub processes_per_cpu: u64,
    pub min_faults: u64,
    pub max_faults: u64,
    /// Compile work between faults.
    pub compute_per_fault_ns: u64,
    /// Share of faults that are page-cache (file) pages, in percent.
    pub file_fault_pct: u64,
    /// Page cache a CPU keeps before reclaiming its oldest pages.
    pub page_cache_pages_per_cpu: u64,
    /// Processes that exit on another CPU, in percent.
    pub migrate_pct: u64,
    /// Faults per order-0 page-table page.
    pub faults_per_table: u64,
    /// fork + exec + exit overhead per process.
    pub process_overhead_ns: u64,
    /// High-order slab pages (orders cycle 1, 2, 3) a CPU's slab caches grow by, and later
    /// release together, once every `exits_per_slab_release` processes.
    pub slab_blocks_per_release: u64,
    /// Exits per slab-page release: a slab page goes back only when its last object is
    /// freed; task_struct slabs are order-3 pages of 3-4 objects.
    pub exits_per_slab_release: u64,
}

impl Default for Kbuild {
    fn default() -> Self {
        Kbuild {
            processes_per_cpu: 40,
            min_faults: 200,
            max_faults: 2_000,
            // Compile work per fault, grounded by a real kernel build's CPU time over its
            // page faults (docs/experiments/pcp-kbuild.md).
            compute_per_fault_ns: 28_000,
            file_fault_pct: 30,
            page_cache_pages_per_cpu: 4_096,
            migrate_pct: 20,
            faults_per_table: 512,
            process_overhead_ns: 50_000,
            slab_blocks_per_release: 2,
            exits_per_slab_release: 4,
        }
    }
}

/// A process's memory at exit.
struct Exit {
    anon: Vec<Block>,
    tables: Vec<Block>,
    root: Option<Block>,
}

type ExitQueues = Arc<Vec<Mutex<Vec<Exit>>>>;

struct Builder {
    config: Kbuild,
    cpu: usize,
    cpus: usize,
    rng: SplitMix64,
    started: u64,
    faults_left: u64,
    current: Option<Exit>,
    page_cache: VecDeque<Block>,
    /// Slab pages this CPU's caches hold, oldest first.
    slab: VecDeque<Block>,
    /// Slab pages whose last object went; freed after the grace period (next start).
    slab_rcu_pending: Vec<Block>,
    exits: ExitQueues,
}

impl Builder {
    fn run_exit(env: &mut dyn Env, exit: Exit) {
        for page in exit.anon.into_iter().chain(exit.tables) {
            env.free(page);
        }
        if let Some(root) = exit.root {
            env.free(root);
        }
    }

    fn start_process(&mut self, env: &mut dyn Env) {
        // RCU callbacks of earlier exits run first: released slab pages, back to back.
        for slab in self.slab_rcu_pending.drain(..) {
            env.free(slab);
        }
        env.compute(self.config.process_overhead_ns);
        self.faults_left = self.config.min_faults + self.rng.below(self.config.max_faults - self.config.min_faults + 1);
        let root = env.alloc(1, AllocRequest::KERNEL);
        if self.started.is_multiple_of(self.config.exits_per_slab_release) {
            for i in 0..self.config.slab_blocks_per_release {
                self.slab.extend(env.alloc(1 + (i % 3) as u8, AllocRequest::KERNEL));
            }
        }
        self.current = Some(Exit { anon: Vec::new(), tables: Vec::new(), root });
        self.started += 1;
    }

    /// A process of this CPU's exited: every `exits_per_slab_release` exits the oldest slab
    /// pages empty and wait for the grace period.
    fn release_slab_after_exit(&mut self) {
        if self.started.is_multiple_of(self.config.exits_per_slab_release) {
            for _ in 0..self.config.slab_blocks_per_release {
                self.slab_rcu_pending.extend(self.slab.pop_front());
            }
        }
    }
}

impl CpuTask for Builder {
    fn step(&mut self, env: &mut dyn Env) -> Step {
        // Exits of processes that migrated here.
        let migrated: Vec<Exit> = std::mem::take(&mut *self.exits[self.cpu].lock().expect("unpoisoned"));
        for exit in migrated {
            Self::run_exit(env, exit);
        }
        if self.current.is_none() {
            if self.started == self.config.processes_per_cpu {
                return Step::Done;
            }
            self.start_process(env);
            return Step::Continue;
        }
        if self.faults_left > 0 {
            self.faults_left -= 1;
            env.compute(self.config.compute_per_fault_ns);
            let file = self.rng.below(100) < self.config.file_fault_pct;
            if let Some(page) = env.alloc(0, AllocRequest::USER_MOVABLE) {
                env.touch(page.pfn(), 1);
                let process = self.current.as_mut().expect("running");
                if file {
                    self.page_cache.push_back(page);
                    while self.page_cache.len() as u64 > self.config.page_cache_pages_per_cpu {
                        let oldest = self.page_cache.pop_front().expect("non-empty");
                        env.free(oldest);
                    }
                } else {
                    process.anon.push(page);
                    // A new page-table page every `faults_per_table` anonymous pages.
                    if (process.anon.len() as u64).is_multiple_of(self.config.faults_per_table) {
                        if let Some(table) = env.alloc(0, AllocRequest::KERNEL) {
                            process.tables.push(table);
                        }
                    }
                }
            }
            return Step::Continue;
        }
        let exit = self.current.take().expect("running");
        self.release_slab_after_exit();
        if self.cpus > 1 && self.rng.below(100) < self.config.migrate_pct {
            let target = (self.cpu + 1 + self.rng.below(self.cpus as u64 - 1) as usize) % self.cpus;
            self.exits[target].lock().expect("unpoisoned").push(exit);
        } else {
            Self::run_exit(env, exit);
        }
        env.done(1);
        Step::Continue
    }

    fn finish(&mut self, env: &mut dyn Env) {
        let migrated: Vec<Exit> = std::mem::take(&mut *self.exits[self.cpu].lock().expect("unpoisoned"));
        for exit in migrated.into_iter().chain(self.current.take()) {
            Self::run_exit(env, exit);
        }
        for page in self.page_cache.drain(..).chain(self.slab_rcu_pending.drain(..)).chain(self.slab.drain(..)) {
            env.free(page);
        }
    }
}

impl Kbuild {
    /// The kernel's process cost on a profiled machine.
    pub fn with_costs(self, kernel: &crate::machine::KernelCosts) -> Kbuild {
        Kbuild { process_overhead_ns: kernel.process_spawn_ns, ..self }
    }
}

impl Workload for Kbuild {
    fn name(&self) -> &'static str {
        "kbuild"
    }
    fn unit(&self) -> &'static str {
        "processes"
    }
    fn params(&self) -> serde_json::Value {
        json!({
            "processes_per_cpu": self.processes_per_cpu,
            "faults_per_process": [self.min_faults, self.max_faults],
            "compute_per_fault_ns": self.compute_per_fault_ns,
            "file_fault_pct": self.file_fault_pct,
            "page_cache_pages_per_cpu": self.page_cache_pages_per_cpu,
            "migrate_pct": self.migrate_pct,
            "faults_per_table": self.faults_per_table,
            "process_overhead_ns": self.process_overhead_ns,
            "slab_blocks_per_release": self.slab_blocks_per_release,
            "exits_per_slab_release": self.exits_per_slab_release,
        })
    }
    fn tasks(&self, cpus: usize, seed: u64) -> Vec<Box<dyn CpuTask>> {
        let exits: ExitQueues = Arc::new((0..cpus).map(|_| Mutex::new(Vec::new())).collect());
        (0..cpus)
            .map(|cpu| {
                Box::new(Builder {
                    config: self.clone(),
                    cpu,
                    cpus,
                    rng: SplitMix64::new(seed ^ (cpu as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    started: 0,
                    faults_left: 0,
                    current: None,
                    page_cache: VecDeque::new(),
                    slab: VecDeque::new(),
                    slab_rcu_pending: Vec::new(),
                    exits: exits.clone(),
                }) as Box<dyn CpuTask>
            })
            .collect()
    }
}
