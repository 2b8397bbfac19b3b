//! The hardware constants: a cache line's transfer between two CPUs (ping-pong), an
//! uncontended atomic read-modify-write, the last-level cache's and DRAM's load-to-use
//! latency (a dependent pointer chase), and zeroing and copying a 4 KiB page.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::machine::profile::Measurement;
use crate::pinning::pin_to_cpu_id;

const PAGE_BYTES: usize = 4096;
const LINE_BYTES: usize = 64;

/// A counter alone on its cache lines (two, against the adjacent-line prefetcher).
#[repr(align(128))]
struct Line(AtomicU64);

/// One-way transfer of a cache line between CPUs `a` and `b`, ns: two pinned threads take
/// turns incrementing one counter (each waits for the other's value), so every turn moves
/// the line once; the time per turn is the transfer plus an atomic RMW on a line held.
fn ping_pong_once(a: usize, b: usize, turns: u64) -> Result<f64, String> {
    let line = Line(AtomicU64::new(0));
    let elapsed = std::thread::scope(|scope| -> Result<f64, String> {
        let partner = scope.spawn(|| -> Result<(), String> {
            pin_to_cpu_id(b)?;
            for turn in 0..turns {
                let mine = 2 * turn + 1;
                while line.0.load(Ordering::Acquire) != mine - 1 {
                    std::hint::spin_loop();
                }
                line.0.store(mine, Ordering::Release);
            }
            Ok(())
        });
        pin_to_cpu_id(a)?;
        let start = Instant::now();
        for turn in 0..turns {
            let theirs = 2 * turn + 1;
            while line.0.load(Ordering::Acquire) != theirs {
                std::hint::spin_loop();
            }
            line.0.store(theirs + 1, Ordering::Release);
        }
        let elapsed = start.elapsed();
        partner.join().map_err(|_| "ping-pong partner panicked".to_string())??;
        Ok(elapsed.as_nanos() as f64)
    })?;
    Ok(elapsed / (2 * turns) as f64)
}

pub fn ping_pong(a: usize, b: usize, turns: u64, repeats: usize, what: &str) -> Result<Measurement, String> {
    let samples = (0..repeats).map(|_| ping_pong_once(a, b, turns)).collect::<Result<Vec<_>, _>>()?;
    let method = format!(
        "ping-pong between CPUs {a} and {b} ({what}): two pinned threads alternately store to one \
         counter line, {turns} round trips; time / (2 x round trips)"
    );
    Ok(Measurement::from_samples(samples, "ns", &method))
}

/// An uncontended atomic read-modify-write on a line this CPU holds, ns (dependent
/// fetch_adds, so each waits for the last: the latency, not the throughput).
pub fn atomic_rmw(operations: u64, repeats: usize) -> Measurement {
    let samples = (0..repeats)
        .map(|_| {
            let line = Line(AtomicU64::new(0));
            let start = Instant::now();
            let mut value = 0;
            for _ in 0..operations {
                value = line.0.fetch_add(value & 1 | 1, Ordering::AcqRel);
            }
            black_box(value);
            start.elapsed().as_nanos() as f64 / operations as f64
        })
        .collect();
    let method =
        format!("{operations} dependent fetch_add (lock xadd) on one line held by this CPU; time / operations");
    Measurement::from_samples(samples, "ns", &method)
}

/// A per-CPU counter update as the kernel's vmstat and NUMA event counters make it
/// (`__this_cpu_inc` of a CPU-local diff, compared with the threshold): a load, an add, a
/// compare and a store on a line this CPU holds, ns. Dependent, like the counter updates of
/// one allocation, which share their pageset's line.
pub fn percpu_counter_update(updates: u64, repeats: usize) -> Measurement {
    const THRESHOLD: i16 = 125;
    let samples = (0..repeats)
        .map(|_| {
            let mut diffs = [0i16; 8];
            let mut folded = 0i64;
            let start = Instant::now();
            for update in 0..updates {
                let slot = &mut black_box(&mut diffs)[(update & 7) as usize];
                *slot += 1;
                if *slot > THRESHOLD {
                    folded += i64::from(*slot);
                    *slot = 0;
                }
            }
            black_box((diffs, folded));
            start.elapsed().as_nanos() as f64 / updates as f64
        })
        .collect();
    let method = format!(
        "{updates} increments of 8 CPU-local i16 diffs in turn, each compared with a threshold of \
         {THRESHOLD} and folded past it; time / increments"
    );
    Measurement::from_samples(samples, "ns", &method)
}

