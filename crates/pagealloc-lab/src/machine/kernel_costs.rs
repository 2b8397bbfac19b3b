//! What the kernel spends around and inside the page allocator, from a profile, for the
//! simulator to charge as computation (data movement stays the cost model's).
//!
//! Rules, each from measured constants (see `docs/simulator.md`):
//! - **Allocator path per call.** Order 0 as sampled in page_fault1; orders 1 and up from
//!   the AF_UNIX 64 KiB loop's mean over its four calls (orders 3, 2, 1, 0), less the
//!   order-0 share: `(4 x mean - order0) / 3`. The `pagealloc` preset's path is this
//!   library's own, timed on the host.
//! - **A page fault** (page_fault1's per-page cost at 1 task) is the kernel's fault and zap
//!   work plus what the simulator charges apart: the allocator's path for the allocation
//!   and the free, zeroing a page from memory, and the map and unmap's share. The rest, the
//!   trap, page-table update, memcg charge, LRU and rmap work and the zap, is `fault_ns`.
//! - **A socket message** (one thread, write then read back) is split the same way in
//!   `workload::pairs`: its blocks' allocator paths and page touches apart, the rest in
//!   halves between the write and the read.
//! - **A message between two CPUs** costs, besides its work, the socket state moving between
//!   their caches: a polling 1-byte ping-pong's one-way trip less one thread's write and
//!   read (see `calibrate::cross_cpu`), charged in halves to the writer and the reader.
//! - **Wake-ups**: a 1-byte ping-pong's one-way trip less one thread's write and read of
//!   the byte, between two CPUs (a blocked task on another CPU, less the message's
//!   cross-CPU part, charged apart) and on one (a switch).
//! - **Page cache**: writing a page of a tmpfs file less its allocation path and one touch of
//!   a page from memory (the workloads touch the page apart); truncating a page less its free
//!   path. Spawning a process, creating a file
//!   and copying a page are charged as measured.

use pagealloc_sim::Calibration;

use super::Constants;

/// page_fault1's mapping (will-it-scale: 128 MiB), the region a measured fault cost is per.
pub const FAULT_MAP_BYTES: usize = 128 << 20;
/// Its 4 KiB pages.
pub const FAULT_MAP_PAGES: usize = FAULT_MAP_BYTES / 4096;

/// An allocator call's own work, ns: order 0, and orders 1 and up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallCosts {
    pub alloc_ns: [u64; 2],
    pub free_ns: [u64; 2],
}

impl CallCosts {
    /// Charges nothing per call: the allocator's data movement alone (the simulator's model
    /// without a machine profile).
    pub const NONE: CallCosts = CallCosts { alloc_ns: [0; 2], free_ns: [0; 2] };

    pub fn alloc_ns(&self, order: u8) -> u64 {
        self.alloc_ns[usize::from(order > 0)]
    }

    pub fn free_ns(&self, order: u8) -> u64 {
        self.free_ns[usize::from(order > 0)]
    }
}

/// The kernel's costs on a profiled machine.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KernelCosts {
    /// The kernel allocator's path per call (the Linux presets).
    pub kernel_calls: CallCosts,
    /// This library's path per call (the `pagealloc` preset).
    pub own_calls: CallCosts,
    /// A page fault's kernel work besides the allocator, zeroing and the map and unmap.
    pub fault_ns: u64,
    /// An mmap and munmap of page_fault1's region, untouched.
    pub map_unmap_ns: u64,
    /// One AF_UNIX message written and read back by one thread: (bytes, ns), by size.
    pub unix_message_ns: Vec<(u64, u64)>,
    /// The same through a TCP loopback stream.
    pub tcp_message_ns: Vec<(u64, u64)>,
    /// An AF_UNIX message whose writer and reader run on two CPUs: the socket state moving
    /// between their caches, besides the message's own work.
    pub unix_cross_cpu_ns: u64,
    /// The same for a TCP loopback message.
    pub tcp_cross_cpu_ns: u64,
    /// A blocked task woken from another CPU: when it runs, after the waker's event.
    pub wake_other_cpu_ns: u64,
    /// What that wake-up costs the waker; 0 where not measured.
    pub wake_waker_ns: u64,
    /// A context switch between two tasks of one CPU.
    pub switch_same_cpu_ns: u64,
    /// A process spawned, run to its exit and reaped (fork, exec, exit).
    pub process_spawn_ns: u64,
    /// A file created and closed.
    pub file_create_ns: u64,
    /// A page-cache page filled by a write, besides its allocation path and one page touch.
    pub page_cache_fill_ns: u64,
    /// A page-cache page truncated, besides its free path.
    pub page_cache_truncate_ns: u64,
    /// A page copied to or from a user buffer (a read or write of file data).
    pub page_copy_ns: u64,
    /// The kernel zeroing a faulted page (clear_page), as sampled in page_fault1; 0 where
    /// not measured.
    pub clear_page_ns: u64,
    /// A TLB shootdown's cost to the CPU that flushes, by the CPUs it interrupts:
    /// (targets, ns); empty where not measured.
    pub shootdown_caller_ns: Vec<(u64, u64)>,
    /// What each interrupted CPU loses, by the CPUs interrupted at once: (targets, ns).
    pub shootdown_target_ns: Vec<(u64, u64)>,
}

