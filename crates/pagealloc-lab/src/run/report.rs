//! What `pagelab run` reports, and its table format.

use serde::Serialize;

use super::faults::FaultReport;

/// Lock statistics of one class of the allocator's locks, summed.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LockReport {
    pub acquisitions: u64,
    /// Acquisitions that found the lock held.
    pub contended: u64,
    pub wait_ns: u64,
}

impl From<pagealloc::sync::LockStats> for LockReport {
    fn from(stats: pagealloc::sync::LockStats) -> LockReport {
        LockReport { acquisitions: stats.acquisitions, contended: stats.contended, wait_ns: stats.wait_ns }
    }
}

/// One run's results.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub workload: &'static str,
    pub params: serde_json::Value,
    pub preset: String,
    pub cpus: usize,
    pub platform: String,
    pub seed: u64,
    pub unit: &'static str,
    pub work_units: u64,
    /// Simulated (or wall-clock) seconds the CPUs ran.
    pub elapsed_s: f64,
    pub work_per_sec: f64,
    pub allocator_calls: u64,
    /// Workload allocations that found no memory (counted; the workload copes).
    pub out_of_memory: u64,
    /// Zone-lock wait as a share of all CPU time.
    pub lock_contend_pct: f64,
    /// Zone-lock statistics as the allocator's locks count them (both platforms).
    pub zone_lock: LockReport,
    pub alloc_zone_pages: u64,
    pub free_high: u64,
    pub pcp_pages_end: u64,
    /// Simulator speed: allocator calls per host second (simulated runs only).
    pub sim_ops_per_sec: Option<f64>,
    pub host_seconds: f64,
    /// Workload-specific results (e.g. truncate_s).
    pub recorded: std::collections::BTreeMap<String, f64>,
    /// With --top-reuse: the five most allocated page frames, (pfn, allocations).
    pub top_pfn_reuse: Vec<(u64, u64)>,
    /// Time-average of pages held in pagesets (sampled every 100 us of simulated time).
    pub pcp_pages_avg: f64,
    /// Pages still in pagesets after 30 simulated seconds of idle decay (simulated runs).
    pub pcp_pages_after_idle: Option<u64>,
    pub sim: Option<pagealloc_sim::SimStats>,
    pub calibration: Option<pagealloc_sim::Calibration>,
    /// Simulated runs: the frame-metadata layout charged.
    pub metadata_layout: Option<pagealloc_sim::MetadataLayout>,
    /// With --faults: the faults injected and the invariant checks' results (absent
    /// otherwise, so that runs without faults print what they always printed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultReport>,
    /// With --numa-stats: the NUMA-counter mode that replaced the preset's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_stats: Option<String>,
    /// With --vmstat: the allocator's /proc/vmstat after the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vmstat: Option<String>,
    /// Workloads with LRU lists: their locks and operations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lru: Option<super::LruReport>,
    /// Workloads with a page cache: fallbacks, compaction, reclaim, and how much free
    /// memory compaction can make whole pageblocks of at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frag: Option<super::FragReport>,
}

impl RunReport {
    /// The report as the table format prints it.
    pub fn print_table(&self) {
        let report = self;
        println!(
            "{} on {} ({} CPUs, preset {}, seed {})",
            report.workload, report.platform, report.cpus, report.preset, report.seed
        );
        println!("  params: {}", report.params);
        println!(
            "  {} {} in {:.4} s: {:.0} per second ({:.1} ns of CPU time each)",
            report.work_units,
            report.unit,
            report.elapsed_s,
            report.work_per_sec,
            report.elapsed_s * 1e9 * report.cpus as f64 / report.work_units.max(1) as f64,
        );
        println!(
            "  zone lock contention {:.2}% of CPU time ({} of {} acquisitions waited); alloc_zone {} pages; free_high {}; {} pages in pagesets at the end",
            report.lock_contend_pct,
            report.zone_lock.contended,
            report.zone_lock.acquisitions,
            report.alloc_zone_pages,
            report.free_high,
            report.pcp_pages_end
        );
        if report.out_of_memory > 0 {
            println!("  {} allocations found no memory", report.out_of_memory);
        }
        if let Some(idle) = report.pcp_pages_after_idle {
            println!("  pagesets: {:.0} pages on average, {idle} after 30 s idle", report.pcp_pages_avg);
        }
        for (key, value) in &report.recorded {
            println!("  {key}: {value:.6}");
        }
        self.print_sim_and_lru();
        if let Some(numa_stats) = &report.numa_stats {
            println!("  NUMA counters: {numa_stats} (overriding the preset's)");
        }
        if let Some(faults) = &report.faults {
            faults.print_table();
        }
        if let Some(vmstat) = &report.vmstat {
            println!("  /proc/vmstat after the run:");
            for line in vmstat.lines() {
                println!("    {line}");
            }
        }
    }

    /// The simulator's page-data and speed lines and the LRU line, where the run has them.
    fn print_sim_and_lru(&self) {
        let report = self;
        if let Some(stats) = &report.sim {
            let miss_pct = stats.page_misses as f64 * 100.0 / stats.page_touches.max(1) as f64;
            let llc_pct = stats.page_llc_hits as f64 * 100.0 / stats.page_touches.max(1) as f64;
            println!(
                "  page data: {} touches, {llc_pct:.1}% from the LLC, {miss_pct:.1}% from memory",
                stats.page_touches
            );
        }
        if let Some(rate) = report.sim_ops_per_sec {
            println!(
                "  simulator: {:.2} M allocator calls per host second ({:.2} s host)",
                rate / 1e6,
                report.host_seconds
            );
        }
        if let Some(lru) = &report.lru {
            println!(
                "  LRU ({}, batches of {}): {} adds, {} flushes, {} deletes; node locks {} acquisitions, {} waited, {:.3} ms waiting; batch locks {} acquisitions, {:.3} ms waiting",
                lru.commit,
                lru.batch_pages,
                lru.adds,
                lru.flushes,
                lru.deletes,
                lru.lock_acquisitions,
                lru.lock_contended,
                lru.lock_wait_ns as f64 / 1e6,
                lru.batch_lock_acquisitions,
                lru.batch_lock_wait_ns as f64 / 1e6
            );
        }
    }
}

/// The /proc/vmstat text of `allocator` (exact: every CPU's part summed).
pub fn vmstat_text<P: pagealloc::platform::Platform>(allocator: &pagealloc::PageAllocator<P>) -> String {
    let mut text = String::new();
    pagealloc::views::write_vmstat(&mut text, allocator).expect("writing to a String");
    text
}
