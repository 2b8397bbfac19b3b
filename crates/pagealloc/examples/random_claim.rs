//! What a random free must pay before any allocator logic: one atomic claim of a frame's
//! metadata, the frames taken in the random order of `pagelab bench rand`. Five layouts:
//! - a 12-byte record per frame (two list links and the state word, as `pagealloc`'s frame
//!   table lays them out), the claim a compare-exchange on the state word;
//! - the state word alone, 4 bytes a frame in an array of its own (the links elsewhere);
//! - the same, and the frame's two links written in their own array, as a pageset push
//!   writes them;
//! - a state byte a frame (state and order), in an array of its own;
//! - one bit per frame (as LLFree's bitfields), the claim a fetch-and of the bit.
//!
//! `cargo run --release --example random_claim -p pagealloc -- [memory GiB] [threads]
//! [threads-max] [serial]` (default 4, 1 and `threads`). With `serial` each claim waits
//! for the one before (its latency, as a free pays it); without, claims overlap their
//! misses (throughput). As in `pagelab bench rand` (and LLFree's
//! own), each thread claims `frames / threads-max / 2` frames, all threads' frames shuffled
//! together; the tables are backed by huge pages where THP allows, as the lab's are. It
//! prints ns per claim for each layout.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::Instant;

const ALLOCATED: u32 = 1;
const FREED: u32 = 2;

/// A frame's metadata as `pagealloc` lays it out: 12 bytes, the state word last.
struct Record {
    _next: AtomicU32,
    _prev: AtomicU32,
    info: AtomicU32,
}

/// Asks for transparent huge pages on a large table (only a hint).
fn advise_huge<T>(table: &[T]) {
    let (start, bytes) = (table.as_ptr() as usize, std::mem::size_of_val(table));
    let aligned = start.next_multiple_of(2 << 20);
    if start + bytes > aligned + (2 << 20) {
        // SAFETY: the range lies inside `table`, which this process owns; MADV_HUGEPAGE changes
        // how the kernel backs it, never its contents.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                (start + bytes - aligned) & !((2 << 20) - 1),
                libc::MADV_HUGEPAGE,
            )
        };
    }
}

fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain data, zero is the empty set, and CPU_SET writes within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Runs `claim` over each thread's share on pinned threads released together; ns per claim.
/// With `serial`, each claim's frame waits on the previous claim's outcome (an index it
/// cannot compute before), so claims cannot overlap their misses, as a free's do not.
fn timed(shares: &[Vec<u32>], serial: bool, claim: impl Fn(u32) -> bool + Sync) -> f64 {
    let barrier = Barrier::new(shares.len());
    let per_thread: Vec<f64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (shares.iter().enumerate())
            .map(|(cpu, share)| {
                let (barrier, claim) = (&barrier, &claim);
                scope.spawn(move || {
                    pin(cpu);
                    barrier.wait();
                    let start = Instant::now();
                    let claimed = if serial {
                        // Zero, but not to the compiler: the next index depends on this claim.
                        let mask = std::hint::black_box(0u32);
                        let mut outcome = 0u32;
                        share
                            .iter()
                            .filter(|&&frame| {
                                let claimed = claim(frame | (outcome & mask));
                                outcome = u32::from(claimed);
                                claimed
                            })
                            .count()
                    } else {
                        share.iter().filter(|&&frame| claim(frame)).count()
                    };
                    assert_eq!(claimed, share.len(), "every frame is claimed once");
                    start.elapsed().as_nanos() as f64 / share.len() as f64
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().unwrap()).collect()
    });
    per_thread.iter().sum::<f64>() / per_thread.len() as f64
}

fn main() {
    let gib: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let threads: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let threads_max: usize = std::env::args().nth(3).and_then(|a| a.parse().ok()).unwrap_or(threads);
    let serial = std::env::args().nth(4).is_some_and(|a| a == "serial");
    let frames = (gib << 18) as usize;
    let claims = frames / threads_max / 2 * threads;
    let records: Vec<Record> = (0..frames)
        .map(|_| Record { _next: AtomicU32::new(0), _prev: AtomicU32::new(0), info: AtomicU32::new(ALLOCATED) })
        .collect();
    let words: Vec<AtomicU32> = (0..frames).map(|_| AtomicU32::new(ALLOCATED)).collect();
    let words2: Vec<AtomicU32> = (0..frames).map(|_| AtomicU32::new(ALLOCATED)).collect();
    let bytes: Vec<AtomicU8> = (0..frames).map(|_| AtomicU8::new(ALLOCATED as u8)).collect();
    let links: Vec<[AtomicU32; 2]> = (0..frames).map(|_| [AtomicU32::new(0), AtomicU32::new(0)]).collect();
    let bits: Vec<AtomicU64> = (0..frames / 64).map(|_| AtomicU64::new(u64::MAX)).collect();
    advise_huge(&records);
    advise_huge(&words);
    advise_huge(&words2);
    advise_huge(&bytes);
    advise_huge(&links);
    advise_huge(&bits);

    // The claimed frames, shuffled (SplitMix64, as the bench), split between the threads.
    let mut order: Vec<u32> = (0..claims as u32).collect();
    let mut state = 42u64;
    for i in (1..order.len()).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        order.swap(i, ((z ^ (z >> 31)) % (i as u64 + 1)) as usize);
    }
    let shares: Vec<Vec<u32>> = order.chunks(order.len().div_ceil(threads)).map(<[u32]>::to_vec).collect();

    let record_ns = timed(&shares, serial, |frame| {
        let info = &records[frame as usize].info;
        info.compare_exchange(ALLOCATED, FREED, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    });
    let word_ns = timed(&shares, serial, |frame| {
        let info = &words[frame as usize];
        info.compare_exchange(ALLOCATED, FREED, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    });
    // The state word apart, and the frame's list links, in an array of their own, written
    // as a pageset push writes them.
    let split_ns = timed(&shares, serial, |frame| {
        let claimed =
            words2[frame as usize].compare_exchange(ALLOCATED, FREED, Ordering::AcqRel, Ordering::Relaxed).is_ok();
        links[frame as usize][0].store(frame, Ordering::Relaxed);
        links[frame as usize][1].store(frame, Ordering::Relaxed);
        claimed
    });
    let byte_ns = timed(&shares, serial, |frame| {
        let state = &bytes[frame as usize];
        state.compare_exchange(ALLOCATED as u8, FREED as u8, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    });
    let bit_ns = timed(&shares, serial, |frame| {
        let mask = 1u64 << (frame % 64);
        bits[frame as usize / 64].fetch_and(!mask, Ordering::AcqRel) & mask != 0
    });
    println!(
        "{gib} GiB, {threads} thread(s), {} random claims{}: 12-byte record {record_ns:.1} ns, \
         4-byte word {word_ns:.1} ns, 4-byte word and its links written apart {split_ns:.1} ns, \
         one byte {byte_ns:.1} ns, one bit {bit_ns:.1} ns",
        order.len(),
        if serial { " one after another" } else { "" }
    );
}
