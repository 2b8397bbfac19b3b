//! The `pagelab bench` command line: which benchmark, allocators, thread counts and sizes,
//! and the output format.

use clap::builder::TypedValueParser as _;
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::output_format::OutputFormat;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchKind {
    Bulk,
    Repeat,
    Rand,
    Frag,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AllocatorKind {
    /// pagealloc with the chosen preset (per-CPU pagesets per the preset).
    Pagealloc,
    /// buddy_system_allocator's FrameAllocator behind a std Mutex.
    BuddySystem,
    /// pagealloc's zone allocator with per-CPU pagesets off.
    GlobalLock,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    pub bench: BenchKind,
    #[arg(long, value_enum, default_value = "pagealloc")]
    pub allocator: Vec<AllocatorKind>,
    /// Threads the per-thread block count is sized for (default 2; with --sim, --cpus).
    #[arg(long)]
    pub threads_max: Option<usize>,
    /// Thread counts to run (repeatable); default 1..=threads-max (with --sim: the powers
    /// of two up to it, and it).
    #[arg(short = 'x', long = "threads")]
    pub threads: Vec<usize>,
    /// Run on the simulator's CPUs instead of real threads.
    #[arg(long)]
    pub sim: bool,
    /// --sim: CPUs of the simulated machine (the first N of --topology; default: all of a
    /// named topology or profile, else --threads-max).
    #[arg(long, requires = "sim", value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    pub cpus: Option<usize>,
    /// --sim: the simulated machine's topology (as `pagelab run --topology`).
    #[arg(long, value_enum, default_value = "flat", requires = "sim")]
    pub topology: crate::run::TopologyKind,
    /// --sim: a machine profile written by `pagelab calibrate` (its topology and costs).
    #[arg(long, value_name = "FILE", requires = "sim", conflicts_with = "topology", value_parser = crate::run::parse_machine)]
    pub machine: Option<std::sync::Arc<crate::machine::SimMachine>>,
    #[arg(long, default_value_t = 0)]
    pub order: u8,
    #[arg(long, default_value_t = 4)]
    pub memory_gib: u64,
    #[arg(long, default_value_t = 5)]
    pub iterations: usize,
    /// pagealloc policy presets (see `pagelab presets`), repeatable: each runs in turn. The
    /// default is the embedder preset `pagealloc`; `mainline` is Linux.
    #[arg(long = "preset", default_value = "pagealloc", value_parser = crate::preset_arg::parser())]
    pub presets: Vec<String>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: OutputFormat,
    /// frag: rounds of churn (LLFree: 100).
    #[arg(long, default_value_t = 100)]
    pub frag_rounds: usize,
    /// bulk and rand: blocks handed back per call. 1 (the default) frees one block per call,
    /// as LLFree's benchmark does; more frees slices through pagealloc's bulk free (others
    /// free them one by one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub free_batch: u32,
}

impl BenchArgs {
    /// The threads the per-thread block count is sized for.
    pub fn threads_max(&self) -> usize {
        self.threads_max.unwrap_or(if self.sim { self.sim_cpus() } else { 2 })
    }

    /// --sim: the simulated machine's CPUs: --cpus, else the profile's or the named
    /// topology's, else (flat) --threads-max or 2.
    pub fn sim_cpus(&self) -> usize {
        if let Some(cpus) = self.cpus {
            return cpus;
        }
        if let Some(machine) = &self.machine {
            return machine.topology.cpus() as usize;
        }
        match self.topology {
            crate::run::TopologyKind::Flat => self.threads_max.unwrap_or(2),
            named => named.topology(1).cpus() as usize,
        }
    }

    /// The thread counts to run.
    pub fn thread_counts(&self) -> Vec<usize> {
        let most = self.threads_max();
        if !self.threads.is_empty() {
            return self.threads.clone();
        }
        if !self.sim {
            return (1..=most).collect();
        }
        let mut counts: Vec<usize> = (0..usize::BITS).map(|shift| 1 << shift).take_while(|&t| t < most).collect();
        counts.push(most);
        counts
    }
}
