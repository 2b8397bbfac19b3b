//! Benchmark results: one iteration's per-op times, their min/median/max over iterations,
//! and the result row reported per (allocator, thread count).

use serde::Serialize;

use super::BenchKind;
pub use crate::stats::Spread;

#[derive(Debug, Serialize)]
pub struct RunResult {
    pub bench: BenchKind,
    pub allocator: &'static str,
    pub preset: Option<String>,
    pub order: u8,
    pub threads: usize,
    pub threads_max: usize,
    pub memory_gib: u64,
    pub iterations: usize,
    /// Blocks freed per call (`--free-batch`); left out at 1, one per call.
    #[serde(skip_serializing_if = "is_one")]
    pub free_batch: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alloc_ns: Option<Spread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_ns: Option<Spread>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pair_ns: Option<Spread>,
    /// frag: per round, the median over iterations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_huge_pct: Option<Vec<f64>>,
    /// frag: per round, the median over iterations of the pages compaction would have to
    /// move so that free memory is whole 2 MiB blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pack_moves: Option<Vec<f64>>,
    pub metadata_bytes_per_frame: Option<usize>,
    /// --sim: where the time went, per allocator call (mean over iterations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_costs: Option<super::sim::SimCosts>,
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

/// One iteration's per-op times (ns) and, for frag, the huge-free share per round.
#[derive(Default)]
pub(super) struct Iteration {
    pub(super) alloc_ns: Option<f64>,
    pub(super) free_ns: Option<f64>,
    pub(super) pair_ns: Option<f64>,
    pub(super) free_huge_pct: Vec<f64>,
    pub(super) pack_moves: Vec<u64>,
    pub(super) sim_costs: Option<super::sim::SimCosts>,
}