impl KernelCosts {
    pub(super) fn derive(constants: &Constants<'_>, calibration: &Calibration) -> Result<KernelCosts, String> {
        let kernel_calls = kernel_calls(constants)?;
        let own_calls = CallCosts {
            alloc_ns: [constants.value("pagealloc_alloc_ns")?.round() as u64; 2],
            free_ns: [constants.value("pagealloc_free_ns")?.round() as u64; 2],
        };
        let region_pages = FAULT_MAP_PAGES as f64;
        let map_unmap_ns = constants.value("mmap_munmap_128m_ns")?;
        let apart_ns = map_unmap_ns / region_pages
            + (kernel_calls.alloc_ns(0) + kernel_calls.free_ns(0) + calibration.page_miss_ns) as f64;
        let apart_fill_ns = (kernel_calls.alloc_ns(0) + calibration.page_miss_ns) as f64;
        let fault_page_ns = constants.value("page_fault1_page_ns")?;
        if fault_page_ns <= apart_ns {
            return Err(format!(
                "page_fault1_page_ns {fault_page_ns:.0} is no more than its parts charged apart ({apart_ns:.0})"
            ));
        }
        let unix_cross_cpu_ns = cross_cpu_ns(constants, "unix_cross_cpu_ns")?;
        Ok(KernelCosts {
            kernel_calls,
            own_calls,
            fault_ns: (fault_page_ns - apart_ns).round() as u64,
            map_unmap_ns: map_unmap_ns.round() as u64,
            unix_message_ns: by_size(constants, "unix_stream_")?,
            tcp_message_ns: by_size(constants, "tcp_stream_")?,
            unix_cross_cpu_ns,
            tcp_cross_cpu_ns: cross_cpu_ns(constants, "tcp_cross_cpu_ns")?,
            // Its ping-pong's trip holds the message's cross-CPU part too, charged apart.
            wake_other_cpu_ns: wake_other_cpu_ns(constants)?.saturating_sub(unix_cross_cpu_ns),
            wake_waker_ns: match constants.get("wake_waker_ns") {
                Some(_) => zero_or_more_ns(constants, "wake_waker_ns")?,
                None => 0,
            },
            switch_same_cpu_ns: zero_or_more_ns(constants, "switch_same_cpu_ns")?,
            process_spawn_ns: constants.value("process_spawn_ns")?.round() as u64,
            file_create_ns: constants.value("file_create_ns")?.round() as u64,
            page_cache_fill_ns: less(constants.value("page_cache_fill_ns")?, apart_fill_ns),
            page_cache_truncate_ns: less(constants.value("page_cache_truncate_ns")?, kernel_calls.free_ns(0) as f64),
            page_copy_ns: constants.value("page_copy_ns")?.round() as u64,
            clear_page_ns: match constants.get("kernel_clear_page_ns") {
                Some(_) => constants.value("kernel_clear_page_ns")?.round() as u64,
                None => 0,
            },
            shootdown_caller_ns: shootdown_caller_ns(constants),
            shootdown_target_ns: by_targets(constants, "tlb_shootdown_target_ns", 0.0),
        })
    }
}

/// A shootdown's cost to its caller by targets: a munmap round with K other threads of the
/// process running less the round with none (the `tlb_shootdown_caller_ns` curve, measured
/// at K + 1 CPUs); at least 0.
fn shootdown_caller_ns(constants: &Constants<'_>) -> Vec<(u64, u64)> {
    let alone_ns = constants.curve("tlb_shootdown_caller_ns").and_then(|curve| curve.at(1)).map(|point| point.value);
    alone_ns.map_or_else(Vec::new, |alone_ns| by_targets(constants, "tlb_shootdown_caller_ns", alone_ns))
}

/// A curve measured at K + 1 CPUs (K targets) as (targets, value less `less_ns`), K >= 1.
fn by_targets(constants: &Constants<'_>, name: &str, less_ns: f64) -> Vec<(u64, u64)> {
    let Some(curve) = constants.curve(name) else { return Vec::new() };
    curve
        .points
        .iter()
        .filter(|point| point.cpus >= 2)
        .map(|point| (u64::from(point.cpus - 1), (point.value - less_ns).max(0.0).round() as u64))
        .collect()
}

/// `measured` less what the simulator charges apart, whole nanoseconds, at least 0.
fn less(measured: f64, apart_ns: f64) -> u64 {
    (measured - apart_ns).max(0.0).round() as u64
}

