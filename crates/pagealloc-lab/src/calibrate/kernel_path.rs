//! The kernel page allocator's own path per call, from CPU-time sampling with call chains.
//!
//! Method: `perf record -g -e cpu-clock` runs a loop whose allocator calls are known in
//! number (page_fault1: one order-0 allocation and free per page; an AF_UNIX 64 KiB
//! write: blocks of order 3, 2, 1 and 0, each freed by the read). Every sample carries its
//! period (ns of CPU time) and its kernel call chain. A sample whose chain passes through the
//! allocator's entry (`__alloc_frozen_pages_noprof`, `__alloc_pages*`) is allocation time,
//! except where it is in `clear_page*`: zeroing, which the simulator charges as a page
//! touch. A chain through the free entries (`free_unref_folios`, `free_frozen_pages`, ...)
//! is free time. Path cost per call = that time / calls.
//!
//! Why not event timestamps: `kmem:mm_page_alloc` fires only after the allocation, and
//! `mm_page_free` before the free, so no pair of events brackets either path, and each
//! event costs about as much as the fast path it would time. Sampling perturbs nothing
//! between samples. Its limits: on a guest, `cpu-clock` cannot interrupt code that runs with
//! interrupts off, so such samples land where interrupts come back on (`*_irqrestore`),
//! which is still inside the caller's chain; the split between allocation and the code
//! around it is exact only to a few samples' worth.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::machine::profile::Measurement;

/// Kernel functions through which every page allocation passes (6.x names and older).
const ALLOC_ENTRIES: [&str; 4] =
    ["__alloc_frozen_pages_noprof", "__alloc_pages_noprof", "__alloc_pages", "__alloc_pages_nodemask"];
/// Kernel functions through which every page free passes.
const FREE_ENTRIES: [&str; 8] = [
    "free_unref_folios",
    "free_frozen_pages",
    "__free_frozen_pages",
    "free_unref_page",
    "free_unref_page_list",
    "__free_pages_ok",
    "free_pcppages_bulk",
    "__free_pages",
];
/// Zeroing a page inside the allocation (`__GFP_ZERO`).
const CLEAR_PREFIX: &str = "clear_page";

/// A sampled loop: its name for `--run-loop`, its calls per unit and units per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampledLoop {
    /// page_fault1 at 1 task: one order-0 allocation and free per page.
    PageFault1,
    /// AF_UNIX 64 KiB writes read back by the same thread: four blocks (orders 3, 2, 1, 0)
    /// per write, as `workload::unix_skb` carves them.
    Unix64k,
}

impl SampledLoop {
    pub fn name(self) -> &'static str {
        match self {
            SampledLoop::PageFault1 => "page-fault1",
            SampledLoop::Unix64k => "unix-64k",
        }
    }

    pub fn parse(name: &str) -> Option<SampledLoop> {
        [SampledLoop::PageFault1, SampledLoop::Unix64k].into_iter().find(|l| l.name() == name)
    }

    /// Allocator calls (and frees) per unit of the loop.
    fn calls_per_unit(self) -> u64 {
        match self {
            SampledLoop::PageFault1 => 1,
            SampledLoop::Unix64k => 4,
        }
    }

    /// Units of one run of `count` iterations (pages for page_fault1, writes for AF_UNIX).
    fn units(self, count: u64) -> u64 {
        match self {
            SampledLoop::PageFault1 => count * super::kernel::FAULT_MAP_PAGES as u64,
            SampledLoop::Unix64k => count,
        }
    }

    /// Runs the loop in this process (the child `perf record` starts).
    pub fn run(self, count: u64) -> Result<(), String> {
        match self {
            SampledLoop::PageFault1 => super::kernel::page_fault1(count as usize, 1).map(drop),
            SampledLoop::Unix64k => {
                super::kernel::stream_message(super::kernel::StreamFamily::Unix, 64 << 10, count as usize, 1).map(drop)
            }
        }
    }
}

/// Sampled time of the allocation and the free paths, of zeroing pages (`clear_page*` as
/// the leaf, under the allocator or not: a huge page's `folio_zero_user()` is not), and in
/// all, ns, from one perf script text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathShares {
    pub alloc_ns: f64,
    pub free_ns: f64,
    pub zeroing_ns: f64,
    pub total_ns: f64,
}

/// What one sampled loop gave: the allocation and free paths per call, and zeroing per
/// allocation (per page in page_fault1).
pub struct SampledPaths {
    pub alloc: Measurement,
    pub free: Measurement,
    pub zeroing: Measurement,
}

/// Sums the sampled periods of `perf script -F period,sym` output by chain (blank lines
/// separate samples; each sample's first line carries its period).
pub fn shares(script: &str) -> PathShares {
    let mut shares = PathShares { alloc_ns: 0.0, free_ns: 0.0, zeroing_ns: 0.0, total_ns: 0.0 };
    for sample in script.split("\n\n").filter(|s| !s.trim().is_empty()) {
        let mut lines = sample.lines().map(str::trim).filter(|l| !l.is_empty());
        let Some(period) = lines.next().and_then(|first| first.split_whitespace().next()?.parse::<f64>().ok()) else {
            continue;
        };
        let symbols: Vec<&str> = lines.filter_map(|line| line.split_whitespace().nth(1)).collect();
        shares.total_ns += period;
        let zeroing = symbols.first().is_some_and(|leaf| leaf.starts_with(CLEAR_PREFIX));
        if zeroing {
            shares.zeroing_ns += period;
        }
        if symbols.iter().any(|s| ALLOC_ENTRIES.contains(s)) {
            if !zeroing {
                shares.alloc_ns += period;
            }
        } else if symbols.iter().any(|s| FREE_ENTRIES.contains(s)) {
            shares.free_ns += period;
        }
    }
    shares
}

