//! Page data handed between two cores, as a socket message's pages are: one core writes a
//! buffer of pages the other read last, the other reads them back, in turns. Each side's
//! time per page is what a page costs when another core's L2 holds it: written over (its
//! lines invalidated there) or read (its lines fetched from there). A profile keeps it in
//! line transfers, over the same pair's ping-pong measured in the same run: a page is its
//! lines moved core to core, some at once, so the unit carries to a part whose transfer
//! alone is published.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use crate::machine::profile::Measurement;
use crate::pinning::pin_to_cpu_id;

const PAGE_BYTES: usize = 4096;
/// Pages per turn: a 64 KiB message's, well inside either core's L2.
const TURN_PAGES: usize = 16;

/// One run: `turns` turns each way; (writer's, reader's) ns per page.
fn handoff_once(writer_cpu: usize, reader_cpu: usize, turns: u64) -> Result<(f64, f64), String> {
    let shared = std::sync::Mutex::new(vec![0u8; TURN_PAGES * PAGE_BYTES]);
    let turn = AtomicU32::new(0);
    let (write_ns, read_ns) = std::thread::scope(|scope| -> Result<(u128, u128), String> {
        let reader = scope.spawn(|| -> Result<u128, String> {
            pin_to_cpu_id(reader_cpu)?;
            let mut mine = vec![0u8; TURN_PAGES * PAGE_BYTES];
            let mut spent_ns = 0;
            for _ in 0..turns {
                while turn.load(Ordering::Acquire) != 1 {
                    std::hint::spin_loop();
                }
                let start = Instant::now();
                mine.copy_from_slice(&shared.lock().map_err(|_| "poisoned")?);
                black_box(&mut mine);
                spent_ns += start.elapsed().as_nanos();
                turn.store(0, Ordering::Release);
            }
            Ok(spent_ns)
        });
        pin_to_cpu_id(writer_cpu)?;
        let source = vec![1u8; TURN_PAGES * PAGE_BYTES];
        let mut spent_ns = 0;
        for _ in 0..turns {
            while turn.load(Ordering::Acquire) != 0 {
                std::hint::spin_loop();
            }
            let start = Instant::now();
            shared.lock().map_err(|_| "poisoned")?.copy_from_slice(black_box(&source));
            spent_ns += start.elapsed().as_nanos();
            turn.store(1, Ordering::Release);
        }
        let read_ns = reader.join().map_err(|_| "the reading thread panicked".to_string())??;
        Ok((spent_ns, read_ns))
    })?;
    let pages = (turns * TURN_PAGES as u64) as f64;
    Ok((write_ns as f64 / pages, read_ns as f64 / pages))
}

/// Writing, and reading, a page another core's L2 holds, ns per page: (write, read).
pub fn page_handoff(a: usize, b: usize, turns: u64, repeats: usize) -> Result<(Measurement, Measurement), String> {
    let mut writes = Vec::with_capacity(repeats);
    let mut reads = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let (write, read) = handoff_once(a, b, turns)?;
        writes.push(write);
        reads.push(read);
    }
    let method = |side: &str| {
        format!(
            "CPUs {a} and {b} take turns over {TURN_PAGES} pages ({} KiB): {a} copies into them what \
             {b} read last, {b} copies them out; {turns} turns; the {side}'s time / pages",
            (TURN_PAGES * PAGE_BYTES) >> 10
        )
    };
    Ok((
        Measurement::from_samples(writes, "ns", &method("writer")),
        Measurement::from_samples(reads, "ns", &method("reader")),
    ))
}

/// A page handoff's cost in line transfers: each repeat's time over `transfer`'s median,
/// both measured in this run between the same two CPUs.
pub fn in_line_transfers(handoff: &Measurement, transfer: &Measurement) -> Measurement {
    let per_line = |ns: f64| ns / transfer.value.max(f64::MIN_POSITIVE);
    Measurement {
        value: per_line(handoff.value),
        unit: "line transfers".into(),
        method: format!(
            "{}; over the same CPUs' ping-pong in this run ({:.1} ns per transfer)",
            handoff.method, transfer.value
        ),
        repeats: handoff.repeats,
        min: per_line(handoff.min),
        max: per_line(handoff.max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handoff_gives_positive_costs_per_page() {
        let cpus = crate::pinning::allowed_cpus();
        let (a, b) = (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]));
        let (write, read) = page_handoff(a, b, 50, 2).unwrap();
        assert!(write.value > 0.0 && read.value > 0.0, "{write:?} {read:?}");
        let transfer = Measurement::from_samples(vec![50.0], "ns", "test");
        let lines = in_line_transfers(&Measurement::from_samples(vec![400.0, 500.0, 600.0], "ns", "t"), &transfer);
        assert_eq!((lines.value, lines.min, lines.max, lines.unit.as_str()), (10.0, 8.0, 12.0, "line transfers"));
    }
}
