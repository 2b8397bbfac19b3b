//! `pagelab run WORKLOAD`: one workload on the simulator (default) or on real threads.

mod faults;
mod frag_report;
mod kbuild_args;
mod kswapd_task;
mod lru_pages;
mod policy_choice;
mod real;
mod report;
mod sim;
mod sim_env;

pub use faults::{FaultArgs, FaultReport};
pub use frag_report::{free_huge_pct, FragReport};
pub use lru_pages::LruReport;
pub use real::run_real;
pub use report::RunReport;
pub use sim::run_sim;

use clap::builder::TypedValueParser as _;
use clap::{Args, ValueEnum};

use pagealloc::policy::NumaStats;

use crate::output_format::OutputFormat;
use crate::policy_file::{PolicyFile, Set};
pub use kbuild_args::KbuildArgs;

use crate::workload::{
    FaultMode, Kbuild, PageBench, PageFault, PairKind, Pairs, ThpCompact, ThpFioScale, Trunc, Workload,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WorkloadKind {
    #[value(name = "page_bench03")]
    PageBench03,
    #[value(name = "page_fault1")]
    PageFault1,
    /// netperf SCTP_STREAM_MANY / TCP_STREAM pairs (page_frag carving of order-3 blocks).
    #[value(name = "netperf-pairs")]
    NetperfPairs,
    /// lmbench AF_UNIX pairs (order-3 paged fragments per message).
    #[value(name = "unix-pairs")]
    UnixPairs,
    /// mmtests io-trunc: fill page cache, then truncate it from one CPU.
    Trunc,
    /// Many short-lived processes with exit bursts and migrations.
    Kbuild,
    /// mmtests thpcompact-like: a huge-page region half unmapped, its holes refilled with
    /// page cache, then a second huge-page region (page-cache reclaim and compaction on).
    Thpcompact,
    /// mmtests thpfioscale-like: fio writers then readers over 64 KiB files (page cache and
    /// slab), THP threads faulting 75% of memory meanwhile.
    Thpfioscale,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TopologyKind {
    /// One socket, no SMT, as many cores as --cpus.
    Flat,
    /// 2 sockets x 192 cores x 2 threads, 12 core complex dies per socket each with its own
    /// L3 (AMD EPYC 9965, Turin, 2025).
    #[value(name = "2s-768cpu")]
    Server768,
    /// 2 sockets x 56 cores x 2 threads (the 2023 seed's kbuild machine).
    #[value(name = "2s-224cpu")]
    Server224,
    /// 2 sockets x 32 cores x 2 threads (the 2023 seed's network machine).
    #[value(name = "2s-128cpu")]
    Server128,
    /// 2 sockets x 20 cores x 2 threads (the 2022 seed's CascadeLake).
    #[value(name = "2s-80cpu")]
    Server80,
    /// 2 sockets x 22 cores x 2 threads (Xeon E5-2699 v4 Broadwell: the 2017 NUMA-counter
    /// and 2018 lru_lock seeds' machine).
    #[value(name = "2s-88cpu")]
    Server88,
    /// 2 sockets x 12 cores x 2 threads (Haswell-EP: the 2018 fragmentation seed's 2-socket
    /// machine).
    #[value(name = "2s-48cpu")]
    Server48,
    /// 1 socket x 4 cores x 2 threads with an 8 MiB LLC (the 2022 seed's small-cache box).
    #[value(name = "small-cache")]
    SmallCache,
}

/// Frame-metadata layout the simulator charges cache lines for (see
/// `pagealloc_sim::MetadataLayout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LayoutKind {
    /// Our 12-byte records, five to a cache line.
    Pagealloc,
    /// Linux's 64-byte struct page, a line per frame (what the seeds measured).
    Linux,
}

impl LayoutKind {
    pub fn layout(self) -> pagealloc_sim::MetadataLayout {
        match self {
            LayoutKind::Pagealloc => pagealloc_sim::MetadataLayout::Pagealloc,
            LayoutKind::Linux => pagealloc_sim::MetadataLayout::LinuxStructPage,
        }
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    pub workload: WorkloadKind,
    /// CPUs running the workload (the first N of the topology; the simulator models up to
    /// 1024).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    pub cpus: usize,
    /// A preset of `pagelab presets` (name or alias).
    #[arg(long, default_value = "mainline", value_parser = crate::preset_arg::parser())]
    pub preset: String,
    /// Run on real threads instead of the simulator.
    #[arg(long)]
    pub real: bool,
    #[arg(long, value_enum, default_value = "flat")]
    pub topology: TopologyKind,
    /// Simulator: a machine file written by `pagelab calibrate` (or `pagelab machine capture`,
    /// whose costs are the reference host's until calibrated). Its topology replaces
    /// --topology, its measured hardware costs the legacy ones, and the kernel's costs it
    /// holds (fault path, allocator path per call, socket messages) the workloads' own.
    #[arg(long, value_name = "FILE", conflicts_with = "topology", value_parser = parse_machine)]
    pub machine: Option<std::sync::Arc<crate::machine::SimMachine>>,
    /// Simulator: the machine profile's memory too, as its /proc/zoneinfo has it (nodes,
    /// zones, present and managed pages, the CPUs of each node), instead of --memory-gib.
    #[arg(long, requires = "machine", conflicts_with_all = ["memory_gib", "dma32"])]
    pub machine_memory: bool,
    /// Simulator: whose frame-metadata layout to charge cache lines for.
    #[arg(long, value_enum, default_value = "pagealloc")]
    pub metadata_layout: LayoutKind,
    /// Simulated (or, with --real, wall-clock) run time; fixed-work workloads (trunc,
    /// kbuild) stop earlier when done. Default: the workload's own. At most a day.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub duration_ms: Option<u64>,
    /// Memory of the machine (the simulator keeps per-frame tables: 1 TiB takes ~4 GiB).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub memory_gib: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// page_bench03: block order (0..=MAX_ORDER). page_fault1: each fault's block, whose
    /// pages it zeroes (9: a huge page, as in a MADV_HUGEPAGE region).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=pagealloc::MAX_ORDER as i64))]
    pub order: u8,
    /// page_bench03: work around each alloc+free pair, ns (the module's loop; default 10).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub loop_ns: Option<u64>,
    #[command(flatten)]
    pub kbuild: KbuildArgs,
    /// page_fault1: process or thread mode.
    #[arg(long, value_enum, default_value = "process")]
    pub mode: FaultMode,
    /// page_fault1 and trunc: pages go on the LRU (the preset's LRU configuration): faulted
    /// pages on the active anon list, taken off at munmap; page-cache pages on the inactive
    /// file list, taken off at truncate.
    #[arg(long)]
    pub lru: bool,
    /// thpcompact, thpfioscale: huge faults in MADV_HUGEPAGE regions (direct compaction and
    /// reclaim).
    #[arg(long)]
    pub madvise: bool,
    /// Node 0's memory below 4 GiB is a DMA32 zone (up to 3 GiB, below the PCI hole), the
    /// rest Normal, as on x86-64; otherwise every node is one Normal zone.
    #[arg(long)]
    pub dma32: bool,
    /// Simulator: write the allocator's kmem tracepoints to FILE as ftrace text (`.gz`
    /// compressed), for `pagelab replay` or the kernel's trace scripts.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// netperf-pairs / unix-pairs: bytes per message (1 byte to 1 GiB).
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub message_bytes: u64,
    /// netperf-pairs / unix-pairs: mean time between a pair's sender and receiver trading
    /// CPUs (default: each task stays on its CPU).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3_600_000_000))]
    pub role_swap_us: Option<u64>,
    /// netperf-pairs / unix-pairs: run both tasks of a pair on one CPU, taking turns (one
    /// pair per CPU), as sync wake-ups tend to place them.
    #[arg(long, conflicts_with = "role_swap_us")]
    pub co_located: bool,
    #[arg(long, value_enum, default_value = "table")]
    pub format: OutputFormat,
    /// Count allocations per page frame and report the five most reused.
    #[arg(long)]
    pub top_reuse: bool,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// How NUMA event counters are kept, overriding the preset's: zone-stat, threshold-N
    /// (32..=32765), separate-class, separate-class-N (1..=65533), per-cpu or disabled.
    #[arg(long, value_parser = parse_numa_stats)]
    pub numa_stats: Option<NumaStats>,
    /// Print the allocator's /proc/vmstat after the run.
    #[arg(long)]
    pub vmstat: bool,
    /// Pages per LRU add batch, overriding the preset's (workloads with LRU lists).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=64))]
    pub lru_batch: Option<u8>,
    /// A policy file (TOML): `base = "PRESET"`, which replaces --preset, and any switch
    /// `pagelab presets --dump` writes (`[pcp.drain] chunked = true`).
    #[arg(long = "policy", value_name = "FILE", value_parser = PolicyFile::load)]
    pub policy_file: Option<PolicyFile>,
    /// One switch, after the policy file's (`--set pcp.batch_scale_max=6`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Set::parse)]
    pub sets: Vec<Set>,
    /// Every preset's calls cost this library's own path, not the kernel's: the workload
    /// calls the library itself, as `pagelab bench --sim` does.
    #[arg(skip)]
    pub own_path: bool,
}

pub(crate) fn parse_machine(path: &str) -> Result<std::sync::Arc<crate::machine::SimMachine>, String> {
    crate::machine::SimMachine::read(std::path::Path::new(path)).map(std::sync::Arc::new)
}

fn parse_numa_stats(text: &str) -> Result<NumaStats, String> {
    NumaStats::parse(text).ok_or_else(|| {
        format!("'{text}': expected zone-stat, threshold-N (32..=32765), separate-class[-N] (N 1..=65533), per-cpu or disabled")
    })
}

/// `pagelab run`'s arguments alone, to read their defaults.
#[derive(clap::Parser)]
struct RunCommand {
    #[command(flatten)]
    run: RunArgs,
}

impl RunArgs {
    /// `pagelab run WORKLOAD` with every other argument at its default, as the command line
    /// gives them: callers that build a run in code change only what they need.
    pub fn defaults(workload: WorkloadKind) -> RunArgs {
        use clap::{Parser, ValueEnum};
        let name = workload.to_possible_value().expect("every workload has a name");
        RunCommand::parse_from(["pagelab run", name.get_name()]).run
    }

    /// The hardware costs of the simulated machine.
    pub fn calibration(&self) -> pagealloc_sim::Calibration {
        self.sim_machine().calibration
    }

    /// `pagelab run`'s arguments from a command line (`words[0]` is the program), with
    /// clap's message on error.
    pub fn try_parse_words<S: AsRef<str>>(words: &[S]) -> Result<RunArgs, String> {
        use clap::Parser;
        RunCommand::try_parse_from(words.iter().map(AsRef::as_ref)).map(|command| command.run).map_err(|error| {
            let text = error.to_string();
            text.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string()
        })
    }

    /// What each allocator call of the workload costs besides its data movement: the
    /// kernel's path for the Linux presets, this library's own for `pagealloc` (or for every
    /// preset, with `own_path`).
    pub fn call_costs(&self) -> crate::machine::CallCosts {
        let machine = self.sim_machine();
        let own = self.own_path || self.preset().is_ok_and(|preset| preset.name == "pagealloc");
        if own {
            machine.kernel.own_calls
        } else {
            machine.kernel.kernel_calls
        }
    }

    /// Run-time cap: as given, or the workload's default.
    pub fn duration_ms(&self) -> u64 {
        self.duration_ms.unwrap_or(match self.workload {
            WorkloadKind::Trunc | WorkloadKind::Kbuild => 10_000,
            WorkloadKind::Thpcompact | WorkloadKind::Thpfioscale => 600_000,
            _ => 20,
        })
    }

    /// The workload, with the simulated machine's kernel costs.
    pub fn workload(&self) -> Result<Box<dyn Workload>, String> {
        let machine = self.sim_machine();
        let kernel = &machine.kernel;
        Ok(match self.workload {
            WorkloadKind::PageBench03 => {
                let defaults = PageBench::default();
                Box::new(PageBench { order: self.order, loop_ns: self.loop_ns.unwrap_or(defaults.loop_ns) })
            }
            WorkloadKind::PageFault1 => {
                let release = crate::preset_arg::release_of(&self.preset);
                let fault = PageFault { lru: self.lru, fault_order: self.order, ..PageFault::new(self.mode, release) };
                Box::new(fault.on_machine(&machine))
            }
            WorkloadKind::NetperfPairs | WorkloadKind::UnixPairs => {
                let kind = if self.workload == WorkloadKind::NetperfPairs { PairKind::Netperf } else { PairKind::Unix };
                let role_swap_ns = self.role_swap_us.map(|us| us * 1_000);
                let workload =
                    Pairs { role_swap_ns, co_located: self.co_located, ..Pairs::new(kind, self.message_bytes) };
                Box::new(workload.with_costs(kernel, &machine.calibration))
            }
            WorkloadKind::Trunc => Box::new(Trunc { lru: self.lru, ..Trunc::default() }.with_costs(kernel)),
            WorkloadKind::Kbuild => Box::new(self.kbuild.apply(Kbuild::default())?.with_costs(kernel)),
            WorkloadKind::Thpcompact => {
                Box::new(ThpCompact::new(self.memory_gib << 18, self.madvise).with_costs(kernel))
            }
            WorkloadKind::Thpfioscale => {
                let sockets = self.topology().sockets as usize;
                let workload = ThpFioScale::new(self.memory_gib << 18, self.cpus / sockets, self.madvise);
                Box::new(workload.with_costs(kernel))
            }
        })
    }

    /// The simulated machine: the profile given, else the seed machine of `--topology`
    /// (cited hardware, the reference host's kernel scaled by clock), else (`flat`) the
    /// reference host's costs on a flat topology of `--cpus`.
    pub fn sim_machine(&self) -> crate::machine::SimMachine {
        if let Some(machine) = &self.machine {
            return machine.as_ref().clone();
        }
        let topology = self.named_topology();
        crate::machine::seeds::seed_machine(&topology)
            .unwrap_or_else(|| crate::machine::seeds::reference_with(topology))
    }

    pub fn topology(&self) -> pagealloc_sim::Topology {
        match &self.machine {
            Some(machine) => machine.topology.clone(),
            None => self.named_topology(),
        }
    }

    /// The topology `--topology` names.
    fn named_topology(&self) -> pagealloc_sim::Topology {
        self.topology.topology(self.cpus)
    }
}

impl TopologyKind {
    /// The topology, `flat` with `cpus` cores.
    pub fn topology(self, cpus: usize) -> pagealloc_sim::Topology {
        match self {
            TopologyKind::Flat => pagealloc_sim::Topology::flat(cpus as u32),
            TopologyKind::Server768 => pagealloc_sim::Topology::SERVER_768,
            TopologyKind::Server224 => pagealloc_sim::Topology::SERVER_224,
            TopologyKind::Server128 => pagealloc_sim::Topology::SERVER_128,
            TopologyKind::Server80 => pagealloc_sim::Topology::SERVER_80,
            TopologyKind::Server88 => pagealloc_sim::Topology::SERVER_88,
            TopologyKind::Server48 => pagealloc_sim::Topology::SERVER_48,
            TopologyKind::SmallCache => pagealloc_sim::Topology::SMALL_CACHE_8,
        }
    }
}

/// A workload's failed allocations: out of memory is pressure, counted and reported; any
/// other error means the request itself was wrong, and ends the run with that error.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllocFailures {
    pub out_of_memory: u64,
    pub rejected: Option<pagealloc::AllocError>,
}

impl AllocFailures {
    /// The block, or `None` with the failure noted.
    pub fn note(&mut self, result: Result<pagealloc::Block, pagealloc::AllocError>) -> Option<pagealloc::Block> {
        match result {
            Ok(block) => Some(block),
            Err(pagealloc::AllocError::OutOfMemory { .. }) => {
                self.out_of_memory += 1;
                None
            }
            Err(error) => {
                self.rejected.get_or_insert(error);
                None
            }
        }
    }
}

pub fn run(args: &RunArgs) -> Result<(), String> {
    let workload = args.workload()?;
    if args.real && args.trace.is_some() {
        return Err("--trace writes the simulator's events; it does not apply to --real".into());
    }
    let report = if args.real { run_real(workload.as_ref(), args)? } else { run_sim(workload.as_ref(), args)? };
    crate::output_format::print_report(args.format, &report, || {
        report.print_table();
        Ok(())
    })?;
    // With --faults, any invariant violation fails the run, after its report.
    report.faults.as_ref().map_or(Ok(()), FaultReport::verdict)
}

#[cfg(test)]
mod bandwidth_tests;
#[cfg(test)]
mod tests;
