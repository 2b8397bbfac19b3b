//! The shared resources' curves: each measured with 1, 2, 4, ... CPUs using the resource at
//! once, up to every CPU of the host (`Curve::cpu_series`), on the first CPUs of
//! [`spreading_order`]. Each point is the median of the repeats, with its extremes.
//!
//! - here: memory bandwidth (pages zeroed and copied on every CPU at once), one hot line's
//!   atomic adds, a futex-based lock's hand-over;
//! - `read_mostly`: a word that one CPU writes now and then while the others read it;
//! - `shootdown`: TLB shootdowns to the caller and to the CPUs running its mm, and the
//!   mmap_lock under mmap and munmap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::curve_points::{per_thread, sized_samples, CurveMethod, POINT_NS};
use super::lost_time::Padded;
use super::pinned::released_together;
use super::read_mostly::read_mostly_miss;
use super::shootdown;
use super::Effort;
use crate::machine::profile::{CpuPlace, Curve, HostInfo};

const PAGE_BYTES: usize = 4096;
/// Each thread's buffer for the bandwidth curves is at least this.
const MIN_BUFFER_BYTES: usize = 4 << 20;
/// The bandwidth curves' buffers together are at least this (and at least 4 x the LLC).
const MIN_BUFFERS_BYTES: usize = 256 << 20;
/// Bytes the bandwidth curves' threads zero (or copy) per point, together, at full effort:
/// whole passes over the buffers, one at least.
const BANDWIDTH_BYTES: u64 = 2 << 30;
/// The probes' operations over all threads at full effort, split evenly: the serialized
/// resources take about as long at every CPU count.
const HOT_LINE_PROBE_RMWS: u64 = 1_000_000;
const LOCK_PROBE_ACQUISITIONS: u64 = 200_000;

/// The order CPUs join a curve's points in: one CPU of each core of the first package, then
/// of each core of the other packages, then the SMT siblings in the same order. Within a
/// package, cores in the order their CPUs are listed.
pub fn spreading_order(cpus: &[CpuPlace]) -> Vec<usize> {
    let first_package = cpus.first().map(|place| place.package);
    let mut keyed: Vec<_> = cpus
        .iter()
        .enumerate()
        .map(|(position, place)| {
            let sibling = cpus[..position]
                .iter()
                .filter(|other| other.package == place.package && other.core == place.core)
                .count();
            ((sibling, Some(place.package) != first_package, place.package, position), place.cpu)
        })
        .collect();
    keyed.sort_unstable_by_key(|&(key, _)| key);
    keyed.into_iter().map(|(_, cpu)| cpu).collect()
}

/// Every curve of the host, in the profile's order; `report` sees each as it is measured.
pub fn measure(
    host: &HostInfo,
    effort: &Effort,
    mut report: impl FnMut(&str, &Curve),
) -> Result<Vec<(String, Curve)>, String> {
    let order = spreading_order(&host.cpus);
    let llc_bytes = (host.llc_kib().unwrap_or(8 << 10) as usize) << 10;
    let buffers_bytes = bandwidth_buffers_bytes(llc_bytes);
    let mut curves = Vec::new();
    let mut add = |name: &str, curve: Curve| {
        report(name, &curve);
        curves.push((name.to_string(), curve));
    };
    add("page_zero_per_cpu_ns", page_bandwidth(&order, buffers_bytes, false, effort)?);
    add("page_copy_per_cpu_ns", page_bandwidth(&order, buffers_bytes, true, effort)?);
    add("hot_line_rmw_ns", hot_line_rmw(&order, effort)?);
    add("read_mostly_miss_ns", read_mostly_miss(&order, effort)?);
    let (caller, target) = shootdown::munmap_shootdowns(&order, effort)?;
    add("tlb_shootdown_caller_ns", caller);
    add("tlb_shootdown_mprotect_ns", shootdown::mprotect_shootdowns(&order, effort)?);
    add("tlb_shootdown_target_ns", target);
    add("futex_lock_handover_ns", futex_lock_handover(&order, effort)?);
    add("mmap_lock_pair_ns", shootdown::mmap_lock_pair(&order, effort)?);
    Ok(curves)
}

/// The bandwidth curves' buffers together: 4 times the LLC, 256 MiB at least, so that the
/// pages come from memory, as the kernel's zeroing of a freshly allocated page does.
pub fn bandwidth_buffers_bytes(llc_bytes: usize) -> usize {
    (llc_bytes * 4).max(MIN_BUFFERS_BYTES)
}

/// Each of `threads` threads' buffer: an even share of `buffers_bytes` in whole pages, and
/// 4 MiB at least.
pub fn buffer_bytes_per_thread(buffers_bytes: usize, threads: usize) -> usize {
    (buffers_bytes / threads.max(1) / PAGE_BYTES * PAGE_BYTES).max(MIN_BUFFER_BYTES)
}