/// The kernel allocator's path: order 0 measured, orders 1 and up from the four-call mean.
fn kernel_calls(constants: &Constants<'_>) -> Result<CallCosts, String> {
    let alloc0 = constants.value("kernel_alloc_order0_ns")?;
    let free0 = constants.value("kernel_free_order0_ns")?;
    let high = |mean: f64, order0: f64| ((4.0 * mean - order0) / 3.0).max(order0);
    let alloc_high = high(constants.value("kernel_alloc_order0to3_ns")?, alloc0);
    let free_high = high(constants.value("kernel_free_order0to3_ns")?, free0);
    Ok(CallCosts {
        alloc_ns: [alloc0.round() as u64, alloc_high.round() as u64],
        free_ns: [free0.round() as u64, free_high.round() as u64],
    })
}

/// A wake-up of a task on another CPU. A host of one CPU has none: it costs what a switch
/// does.
fn wake_other_cpu_ns(constants: &Constants<'_>) -> Result<u64, String> {
    match constants.get("wake_other_cpu_ns") {
        Some(_) => zero_or_more_ns(constants, "wake_other_cpu_ns"),
        None => zero_or_more_ns(constants, "switch_same_cpu_ns"),
    }
}

/// A cost measured as a difference, which may be 0 (what it is measured against took as
/// long): present, finite, not negative and at most [`super::MAX_COST_NS`].
fn zero_or_more_ns(constants: &Constants<'_>, name: &str) -> Result<u64, String> {
    let measured = constants.get(name).ok_or_else(|| format!("the profile has no {name} (run pagelab calibrate)"))?;
    if !(measured.value.is_finite() && (0.0..=super::MAX_COST_NS).contains(&measured.value)) {
        return Err(format!("{name} = {}: a cost is between 0 and {} ns", measured.value, super::MAX_COST_NS));
    }
    Ok(measured.value.round() as u64)
}

/// A message's cross-CPU part: measured wherever a cross-CPU wake-up is, and 0 on a host of
/// one CPU (which has neither).
fn cross_cpu_ns(constants: &Constants<'_>, name: &str) -> Result<u64, String> {
    match (constants.get(name), constants.get("wake_other_cpu_ns")) {
        (None, None) => Ok(0),
        (None, Some(_)) => Err(format!("the profile has no {name} (run pagelab calibrate)")),
        (Some(_), _) => zero_or_more_ns(constants, name),
    }
}

/// The constants `<prefix><N>k_ns` as (bytes, ns), by size: at least one, each a valid cost,
/// no size twice.
fn by_size(constants: &Constants<'_>, prefix: &str) -> Result<Vec<(u64, u64)>, String> {
    let mut sizes = Vec::new();
    for (name, _) in &constants.0.constants {
        let Some(kib) = name.strip_prefix(prefix).and_then(|rest| rest.strip_suffix("k_ns")) else { continue };
        let kib: u64 = kib.parse().map_err(|_| format!("{name}: the size is not a number of KiB"))?;
        sizes.push((kib << 10, constants.value(name)?.round() as u64));
    }
    if sizes.is_empty() {
        return Err(format!("the profile has no {prefix}<N>k_ns"));
    }
    sizes.sort_unstable();
    if sizes.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return Err(format!("the profile gives a {prefix}<N>k_ns size twice"));
    }
    Ok(sizes)
}

/// The cost at `bytes`, linear between the measured sizes and beyond them along the
/// nearest two (flat with one size).
pub fn at_size(sizes: &[(u64, u64)], bytes: u64) -> u64 {
    assert!(!sizes.is_empty(), "at least one size is measured");
    if sizes.len() == 1 {
        return sizes[0].1;
    }
    let upper = sizes.iter().position(|&(size, _)| size >= bytes).unwrap_or(sizes.len() - 1).max(1);
    let ((x0, y0), (x1, y1)) = (sizes[upper - 1], sizes[upper]);
    let slope = (y1 as f64 - y0 as f64) / (x1 as f64 - x0 as f64);
    (y0 as f64 + slope * (bytes as f64 - x0 as f64)).max(0.0).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_interpolate_between_and_extrapolate_beyond() {
        let sizes = [(1024, 1000), (4096, 2000), (16384, 3000)];
        assert_eq!(at_size(&sizes, 1024), 1000);
        assert_eq!(at_size(&sizes, 2560), 1500);
        assert_eq!(at_size(&sizes, 16384), 3000);
        assert_eq!(at_size(&sizes, 28672), 4000, "beyond the last size, along the last two");
        assert_eq!(at_size(&sizes, 512), 833, "below the first, along the first two");
        assert_eq!(at_size(&[(4096, 7)], 1 << 20), 7);
    }

    #[test]
    fn calls_pick_order_zero_or_higher() {
        let calls = CallCosts { alloc_ns: [10, 30], free_ns: [5, 9] };
        assert_eq!((calls.alloc_ns(0), calls.alloc_ns(3), calls.free_ns(0), calls.free_ns(1)), (10, 30, 5, 9));
    }
}
