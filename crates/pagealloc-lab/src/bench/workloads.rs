//! The benchmarks themselves (bulk, repeat, rand, frag): each times one iteration on pinned
//! threads released together, against one frame source.

use std::sync::Barrier;
use std::time::Instant;

use super::peers::FrameSource;
use super::results::Iteration;
use crate::rng::SplitMix64;

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    crate::stats::mean(&values.collect::<Vec<f64>>())
}

fn ns_per_op(start: Instant, ops: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / ops.max(1) as f64
}

/// Runs `work(thread_index)` on `threads` pinned threads released together.
fn on_threads<T: Send>(threads: usize, work: impl Fn(usize, &Barrier) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let (work, barrier) = (&work, &barrier);
                scope.spawn(move || {
                    if let Err(error) = crate::pinning::pin_to_cpu(index) {
                        panic!("bench thread {index}: {error}");
                    }
                    work(index, barrier)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("bench thread panicked")).collect()
    })
}

/// Frees `held` last first and empties it: one block per call, popped from the end, or in
/// slices of `free_batch` from the start of a `held` the caller has reversed.
fn put_last_first(source: &dyn FrameSource, held: &mut Vec<u64>, order: u8, free_batch: usize) {
    if free_batch == 1 {
        while let Some(frame) = held.pop() {
            source.put(frame, order);
        }
        return;
    }
    for frames in held.chunks(free_batch) {
        source.put_many(frames, order);
    }
    held.clear();
}

fn take(source: &dyn FrameSource, order: u8) -> u64 {
    source.get(order).unwrap_or_else(|| panic!("{} ran out of memory at order {order}", source.name()))
}

pub(super) fn bulk(source: &dyn FrameSource, threads: usize, blocks: usize, order: u8, free_batch: usize) -> Iteration {
    let rounds = 1usize << order;
    let per_thread = on_threads(threads, |_, barrier| {
        let mut held = Vec::with_capacity(blocks);
        let (mut alloc_ns, mut free_ns) = (0.0, 0.0);
        barrier.wait();
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..blocks {
                held.push(take(source, order));
            }
            alloc_ns += ns_per_op(start, blocks);
            if free_batch > 1 {
                // Last first, as the one-by-one loop pops them, but untimed.
                held.reverse();
            }
            let start = Instant::now();
            put_last_first(source, &mut held, order, free_batch);
            free_ns += ns_per_op(start, blocks);
        }
        (alloc_ns / rounds as f64, free_ns / rounds as f64)
    });
    Iteration {
        alloc_ns: Some(mean(per_thread.iter().map(|r| r.0))),
        free_ns: Some(mean(per_thread.iter().map(|r| r.1))),
        ..Iteration::default()
    }
}

pub(super) fn repeat(source: &dyn FrameSource, threads: usize, blocks: usize, order: u8) -> Iteration {
    let pairs = blocks << order;
    let per_thread = on_threads(threads, |_, barrier| {
        let held: Vec<u64> = (0..blocks).map(|_| take(source, order)).collect();
        barrier.wait();
        let start = Instant::now();
        for _ in 0..pairs {
            let frame = take(source, order);
            source.put(std::hint::black_box(frame), order);
        }
        let pair_ns = ns_per_op(start, pairs);
        barrier.wait();
        for frame in held {
            source.put(frame, order);
        }
        pair_ns
    });
    Iteration { pair_ns: Some(mean(per_thread.into_iter())), ..Iteration::default() }
}

/// Fisher-Yates, drawing from `rng`.
pub(super) fn shuffle<T>(items: &mut [T], rng: &mut SplitMix64) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

/// `items` in `parts` consecutive shares of ceil(len / parts) (the last ones shorter or
/// empty).
pub(super) fn split<T>(items: Vec<T>, parts: usize) -> Vec<Vec<T>> {
    let chunk = items.len().div_ceil(parts.max(1)).max(1);
    let mut items = items.into_iter();
    (0..parts).map(|_| items.by_ref().take(chunk).collect()).collect()
}

pub(super) fn rand(source: &dyn FrameSource, threads: usize, blocks: usize, order: u8, free_batch: usize) -> Iteration {
    let allocated = on_threads(threads, |_, barrier| {
        let mut held = Vec::with_capacity(blocks);
        barrier.wait();
        let start = Instant::now();
        for _ in 0..blocks {
            held.push(take(source, order));
        }
        (ns_per_op(start, blocks), held)
    });
    let alloc_ns = mean(allocated.iter().map(|r| r.0));
    let mut all: Vec<u64> = allocated.into_iter().flat_map(|r| r.1).collect();
    shuffle(&mut all, &mut SplitMix64::new(42));
    let shares = split(all, threads);
    let free_ns = on_threads(threads, |index, barrier| {
        let share = &shares[index];
        barrier.wait();
        let start = Instant::now();
        if free_batch == 1 {
            for &frame in share {
                source.put(frame, order);
            }
        } else {
            for frames in share.chunks(free_batch) {
                source.put_many(frames, order);
            }
        }
        ns_per_op(start, share.len())
    });
    Iteration { alloc_ns: Some(alloc_ns), free_ns: Some(mean(free_ns.into_iter())), ..Iteration::default() }
}

