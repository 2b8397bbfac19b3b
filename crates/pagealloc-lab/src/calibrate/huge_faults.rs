//! page_fault1 in huge pages, a workload whose cost is memory bandwidth: threads of one
//! process, each pinned to its CPU, map 128 MiB with MADV_HUGEPAGE, write a byte every
//! 2 MiB (one huge-page fault each, whose 512 pages the kernel zeroes) and unmap it. For
//! `calibrate --check`: nothing of it is in a profile.

use crate::machine::kernel_costs::FAULT_MAP_BYTES;
use crate::machine::profile::Measurement;

const HUGE_PAGE_BYTES: usize = 2 << 20;
/// Huge faults a round makes.
pub const HUGE_FAULTS_PER_ROUND: usize = FAULT_MAP_BYTES / HUGE_PAGE_BYTES;

/// Huge-page faults the kernel has made (`thp_fault_alloc` in /proc/vmstat).
fn thp_faults() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/vmstat").map_err(|error| format!("/proc/vmstat: {error}"))?;
    text.lines()
        .find_map(|line| line.strip_prefix("thp_fault_alloc "))
        .and_then(|count| count.trim().parse().ok())
        .ok_or_else(|| "/proc/vmstat has no thp_fault_alloc".to_string())
}

/// One round: map, fault every huge page, unmap.
fn huge_round() -> Result<(), String> {
    // Where the advice is refused, the faults are 4 KiB ones, which the caller's count of
    // huge faults finds.
    let mapping = super::kernel::Mapping::with_advice(FAULT_MAP_BYTES, libc::MADV_HUGEPAGE)
        .ok_or_else(|| format!("mmap: {}", std::io::Error::last_os_error()))?;
    mapping.touch_every(HUGE_PAGE_BYTES);
    Ok(())
}

/// Huge faults per second of `cpus.len()` threads, `rounds` rounds each, median of
/// `repeats`. An error where fewer than 90% of the faults were huge pages (THP off, or
/// memory too fragmented for them).
pub fn huge_page_fault1(cpus: &[usize], rounds: usize, repeats: usize) -> Result<Measurement, String> {
    let faults = cpus.len() * rounds * HUGE_FAULTS_PER_ROUND;
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let before = thp_faults()?;
        let (elapsed_s, _) = super::pinned::released_together(
            cpus,
            "huge page_fault1",
            |_| Ok(()),
            |_, ()| (0..rounds).try_for_each(|_| huge_round()),
        )?;
        let huge = thp_faults()? - before;
        if (huge as f64) < 0.9 * faults as f64 {
            return Err(format!(
                "{huge} of {faults} faults got a huge page (transparent_hugepage off or memory fragmented)"
            ));
        }
        samples.push(faults as f64 / elapsed_s);
    }
    let method = format!(
        "threads of one process pinned to CPUs {cpus:?}, {rounds} rounds each: mmap 128 MiB \
         (MADV_HUGEPAGE), write a byte every 2 MiB, munmap; huge faults / wall time"
    );
    Ok(Measurement::from_samples(samples, "faults/s", &method))
}