/// Ns per page per CPU with a thread on each of `cpus` zeroing (or copying to) every page of
/// its own buffer of `buffer_bytes`, `passes` times: wall time / pages each thread did.
fn page_bandwidth_once(cpus: &[usize], buffer_bytes: usize, passes: usize, copy: bool) -> Result<f64, String> {
    let pages = buffer_bytes / PAGE_BYTES;
    let (elapsed_s, _) = released_together(
        cpus,
        "page-bandwidth",
        // Written here, so every page is faulted in on this thread's CPU before the release.
        |_| Ok((vec![1u8; if copy { buffer_bytes } else { 0 }], vec![2u8; buffer_bytes])),
        |_, (source, target)| {
            for _ in 0..passes {
                super::hardware::zero_or_copy_pages(source, target, copy);
            }
            Ok(())
        },
    )?;
    Ok(elapsed_s * 1e9 / (pages * passes) as f64)
}

/// `page_zero_per_cpu_ns` (or, copying, `page_copy_per_cpu_ns`): clear_page (copy_page) on
/// n CPUs at once, from buffers of `buffers_bytes` together.
pub fn page_bandwidth(order: &[usize], buffers_bytes: usize, copy: bool, effort: &Effort) -> Result<Curve, String> {
    let passes = (effort.times(BANDWIDTH_BYTES) as usize / buffers_bytes).max(1);
    let what = if copy { "copying a 4 KiB page from its own source buffer to" } else { "writing 4 KiB of zeros to" };
    let method = format!(
        "n threads pinned to n CPUs, each {what} every page of its own buffer in turn ({} MiB of buffers \
         split evenly, {} MiB each at least, faulted in on the thread's CPU), {passes} passes, all \
         released by one barrier; wall time from the release to the last thread's end / pages each \
         thread did",
        buffers_bytes >> 20,
        MIN_BUFFER_BYTES >> 20
    );
    CurveMethod { unit: "ns", method }.measure(order, 1, |cpus| {
        let buffer_bytes = buffer_bytes_per_thread(buffers_bytes, cpus.len());
        (0..effort.repeats).map(|_| page_bandwidth_once(cpus, buffer_bytes, passes, copy)).collect()
    })
}

