//! `pagelab bench`: LLFree's allocator benchmark (eval/src/bin/bench.rs and frag.rs),
//! mirrored so numbers compare: memory M GiB of 4 KiB frames, per-thread block count
//! n = frames / threads_max / 2 / 2^order (half of memory in play at threads_max), threads
//! pinned to CPUs and released together.
//!
//! - bulk: each thread allocates n blocks then frees them, last allocated first; the cycle
//!   repeats 2^order times. ns per alloc and per free.
//! - repeat: each thread allocates n blocks and keeps them, then times n * 2^order
//!   alloc+free pairs of one block. ns per pair.
//! - rand: each thread allocates n blocks; all blocks are shuffled across threads (fixed
//!   seed) and each thread frees its share, mostly blocks others allocated.
//! - frag (order 0): all memory is allocated on all threads, shuffled, half freed at random;
//!   then for each round every thread n/10 times frees a random held frame and allocates a
//!   new one. After each round: share of memory free as whole 2 MiB blocks.
//!
//! Each iteration builds a fresh allocator; per-op times are means over a thread's ops,
//! averaged over threads; min/median/max are over iterations.

mod args;
mod peers;
mod report;
mod results;
mod runner;
mod sim;
mod workloads;

pub use args::{AllocatorKind, BenchArgs, BenchKind};
pub use results::{RunResult, Spread};
pub use runner::run_benchmarks;

/// Runs the benchmarks `args` asks for and prints their results.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    let results = run_benchmarks(args)?;
    report::print(&results, args.format)
}
