//! The address space's shared costs: TLB shootdowns (munmap and mprotect of a page in a
//! process whose other threads run on other CPUs, so the kernel's flush_tlb_mm_range sends
//! them an IPI), to the caller and to each target, and the mm's mmap_lock taken for writing
//! by mmap and munmap on several CPUs at once.

use std::time::Duration;

use super::curve_points::{ops_for_point, per_thread, point, sized_samples, CurveMethod, POINT_NS};
use super::lost_time::{Slices, Spinners, SLICES};
use super::pinned::released_together;
use super::Effort;
use crate::machine::profile::Curve;

const PAGE_BYTES: usize = 4096;
/// Rounds of the caller's loop in the probe that sizes a point, at full effort.
const SHOOTDOWN_PROBE_ROUNDS: u64 = 1_000;
/// mmap and munmap pairs over all threads in the probe that sizes a point, at full effort.
const MMAP_PROBE_PAIRS: u64 = 10_000;

/// One anonymous private page, readable and writable whenever no method of its own runs;
/// unmapped when dropped.
struct AnonPage(*mut u8);

impl AnonPage {
    fn map() -> Result<AnonPage, String> {
        // SAFETY: a fresh anonymous mapping at an address the kernel picks; nothing else
        // refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!("mmap of a page: {}", std::io::Error::last_os_error()));
        }
        Ok(AnonPage(base.cast()))
    }

    /// Writes its first byte (the first write faults the page in).
    fn touch(&self) {
        // SAFETY: inside the mapping, which is writable outside `protect_round`.
        unsafe { self.0.write_volatile(1) };
    }

    fn protect(&self, prot: libc::c_int) -> Result<(), String> {
        // SAFETY: changes the protection of exactly this mapping, which only this value
        // refers to.
        if unsafe { libc::mprotect(self.0.cast(), PAGE_BYTES, prot) } != 0 {
            return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Read-only, writable again, and written.
    fn protect_round(&self) -> Result<(), String> {
        self.protect(libc::PROT_READ)?;
        self.protect(libc::PROT_READ | libc::PROT_WRITE)?;
        self.touch();
        Ok(())
    }
}

impl Drop for AnonPage {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`, which nothing refers to after
        // this value.
        unsafe { libc::munmap(self.0.cast(), PAGE_BYTES) };
    }
}

/// What the caller's loop does per round.
#[derive(Clone, Copy)]
enum Round {
    /// mmap a page, write it, munmap it: the unmap flushes the page from every CPU
    /// running the mm.
    MapWriteUnmap,
    /// mprotect a written page read-only (a flush), then writable again, and write it.
    Protect,
}

/// Runs `rounds` of `round` (on `page`, for mprotect) while `spinners` count on the other
/// CPUs: with `quiet`, in [`SLICES`] slices each after a sleep of a slice of `quiet` (the
/// targets' baseline). The caller's ns per round, and what each target lost per round,
/// averaged over the targets (0 without `quiet` or targets).
fn caller_loop(
    spinners: &Spinners,
    page: Option<&AnonPage>,
    rounds: u64,
    quiet: Option<Duration>,
) -> Result<(f64, f64), String> {
    let _stop = spinners.stop_on_drop();
    spinners.wait_until_running();
    let slices = if quiet.is_some() { SLICES } else { 1 };
    let mut totals = Slices::new(spinners.len());
    let mut done = 0u64;
    for slice in 1..=u64::from(slices) {
        let quiet_start = spinners.snapshot();
        std::thread::sleep(quiet.unwrap_or_default() / slices);
        let rounds_start = spinners.snapshot();
        let slice_end = rounds * slice / u64::from(slices);
        for _ in done..slice_end {
            match page {
                Some(page) => page.protect_round()?,
                None => AnonPage::map()?.touch(),
            }
        }
        done = slice_end;
        let end = spinners.snapshot();
        totals.add(&quiet_start, &rounds_start, false);
        totals.add(&rounds_start, &end, true);
    }
    let lost_ns = if quiet.is_some() { totals.mean_lost_ns_per_event(rounds)? } else { 0.0 };
    Ok((totals.eventful_ns() / rounds as f64, lost_ns))
}

/// A caller on `cpus[0]` running `rounds` of `round` while a thread on each other CPU of
/// `cpus` runs a counting loop in the same process ([`caller_loop`]'s two figures).
fn shootdown_once(cpus: &[usize], round: Round, rounds: u64, quiet: Option<Duration>) -> Result<(f64, f64), String> {
    let spinners = Spinners::new(cpus.len() - 1);
    let (_, mut results) = released_together(
        cpus,
        "tlb-shootdown",
        |index| match round {
            Round::Protect if index == 0 => AnonPage::map().map(|page| {
                page.touch();
                Some(page)
            }),
            _ => Ok(None),
        },
        |index, page| {
            if index > 0 {
                spinners.count(index - 1);
                return Ok(None);
            }
            caller_loop(&spinners, page.as_ref(), rounds, quiet).map(Some)
        },
    )?;
    results.swap_remove(0).ok_or_else(|| "tlb-shootdown: the caller returned nothing".to_string())
}

/// The setup both shootdown curves share, for their methods.
fn setup(effort: &Effort) -> String {
    format!(
        "a caller thread pinned to one CPU and K more threads of its process pinned to K other CPUs, each \
         spinning in a counting loop (so the mm runs there); the caller's rounds set per point by a probe \
         run so that the loop takes about {} ms",
        effort.times(POINT_NS) / 1_000_000
    )
}

/// Rounds of `round` on `cpus` that make the caller's loop take about a point's run time.
fn rounds_for_point(cpus: &[usize], round: Round, effort: &Effort) -> Result<u64, String> {
    let probe = effort.times(SHOOTDOWN_PROBE_ROUNDS);
    let (caller_ns, _) = shootdown_once(cpus, round, probe, None)?;
    Ok(ops_for_point(effort, probe, caller_ns * probe as f64))
}

/// `tlb_shootdown_caller_ns` and `tlb_shootdown_target_ns`: mmap, write and munmap of one
/// page by a caller whose process runs on K other CPUs, at cpus = K + 1 in the CPU series
/// (the target curve from K = 1).
pub fn munmap_shootdowns(order: &[usize], effort: &Effort) -> Result<(Curve, Curve), String> {
    let quiet = Duration::from_millis(effort.times(50));
    let caller = CurveMethod {
        unit: "ns",
        method: format!(
            "{}: mmap one anonymous 4 KiB page, write it, munmap it; at cpus = K + 1, time / rounds",
            setup(effort)
        ),
    };
    let target = CurveMethod {
        unit: "ns",
        method: format!(
            "{}: mmap one anonymous 4 KiB page, write it, munmap it; at cpus = K + 1 (K >= 1), per target \
             (1 - its iterations per second while the caller loops / the same while the caller sleeps) x \
             the loop's time / rounds, averaged over the targets; the caller alternates {SLICES} sleeps, \
             {} ms in all, with {SLICES} slices of its loop",
            setup(effort),
            quiet.as_millis()
        ),
    };
    let (mut caller_points, mut target_points) = (Vec::new(), Vec::new());
    for cpus in Curve::cpu_series(order.len() as u32) {
        let on = &order[..cpus as usize];
        let rounds = rounds_for_point(on, Round::MapWriteUnmap, effort)?;
        let samples = (0..effort.repeats)
            .map(|_| shootdown_once(on, Round::MapWriteUnmap, rounds, Some(quiet)))
            .collect::<Result<Vec<_>, _>>()?;
        caller_points.push(point(cpus, samples.iter().map(|sample| sample.0).collect(), &caller));
        if cpus >= 2 {
            target_points.push(point(cpus, samples.iter().map(|sample| sample.1).collect(), &target));
        }
    }
    Ok((caller.with_points(caller_points), target.with_points(target_points)))
}

/// `tlb_shootdown_mprotect_ns`: mprotect of one written page read-only and back by a caller
/// whose process runs on K other CPUs, at cpus = K + 1.
pub fn mprotect_shootdowns(order: &[usize], effort: &Effort) -> Result<Curve, String> {
    let method = format!(
        "{}: on one written anonymous 4 KiB page, mprotect(PROT_READ), mprotect(PROT_READ | PROT_WRITE), \
         write it; at cpus = K + 1, time / rounds",
        setup(effort)
    );
    CurveMethod { unit: "ns", method }.measure(order, 1, |on| {
        let rounds = rounds_for_point(on, Round::Protect, effort)?;
        (0..effort.repeats).map(|_| shootdown_once(on, Round::Protect, rounds, None).map(|sample| sample.0)).collect()
    })
}

/// `mmap_lock_pair_ns`: n threads of one process each mapping and unmapping a page, never
/// touched: both take the mm's mmap_lock for writing.
pub fn mmap_lock_pair(order: &[usize], effort: &Effort) -> Result<Curve, String> {
    let method = format!(
        "n threads of one process pinned to n CPUs, each doing M pairs of mmap of one anonymous 4 KiB \
         page and its munmap, untouched, all released by one barrier, M set per point by a probe run so \
         that a run takes about {} ms; wall time from the release to the last thread's end / M",
        effort.times(POINT_NS) / 1_000_000
    );
    CurveMethod { unit: "ns", method }.measure(order, 1, |cpus| {
        let probe = per_thread(effort.times(MMAP_PROBE_PAIRS), cpus.len());
        sized_samples(effort, probe, |pairs| {
            let work = |_, _: &mut ()| (0..pairs).try_for_each(|_| AnonPage::map().map(drop));
            Ok(released_together(cpus, "mmap-lock", |_| Ok(()), work)?.0 * 1e9)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::curves::tests::{check_curve, test_cpus};
    use super::*;

    #[test]
    fn the_shootdown_and_mmap_lock_curves_run() {
        let cpus = test_cpus();
        let effort = Effort { repeats: 1, scale: 1000 };
        let (caller, target) = munmap_shootdowns(&cpus, &effort).unwrap();
        check_curve(&caller, 1, cpus.len(), true);
        check_curve(&target, 2, cpus.len(), false);
        check_curve(&mprotect_shootdowns(&cpus, &effort).unwrap(), 1, cpus.len(), true);
        check_curve(&mmap_lock_pair(&cpus, &effort).unwrap(), 1, cpus.len(), true);
    }

    #[test]
    fn a_page_survives_protect_rounds() {
        let page = AnonPage::map().unwrap();
        page.touch();
        for _ in 0..3 {
            page.protect_round().unwrap();
        }
    }
}