/// A random cyclic permutation of `lines` cache lines (Sattolo's algorithm, a fixed seed):
/// entry i holds the index of the line to load after line i.
fn chase_ring(lines: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lines).collect();
    let mut rng = crate::rng::SplitMix64::new(0x9e37_79b9_7f4a_7c15);
    for i in (1..lines).rev() {
        let j = rng.below(i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0usize; lines * (LINE_BYTES / std::mem::size_of::<usize>())];
    let stride = LINE_BYTES / std::mem::size_of::<usize>();
    for pair in 0..lines {
        next[order[pair] * stride] = order[(pair + 1) % lines] * stride;
    }
    next
}

/// Load-to-use latency over a buffer of `bytes`, ns: a dependent chase through its lines in
/// random order, so neither the prefetchers nor out-of-order execution hide a miss.
pub fn pointer_chase(bytes: usize, loads: u64, repeats: usize, what: &str) -> Measurement {
    let ring = chase_ring((bytes / LINE_BYTES).max(2));
    let samples = (0..repeats)
        .map(|_| {
            let mut at = 0usize;
            // One lap to warm the caches (and the TLB) the buffer fits in.
            for _ in 0..ring.len() / 8 {
                at = ring[at];
            }
            let start = Instant::now();
            for _ in 0..loads {
                at = ring[at];
            }
            black_box(at);
            start.elapsed().as_nanos() as f64 / loads as f64
        })
        .collect();
    let method = format!(
        "dependent loads through a {} KiB buffer's 64-byte lines in a random cycle ({what}); time / loads",
        bytes >> 10
    );
    Measurement::from_samples(samples, "ns", &method)
}

/// Zeroing, or copying, one 4 KiB page on one core, ns: every page of a buffer in turn,
/// over and over (at least 128 MiB of pages per repeat). A buffer larger than the last-level
/// cache times pages the kernel has not touched; one that fits the L2 or the LLC, pages
/// still there.
pub fn page_bandwidth(buffer_bytes: usize, repeats: usize, copy: bool) -> Measurement {
    let pages = (buffer_bytes / PAGE_BYTES).max(1);
    let passes = ((128 << 20) / (pages * PAGE_BYTES)).max(1);
    let mut source = vec![1u8; pages * PAGE_BYTES];
    let mut target = vec![2u8; pages * PAGE_BYTES];
    let samples = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..passes {
                zero_or_copy_pages(&source, &mut target, copy);
            }
            black_box(&mut source);
            start.elapsed().as_nanos() as f64 / (pages * passes) as f64
        })
        .collect();
    let what = if copy { "copy" } else { "zero" };
    let method = format!(
        "{what} each 4 KiB page of a {} KiB buffer in turn, {passes} passes, one core; time / pages",
        buffer_bytes >> 10
    );
    Measurement::from_samples(samples, "ns", &method)
}

/// One pass over `target`'s pages: each zeroed as clear_page does, or copied from the same
/// page of `source` as copy_page does.
pub(super) fn zero_or_copy_pages(source: &[u8], target: &mut [u8], copy: bool) {
    for (page, target_page) in target.chunks_exact_mut(PAGE_BYTES).enumerate() {
        if copy {
            target_page.copy_from_slice(&source[page * PAGE_BYTES..(page + 1) * PAGE_BYTES]);
        } else {
            target_page.fill(0);
        }
    }
    black_box(target);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_ring_is_one_cycle_through_every_line() {
        let ring = chase_ring(1000);
        let stride = LINE_BYTES / std::mem::size_of::<usize>();
        let (mut at, mut seen) = (0usize, std::collections::HashSet::new());
        for _ in 0..1000 {
            assert!(seen.insert(at), "line {} seen twice", at / stride);
            at = ring[at];
        }
        assert_eq!(at, 0, "back at the start after every line");
    }

    #[test]
    fn small_measurements_give_positive_finite_values() {
        let rmw = atomic_rmw(10_000, 3);
        assert!(rmw.value > 0.0 && rmw.value < 1_000.0, "{rmw:?}");
        let chase = pointer_chase(64 << 10, 10_000, 3, "test");
        assert!(chase.value > 0.0 && chase.value < 1_000.0, "{chase:?}");
        let zero = page_bandwidth(1 << 20, 2, false);
        assert!(zero.value > 0.0, "{zero:?}");
    }
}