/// `hot_line_rmw_ns`: n CPUs each doing atomic adds to one shared counter, as a zone
/// counter fold, an rwsem's count or a refcount does.
pub fn hot_line_rmw(order: &[usize], effort: &Effort) -> Result<Curve, String> {
    let method = format!(
        "n threads pinned to n CPUs, each doing M fetch_add (lock xadd) on one shared AtomicU64 alone on \
         a 128-byte aligned line, all released by one barrier, M set per point by a probe run so that a \
         run takes about {} ms; wall time from the release to the last thread's end / M",
        effort.times(POINT_NS) / 1_000_000
    );
    CurveMethod { unit: "ns", method }.measure(order, 1, |cpus| {
        let probe = per_thread(effort.times(HOT_LINE_PROBE_RMWS), cpus.len());
        sized_samples(effort, probe, |rmws| {
            let line = Padded(AtomicU64::new(0));
            let work = |_, _: &mut ()| {
                for _ in 0..rmws {
                    line.0.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            };
            Ok(released_together(cpus, "hot-line", |_| Ok(()), work)?.0 * 1e9)
        })
    })
}

/// `futex_lock_handover_ns`: n CPUs taking turns at one futex-based lock (std's Mutex,
/// which spins a little, then queues in the kernel), each holding it for an increment.
pub fn futex_lock_handover(order: &[usize], effort: &Effort) -> Result<Curve, String> {
    let method = format!(
        "n threads pinned to n CPUs, each locking one std::sync::Mutex<u64> (futex-based), incrementing it \
         and unlocking, M times, all released by one barrier, M set per point by a probe run so that a \
         run takes about {} ms; wall time from the release to the last thread's end / (n x M)",
        effort.times(POINT_NS) / 1_000_000
    );
    CurveMethod { unit: "ns", method }.measure(order, 1, |cpus| {
        let probe = per_thread(effort.times(LOCK_PROBE_ACQUISITIONS), cpus.len());
        let per_thread_ns = sized_samples(effort, probe, |acquisitions| {
            let lock = Mutex::new(0u64);
            let work = |_, _: &mut ()| {
                for _ in 0..acquisitions {
                    *lock.lock().map_err(|_| "a lock holder panicked".to_string())? += 1;
                }
                Ok(())
            };
            Ok(released_together(cpus, "futex-lock", |_| Ok(()), work)?.0 * 1e9)
        })?;
        Ok(per_thread_ns.into_iter().map(|ns| ns / cpus.len() as f64).collect())
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::curve_points::ops_for_point;
    use super::*;

    fn place(cpu: usize, package: u32, core: u32) -> CpuPlace {
        CpuPlace { cpu, package, core }
    }

    #[test]
    fn cpus_spread_over_the_first_package_cores_then_the_others_then_siblings() {
        // Two packages of two cores with SMT, siblings numbered after every first thread.
        let apart = [place(0, 0, 0), place(1, 0, 1), place(2, 1, 0), place(3, 1, 1), place(4, 0, 0), place(5, 0, 1)];
        assert_eq!(spreading_order(&apart), [0, 1, 2, 3, 4, 5]);
        // Siblings numbered next to each other, and a package listed first that is not 0.
        let adjacent = [
            place(0, 1, 0),
            place(1, 1, 0),
            place(2, 1, 4),
            place(3, 1, 4),
            place(4, 0, 0),
            place(5, 0, 0),
            place(6, 0, 4),
            place(7, 0, 4),
        ];
        assert_eq!(spreading_order(&adjacent), [0, 2, 4, 6, 1, 3, 5, 7]);
        // Three packages: the first CPU's package, then the others by id.
        let three = [place(0, 2, 0), place(1, 0, 0), place(2, 1, 0), place(3, 2, 1)];
        assert_eq!(spreading_order(&three), [0, 3, 1, 2]);
        assert!(spreading_order(&[]).is_empty());
    }

    #[test]
    fn bandwidth_buffers_are_four_llcs_split_evenly_and_4_mib_each_at_least() {
        assert_eq!(bandwidth_buffers_bytes(32 << 20), 256 << 20);
        assert_eq!(bandwidth_buffers_bytes(256 << 20), 1 << 30);
        assert_eq!(buffer_bytes_per_thread(256 << 20, 1), 256 << 20);
        assert_eq!(buffer_bytes_per_thread(256 << 20, 3), 89_477_120, "whole pages");
        assert_eq!(buffer_bytes_per_thread(256 << 20, 128), 4 << 20);
        assert_eq!(buffer_bytes_per_thread(256 << 20, 768), 4 << 20);
        assert_eq!(per_thread(10, 4), 2);
        assert_eq!(per_thread(10, 768), 1);
    }

    #[test]
    fn a_probe_sizes_a_point_to_its_run_time() {
        let full = Effort { repeats: 5, scale: 1 };
        // 1,000 operations in 1 ms: 1 us each, 100,000 for 100 ms.
        assert_eq!(ops_for_point(&full, 1_000, 1e6), 100_000);
        let quick = Effort { repeats: 5, scale: 10 };
        assert_eq!(ops_for_point(&quick, 1_000, 1e6), 10_000);
        // A probe slower than the run itself still runs one operation.
        assert_eq!(ops_for_point(&full, 1, 1e12), 1);
        assert_eq!(ops_for_point(&full, 0, 0.0), 100_000_000);
    }

    /// The host's first CPUs of the order this process may run on, two at most.
    pub fn test_cpus() -> Vec<usize> {
        let allowed = crate::pinning::allowed_cpus();
        let host = crate::machine::host::read_host().unwrap();
        let order: Vec<usize> = spreading_order(&host.cpus).into_iter().filter(|cpu| allowed.contains(cpu)).collect();
        order.into_iter().take(2).collect()
    }

    pub fn check_curve(curve: &Curve, first_cpus: u32, cpus: usize, positive: bool) {
        let expected: Vec<u32> =
            Curve::cpu_series(cpus as u32).into_iter().filter(|&count| count >= first_cpus).collect();
        let measured: Vec<u32> = curve.points.iter().map(|point| point.cpus).collect();
        assert_eq!(measured, expected, "{curve:?}");
        for point in &curve.points {
            assert!(point.value.is_finite() && point.min <= point.value && point.value <= point.max, "{curve:?}");
            assert!(if positive { point.value > 0.0 } else { point.value >= 0.0 }, "{curve:?}");
        }
    }

    #[test]
    fn the_bandwidth_hot_line_and_lock_curves_run() {
        let cpus = test_cpus();
        let effort = Effort { repeats: 1, scale: 1000 };
        check_curve(&page_bandwidth(&cpus, 8 << 20, false, &effort).unwrap(), 1, cpus.len(), true);
        check_curve(&page_bandwidth(&cpus, 8 << 20, true, &effort).unwrap(), 1, cpus.len(), true);
        check_curve(&hot_line_rmw(&cpus, &effort).unwrap(), 1, cpus.len(), true);
        check_curve(&futex_lock_handover(&cpus, &effort).unwrap(), 1, cpus.len(), true);
        check_curve(&read_mostly_miss(&cpus, &effort).unwrap(), 2, cpus.len(), false);
    }
}
