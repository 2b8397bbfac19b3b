//! The `pagelab bench` command line: which benchmark, allocators, thread counts and sizes,
//! and the output format.

use clap::{Args, ValueEnum};
use serde::Serialize;

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    /// One `key,value` row per number of the JSON results.
    Csv,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    pub bench: BenchKind,
    #[arg(long, value_enum, default_value = "pagealloc")]
    pub allocator: Vec<AllocatorKind>,
    /// Threads the per-thread block count is sized for.
    #[arg(long, default_value_t = 2)]
    pub threads_max: usize,
    /// Thread counts to run (repeatable); default 1..=threads-max.
    #[arg(short = 'x', long = "threads")]
    pub threads: Vec<usize>,
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
    pub format: Format,
    /// frag: rounds of churn (LLFree: 100).
    #[arg(long, default_value_t = 100)]
    pub frag_rounds: usize,
    /// bulk and rand: blocks handed back per call. 1 (the default) frees one block per call,
    /// as LLFree's benchmark does; more frees slices through pagealloc's bulk free (others
    /// free them one by one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub free_batch: u32,
}