/// Records `run` of `count` iterations under perf and returns the sampled shares.
fn record_once(sampled: SampledLoop, count: u64, data: &Path) -> Result<PathShares, String> {
    let exe = std::env::current_exe().map_err(|error| format!("own executable: {error}"))?;
    let status = Command::new("perf")
        .args(["record", "-q", "-g", "-e", "cpu-clock", "-F", "10000", "-o"])
        .arg(data)
        .arg("--")
        .arg(&exe)
        .args(["calibrate", "--run-loop", sampled.name(), "--loop-count", &count.to_string()])
        .status()
        .map_err(|error| format!("perf: {error}"))?;
    if !status.success() {
        return Err(format!("perf record exited with {status}"));
    }
    let script = Command::new("perf")
        .args(["script", "-F", "period,ip,sym", "-i"])
        .arg(data)
        .output()
        .map_err(|error| format!("perf script: {error}"))?;
    if !script.status.success() {
        return Err(format!("perf script exited with {}", script.status));
    }
    Ok(shares(&String::from_utf8_lossy(&script.stdout)))
}

/// The allocation and free path per call, ns, over `repeats` sampled runs; `None` (with the
/// reason printed) where perf cannot record.
pub fn allocator_path(sampled: SampledLoop, count: u64, repeats: usize) -> Result<Option<SampledPaths>, String> {
    let data = temp_path(sampled);
    let (mut alloc, mut free) = (Vec::with_capacity(repeats), Vec::with_capacity(repeats));
    let mut zeroing = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let shares = match record_once(sampled, count, &data) {
            Ok(shares) => shares,
            Err(reason) => {
                eprintln!("kernel allocator path not measured: {reason}");
                let _ = std::fs::remove_file(&data);
                return Ok(None);
            }
        };
        if shares.alloc_ns == 0.0 || shares.free_ns == 0.0 {
            // perf ran but saw no kernel frames (kernel.perf_event_paranoid above 1 for a
            // user without CAP_PERFMON, or no kallsyms): not a measurement of 0 ns.
            eprintln!("kernel allocator path not measured: no kernel call chains in perf's samples (run as root)");
            let _ = std::fs::remove_file(&data);
            return Ok(None);
        }
        let calls = (sampled.units(count) * sampled.calls_per_unit()) as f64;
        alloc.push(shares.alloc_ns / calls);
        free.push(shares.free_ns / calls);
        zeroing.push(shares.zeroing_ns / calls);
    }
    let _ = std::fs::remove_file(&data);
    let method = |what: &str| {
        format!(
            "perf record -g -e cpu-clock of the {} loop ({count} iterations): CPU time of samples whose \
             call chain passes through the kernel's {what} entry (zeroing excluded) / calls",
            sampled.name()
        )
    };
    let zeroing_method = format!(
        "perf record -g -e cpu-clock of the {} loop ({count} iterations): CPU time of samples whose leaf \
         is clear_page* / allocations",
        sampled.name()
    );
    Ok(Some(SampledPaths {
        alloc: Measurement::from_samples(alloc, "ns", &method("allocation")),
        free: Measurement::from_samples(free, "ns", &method("free")),
        zeroing: Measurement::from_samples(zeroing, "ns", &zeroing_method),
    }))
}

fn temp_path(sampled: SampledLoop) -> PathBuf {
    std::env::temp_dir().join(format!("pagelab-calibrate-{}-{}.perf", std::process::id(), sampled.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
    100000 \n\tffffffff81 clear_page_erms\n\tffffffff82 get_page_from_freelist\n\tffffffff83 __alloc_frozen_pages_noprof\n\n\
    100000 \n\tffffffff84 rmqueue\n\tffffffff85 get_page_from_freelist\n\tffffffff83 __alloc_frozen_pages_noprof\n\n\
    200000 \n\tffffffff86 _raw_spin_unlock_irqrestore\n\tffffffff87 free_pcppages_bulk\n\tffffffff88 free_unref_folios\n\n\
    300000 \n\tffffffff89 exc_page_fault\n\n";

    #[test]
    fn chains_split_into_allocation_zeroing_free_and_the_rest() {
        let shares = shares(SCRIPT);
        assert_eq!(shares.total_ns, 700_000.0);
        assert_eq!(shares.alloc_ns, 100_000.0);
        assert_eq!(shares.zeroing_ns, 100_000.0);
        // Zeroing outside the allocator (a huge page's folio_zero_user()) counts too.
        let huge = super::shares("100000 \n\tffffffff81 clear_page_erms\n\tffffffff82 folio_zero_user\n\n");
        assert_eq!((huge.zeroing_ns, huge.alloc_ns), (100_000.0, 0.0));
        assert_eq!(shares.free_ns, 200_000.0);
    }

    #[test]
    fn loop_names_round_trip_and_unknown_ones_are_refused() {
        for sampled in [SampledLoop::PageFault1, SampledLoop::Unix64k] {
            assert_eq!(SampledLoop::parse(sampled.name()), Some(sampled));
        }
        assert_eq!(SampledLoop::parse("page_fault1"), None);
    }
}
