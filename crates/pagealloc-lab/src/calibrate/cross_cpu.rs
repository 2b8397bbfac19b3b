//! What a socket message costs extra when its writer and reader run on different CPUs, with
//! nobody sleeping: the socket's shared state (the queue and its lock, the skb, the
//! sender's write-memory count, the slab and page references) moves between the two CPUs'
//! caches on every message. A wake-up is measured apart (`kernel::wake_up`).
//!
//! Method: a 1-byte ping-pong between two pinned threads that poll their ends with
//! non-blocking reads, so neither sleeps. Its one-way trip, less one thread's write and
//! read of the byte (all on one CPU) and less half an empty read (on average the reader is
//! that far into a read that finds nothing when the byte lands), is the cross-CPU part.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Instant;

use super::kernel::{stream_message, tcp_pair, StreamFamily};
use crate::machine::profile::Measurement;
use crate::pinning::pin_to_cpu_id;

/// One end of a connected stream socket.
pub(super) trait Stream: Read + Write + Send {}

impl<T: Read + Write + Send> Stream for T {}

/// A connected socket's two ends, each set to poll (non-blocking reads).
type Ends = (Box<dyn Stream>, Box<dyn Stream>);

fn polling_pair(family: StreamFamily) -> Result<Ends, String> {
    let polling = |error: std::io::Error| format!("O_NONBLOCK: {error}");
    match family {
        StreamFamily::Unix => {
            let (a, b) = UnixStream::pair().map_err(|error| format!("socketpair: {error}"))?;
            for end in [&a, &b] {
                end.set_nonblocking(true).map_err(polling)?;
            }
            Ok((Box::new(a), Box::new(b)))
        }
        StreamFamily::Tcp => {
            let (a, b) = tcp_pair()?;
            for end in [&a, &b] {
                end.set_nonblocking(true).map_err(polling)?;
            }
            Ok((Box::new(a), Box::new(b)))
        }
    }
}

/// Reads one byte: polling where the end does not block, else blocking.
pub(super) fn poll_byte(end: &mut dyn Stream) -> Result<(), String> {
    let mut byte = [0u8; 1];
    // Bounded by the peer: it writes the byte, or its exit closes the end (a 0-byte read).
    loop {
        match end.read(&mut byte) {
            Ok(1) => return Ok(()),
            Ok(_) => return Err("the peer closed its end".to_string()),
            Err(error) if error.kind() == ErrorKind::WouldBlock => {}
            Err(error) => return Err(format!("read: {error}")),
        }
    }
}

/// One-way trip of a 1-byte message between threads on CPUs `a` and `b` polling their
/// ends, ns (round trip / 2).
fn polling_trip_ns(family: StreamFamily, a: usize, b: usize, trips: usize) -> Result<f64, String> {
    let (mut near, mut far) = polling_pair(family)?;
    // Pinned before the peer starts: an error here leaves no thread waiting.
    pin_to_cpu_id(a)?;
    std::thread::scope(|scope| -> Result<f64, String> {
        // The peer owns its end: returning early closes it, and this side's poll sees the end.
        let peer = scope.spawn(move || -> Result<(), String> {
            pin_to_cpu_id(b)?;
            for _ in 0..trips {
                poll_byte(far.as_mut())?;
                far.write_all(&[2]).map_err(|error| format!("write: {error}"))?;
            }
            Ok(())
        });
        let start = Instant::now();
        let bounced = (0..trips).try_for_each(|_| -> Result<(), String> {
            near.write_all(&[1]).map_err(|error| format!("write: {error}"))?;
            poll_byte(near.as_mut())
        });
        let elapsed_ns = start.elapsed().as_nanos() as f64;
        drop(near);
        peer.join().map_err(|_| "the ping-pong peer panicked".to_string())??;
        bounced?;
        Ok(elapsed_ns / (2 * trips) as f64)
    })
}

/// A non-blocking read of an empty stream socket, ns.
fn empty_read_ns(family: StreamFamily, reads: usize) -> Result<f64, String> {
    let (mut end, _other) = polling_pair(family)?;
    let mut byte = [0u8; 1];
    let start = Instant::now();
    for _ in 0..reads {
        match end.read(&mut byte) {
            Err(error) if error.kind() == ErrorKind::WouldBlock => {}
            other => return Err(format!("an empty socket's read gave {other:?}")),
        }
    }
    Ok(start.elapsed().as_nanos() as f64 / reads as f64)
}

/// The cross-CPU part of a 1-byte message of `family` between CPUs `a` and `b`, ns, over
/// `repeats` runs of `trips` round trips (see the module's method); at least 0.
pub fn cross_cpu_message(
    family: StreamFamily,
    a: usize,
    b: usize,
    trips: usize,
    repeats: usize,
) -> Result<Measurement, String> {
    assert_ne!(a, b, "a cross-CPU message needs two CPUs");
    let alone = stream_message(family, 1, trips.max(1000), repeats)?.value;
    let empty = empty_read_ns(family, trips.max(1000))?;
    let samples = (0..repeats)
        .map(|_| polling_trip_ns(family, a, b, trips).map(|trip_ns| (trip_ns - alone - empty / 2.0).max(0.0)))
        .collect::<Result<Vec<_>, _>>()?;
    let method = format!(
        "1-byte {} ping-pong between CPUs {a} and {b}, both threads polling with non-blocking reads \
         (nobody sleeps): {trips} round trips; round trip / 2 less one thread's 1-byte write and read \
         ({alone:.0} ns) and half an empty read ({empty:.0} ns)",
        family.name()
    );
    Ok(Measurement::from_samples(samples, "ns", &method))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_ping_pongs_run_on_both_families() {
        // One CPU may be all a test runner has: both threads on it still make progress, a
        // scheduler slice per trip at worst, so the trips are few.
        for family in [StreamFamily::Unix, StreamFamily::Tcp] {
            let trip_ns = polling_trip_ns(family, 0, 0, 20).unwrap();
            assert!(trip_ns > 0.0 && trip_ns.is_finite(), "{family:?}: {trip_ns}");
            let empty = empty_read_ns(family, 100).unwrap();
            assert!(empty > 0.0, "{family:?}: {empty}");
        }
    }
}