pub(super) fn frag(source: &dyn FrameSource, threads: usize, blocks: usize, rounds: usize, seed: u64) -> Iteration {
    // Everything the allocator will give, on all threads.
    let filled = on_threads(threads, |_, barrier| {
        barrier.wait();
        std::iter::from_fn(|| source.get(0)).collect::<Vec<u64>>()
    });
    let mut all: Vec<u64> = filled.into_iter().flatten().collect();
    // The span the fill covered, from the first 2 MiB boundary.
    let span = (
        all.iter().copied().min().unwrap_or(0) & !((1 << pagealloc::PAGEBLOCK_ORDER) - 1),
        all.iter().copied().max().map_or(0, |last| last + 1),
    );
    let mut rng = SplitMix64::new(seed);
    shuffle(&mut all, &mut rng);
    let keep_from = all.len() / 2;
    for &frame in &all[..keep_from] {
        source.put(frame, 0);
    }
    let mut shares = split(all.split_off(keep_from), threads);
    let churn = (blocks / 10).max(1);
    let mut huge = Vec::with_capacity(rounds);
    let mut pack_moves = Vec::with_capacity(rounds);
    let (mut alloc_total, mut free_total) = (0.0, 0.0);
    for round in 0..rounds {
        let results = on_threads(threads, |index, barrier| {
            let mut held = shares[index].clone();
            let mut rng = SplitMix64::new(seed ^ ((round as u64) << 32) ^ index as u64);
            let (mut alloc_ns, mut free_ns) = (0u128, 0u128);
            barrier.wait();
            for _ in 0..churn {
                if held.is_empty() {
                    break;
                }
                let victim = rng.below(held.len() as u64) as usize;
                let start = Instant::now();
                source.put(held.swap_remove(victim), 0);
                free_ns += start.elapsed().as_nanos();
                let start = Instant::now();
                if let Some(frame) = source.get(0) {
                    held.push(frame);
                }
                alloc_ns += start.elapsed().as_nanos();
            }
            (held, alloc_ns as f64 / churn as f64, free_ns as f64 / churn as f64)
        });
        alloc_total += mean(results.iter().map(|r| r.1));
        free_total += mean(results.iter().map(|r| r.2));
        for (index, result) in results.into_iter().enumerate() {
            shares[index] = result.0;
        }
        huge.push(source.free_huge_pct());
        pack_moves.push(pages_to_pack(&shares, span));
    }
    for frame in shares.into_iter().flatten() {
        source.put(frame, 0);
    }
    Iteration {
        alloc_ns: Some(alloc_total / rounds.max(1) as f64),
        free_ns: Some(free_total / rounds.max(1) as f64),
        free_huge_pct: huge,
        pack_moves,
        ..Iteration::default()
    }
}

/// The fewest pages a compactor must move so that the free frames of the span
/// `[first, end)` (`first` 2 MiB aligned) form whole 2 MiB blocks: with F frames free, the
/// floor(F / 512) blocks holding the fewest held frames are emptied, and their held frames
/// are the moves.
pub(super) fn pages_to_pack(shares: &[Vec<u64>], (first, end): (u64, u64)) -> u64 {
    const BLOCK_FRAMES: u64 = 1 << pagealloc::PAGEBLOCK_ORDER;
    let total_frames = end.saturating_sub(first);
    let blocks = total_frames.div_ceil(BLOCK_FRAMES) as usize;
    let mut held_per_block = vec![0u64; blocks];
    let mut held = 0u64;
    for &frame in shares.iter().flatten() {
        held_per_block[((frame - first) / BLOCK_FRAMES) as usize] += 1;
        held += 1;
    }
    let free_blocks = (total_frames.saturating_sub(held) / BLOCK_FRAMES) as usize;
    held_per_block.sort_unstable();
    held_per_block[..free_blocks.min(blocks)].iter().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_empties_the_least_held_blocks() {
        // Four blocks; 1024 frames held: block 0 full, blocks 1..3 hold 200, 300, 12.
        let mut frames: Vec<u64> = (0..512).collect();
        frames.extend(512..712);
        frames.extend(1024..1324);
        frames.extend(1536..1548);
        // 2048 - 1024 = 1024 free: two blocks can be freed, the ones holding 12 and 200.
        assert_eq!(pages_to_pack(&[frames.clone()], (0, 2048)), 212);
        assert_eq!(pages_to_pack(&[Vec::new()], (0, 2048)), 0);
        let shifted: Vec<u64> = frames.iter().map(|frame| frame + (1 << 20)).collect();
        assert_eq!(pages_to_pack(&[shifted], (1 << 20, (1 << 20) + 2048)), 212);
    }
}
