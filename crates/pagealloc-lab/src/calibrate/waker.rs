//! What a wake-up costs the task that wakes: a write to a stream socket whose reader sleeps
//! on another CPU makes the writer wake it there (on a guest, an interrupt to a halted
//! vCPU goes through the hypervisor), where the same write to a reader that polls does not.
//!
//! Method: a 1-byte AF_UNIX write from CPU `a` to a reader on CPU `b`, which answers on a
//! second pair that the writer polls. Before each write the writer spins long enough for a
//! blocking reader's CPU to go idle. The writer times each write(): its median with the
//! reader blocking in read(), less its median with the reader polling.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::cross_cpu::poll_byte;
use crate::machine::profile::Measurement;
use crate::pinning::pin_to_cpu_id;

/// The writer's pause before each write: the reader's CPU idles this long.
const IDLE: Duration = Duration::from_micros(20);

fn pair(reader_polls: bool) -> Result<(UnixStream, UnixStream), String> {
    let (writer, reader) = UnixStream::pair().map_err(|error| format!("socketpair: {error}"))?;
    reader.set_nonblocking(reader_polls).map_err(|error| format!("O_NONBLOCK: {error}"))?;
    Ok((writer, reader))
}

/// The median ns of the writer's write() over `trips`, the reader blocking or polling.
fn write_median_ns(a: usize, b: usize, trips: usize, reader_polls: bool) -> Result<f64, String> {
    let (mut ping_out, mut ping_in) = pair(reader_polls)?;
    let (mut pong_out, mut pong_in) = pair(true)?;
    // Pinned before the peer starts: an error here leaves no thread waiting.
    pin_to_cpu_id(a)?;
    std::thread::scope(|scope| -> Result<f64, String> {
        // The peer owns its ends: its early return closes them, which ends this side's poll.
        let peer = scope.spawn(move || -> Result<(), String> {
            pin_to_cpu_id(b)?;
            for _ in 0..trips {
                poll_byte(&mut ping_in)?;
                pong_out.write_all(&[2]).map_err(|error| format!("write: {error}"))?;
            }
            Ok(())
        });
        let mut writes_ns = Vec::with_capacity(trips);
        let bounced = (0..trips).try_for_each(|_| -> Result<(), String> {
            let idle_from = Instant::now();
            while idle_from.elapsed() < IDLE {
                std::hint::spin_loop();
            }
            let start = Instant::now();
            ping_out.write_all(&[1]).map_err(|error| format!("write: {error}"))?;
            writes_ns.push(start.elapsed().as_nanos() as f64);
            poll_byte(&mut pong_in)
        });
        drop(ping_out);
        peer.join().map_err(|_| "the peer panicked".to_string())??;
        bounced?;
        Ok(Measurement::from_samples(writes_ns, "ns", "write").value)
    })
}

/// The waker's cost of a cross-CPU wake-up between CPUs `a` and `b`, ns (at least 0), over
/// `repeats` runs of `trips` writes each way.
pub fn waker_cost(a: usize, b: usize, trips: usize, repeats: usize) -> Result<Measurement, String> {
    assert_ne!(a, b, "a cross-CPU wake-up needs two CPUs");
    let samples = (0..repeats)
        .map(|_| {
            let blocking = write_median_ns(a, b, trips, false)?;
            let polling = write_median_ns(a, b, trips, true)?;
            Ok((blocking - polling).max(0.0))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let method = format!(
        "1-byte AF_UNIX write from CPU {a} to a reader on CPU {b}, {} us after the last: the \
         write's median with the reader blocking in read() less its median with the reader \
         polling; {trips} writes each",
        IDLE.as_micros()
    );
    Ok(Measurement::from_samples(samples, "ns", &method))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_costs_the_waker_something_or_nothing_never_less() {
        let cpus = crate::pinning::allowed_cpus();
        if cpus.len() < 2 {
            return;
        }
        let cost = waker_cost(cpus[0], cpus[1], 50, 1).unwrap();
        assert!(cost.value >= 0.0 && cost.value < 1e7, "{cost:?}");
        assert!(cost.method.contains("blocking"));
    }
}
