//! The `pagelab torture` command line. Every value is range-checked by clap, so a bad flag
//! is a one-line error with exit status 2 before anything runs.

use clap::builder::TypedValueParser as _;
use clap::Args;
use pagealloc::presets::Preset;

#[derive(Args, Debug)]
pub struct TortureArgs {
    /// Worker threads (default: twice the CPUs this process may use, at least 4, so threads
    /// outnumber cores and are preempted inside allocator calls).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    pub threads: Option<usize>,
    /// Run time of each preset.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=7 * 24 * 3600))]
    pub seconds: u64,
    /// Seed of the workers' generators (worker i draws from its own stream of it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Policy preset to run (repeatable: each runs in turn; see `pagelab presets`).
    #[arg(long = "preset", value_name = "PRESET", default_value = "mainline", value_parser = parse_preset)]
    pub presets: Vec<&'static Preset>,
    /// Period of the quiescent checks (invariant checker and census against the shadow).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub check_ms: u64,
    /// Memory of node 0: 16 MiB of DMA, the rest split 1:2:1 over DMA32, Normal and
    /// Movable. Small by default so the workers can hold most of it and reach the watermarks.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(64..=65_536))]
    pub memory_mib: u64,
    /// A second NUMA node with this much memory (one Normal zone) and no CPUs, as CXL
    /// memory is: its background work runs on node 0's first CPU. 0 for none.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(0..=65_536))]
    pub memory_only_node_mib: u64,
    /// The migration client panics on every N-th call (0: never), and every page the
    /// allocator held for the move must come back as the panic unwinds.
    #[arg(long, default_value_t = 1000)]
    pub client_panic_every: u64,
    /// The summaries as text, or every preset's counts as JSON or `key,value` CSV rows.
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::output_format::OutputFormat,
}

impl TortureArgs {
    /// Worker threads: as given, or twice the allowed CPUs (at least 4).
    pub fn threads(&self) -> usize {
        self.threads.unwrap_or_else(|| {
            let allowed = std::thread::available_parallelism().map_or(1, |n| n.get());
            (2 * allowed).max(4)
        })
    }
}

/// A preset name or alias, resolved as `pagelab run --preset` does.
fn parse_preset(name: &str) -> Result<&'static Preset, String> {
    pagealloc::presets::find(name).ok_or_else(|| format!("unknown preset '{name}' (see `pagelab presets`)"))
}
