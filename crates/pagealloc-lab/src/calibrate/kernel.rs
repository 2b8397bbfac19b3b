//! The real kernel around the allocator, timed from userspace on one pinned CPU: a page
//! fault as page_fault1 makes them (map 128 MiB, write a byte per page, unmap), a map and
//! unmap alone, and one message through an AF_UNIX stream and a TCP loopback stream written
//! and read back by the same thread (the kernel's send and receive path without a second
//! CPU, so that two-CPU pairs stay a prediction).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Instant;

use crate::machine::profile::Measurement;

const PAGE_BYTES: usize = 4096;
pub use crate::machine::kernel_costs::{FAULT_MAP_BYTES, FAULT_MAP_PAGES};

/// An anonymous private mapping, huge-page backed only where advised (page_fault1 measures
/// 4 KiB faults); unmapped when dropped.
pub(super) struct Mapping {
    base: *mut u8,
    bytes: usize,
}

impl Mapping {
    fn new(bytes: usize) -> Result<Mapping, String> {
        Mapping::new_quiet(bytes).ok_or_else(|| format!("mmap of {bytes} bytes: {}", std::io::Error::last_os_error()))
    }

    /// The mapping, or None: no message built, nothing allocated.
    fn new_quiet(bytes: usize) -> Option<Mapping> {
        Mapping::with_advice(bytes, libc::MADV_NOHUGEPAGE)
    }

    /// The mapping with `advice` (`MADV_NOHUGEPAGE`, `MADV_HUGEPAGE`) taken, or None.
    pub(super) fn with_advice(bytes: usize, advice: libc::c_int) -> Option<Mapping> {
        // SAFETY: a fresh anonymous mapping; the kernel picks the address.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice on the mapping just made; failure only leaves THP's default.
        unsafe { libc::madvise(base, bytes, advice) };
        Some(Mapping { base: base.cast(), bytes })
    }

    /// Writes a byte to every page: one page fault each.
    fn touch_pages(&self) {
        self.touch_every(PAGE_BYTES);
    }

    /// Writes a byte every `stride` bytes from the start.
    pub(super) fn touch_every(&self, stride: usize) {
        for offset in (0..self.bytes).step_by(stride) {
            // SAFETY: inside the mapping, which is readable and writable.
            unsafe { self.base.add(offset).write_volatile(1) };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, no longer referenced.
        unsafe { libc::munmap(self.base.cast(), self.bytes) };
    }
}

/// page_fault1's rounds with nothing allocated from the heap: system calls and stores only
/// (for a forked child). Says whether every mapping succeeded.
pub fn fault_rounds(rounds: usize) -> bool {
    (0..rounds).all(|_| Mapping::new_quiet(FAULT_MAP_BYTES).map(|mapping| mapping.touch_pages()).is_some())
}

/// Maps `bytes` of anonymous memory, writes a byte to each page and unmaps it: as many
/// order-0 movable allocations, then as many frees, on the calling CPU.
pub fn fault_and_unmap(bytes: usize) -> Result<(), String> {
    let mapping = Mapping::new(bytes)?;
    mapping.touch_pages();
    Ok(())
}

/// page_fault1's iteration cost per page, ns: map 128 MiB, write a byte per page, unmap,
/// `rounds` times; time / pages. It includes the unmap's freeing of each page and the
/// map and unmap themselves, as page_fault1's faults per second do.
pub fn page_fault1(rounds: usize, repeats: usize) -> Result<Measurement, String> {
    let pages = FAULT_MAP_PAGES;
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        if !fault_rounds(rounds) {
            return Err(format!("mmap of {FAULT_MAP_BYTES} bytes: {}", std::io::Error::last_os_error()));
        }
        samples.push(start.elapsed().as_nanos() as f64 / (rounds * pages) as f64);
    }
    let method = format!(
        "page_fault1 at 1 task: mmap 128 MiB (MADV_NOHUGEPAGE), write a byte per 4 KiB page, munmap; \
         {rounds} rounds; time / pages"
    );
    Ok(Measurement::from_samples(samples, "ns", &method))
}

/// A map and unmap of 128 MiB never touched, ns per pair.
pub fn mmap_munmap(pairs: usize, repeats: usize) -> Result<Measurement, String> {
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        for _ in 0..pairs {
            drop(Mapping::new(FAULT_MAP_BYTES)?);
        }
        samples.push(start.elapsed().as_nanos() as f64 / pairs as f64);
    }
    let method = format!("mmap of 128 MiB (MADV_NOHUGEPAGE) then munmap, untouched; {pairs} pairs; time / pairs");
    Ok(Measurement::from_samples(samples, "ns", &method))
}

/// One message of `bytes` through a stream socket of `family`, written and read back by
/// one thread, ns per message.
pub fn stream_message(
    family: StreamFamily,
    bytes: usize,
    messages: usize,
    repeats: usize,
) -> Result<Measurement, String> {
    let message = vec![0x5au8; bytes];
    let samples = match family {
        StreamFamily::Unix => {
            let (mut writer, mut reader) = UnixStream::pair().map_err(|error| format!("socketpair: {error}"))?;
            (0..repeats)
                .map(|_| echo_pair(&mut writer, &mut reader, &message, messages))
                .collect::<Result<Vec<_>, _>>()?
        }
        StreamFamily::Tcp => {
            let (mut writer, mut reader) = tcp_pair()?;
            (0..repeats)
                .map(|_| echo_pair(&mut writer, &mut reader, &message, messages))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    let method = format!(
        "{} stream, one thread: write {bytes} bytes to one end, read them whole from the other; \
         {messages} messages; time / messages",
        family.name()
    );
    Ok(Measurement::from_samples(samples, "ns", &method))
}

/// A connected TCP loopback stream's two ends, each sending at once (TCP_NODELAY).
pub(super) fn tcp_pair() -> Result<(TcpStream, TcpStream), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|error| format!("bind: {error}"))?;
    let address = listener.local_addr().map_err(|error| error.to_string())?;
    let near = TcpStream::connect(address).map_err(|error| format!("connect: {error}"))?;
    let (far, _) = listener.accept().map_err(|error| format!("accept: {error}"))?;
    for end in [&near, &far] {
        end.set_nodelay(true).map_err(|error| error.to_string())?;
    }
    Ok((near, far))
}

/// Writes `message` to `writer` and reads it whole from `reader`, `messages` times.
fn echo_pair<W: Write, R: Read>(
    writer: &mut W,
    reader: &mut R,
    message: &[u8],
    messages: usize,
) -> Result<f64, String> {
    let mut back = vec![0u8; message.len()];
    let start = Instant::now();
    for _ in 0..messages {
        writer.write_all(message).map_err(|error| format!("write: {error}"))?;
        reader.read_exact(&mut back).map_err(|error| format!("read: {error}"))?;
    }
    Ok(start.elapsed().as_nanos() as f64 / messages as f64)
}

/// A 1-byte message bounced between two threads pinned to CPUs `a` and `b` over two AF_UNIX
/// stream pairs, each thread blocking in read() until the other writes: ns per one-way
/// trip (round trip / 2) over `trips` round trips.
fn unix_ping_pong(a: usize, b: usize, trips: usize) -> Result<f64, String> {
    let (mut ping_out, mut ping_in) = UnixStream::pair().map_err(|error| format!("socketpair: {error}"))?;
    let (mut pong_out, mut pong_in) = UnixStream::pair().map_err(|error| format!("socketpair: {error}"))?;
    // Pinned before the peer starts: an error here leaves no thread waiting (the peer's own
    // early return closes its ends, which ends this side's read).
    crate::pinning::pin_to_cpu_id(a)?;
    let elapsed = std::thread::scope(|scope| -> Result<f64, String> {
        let peer = scope.spawn(move || -> Result<(), String> {
            crate::pinning::pin_to_cpu_id(b)?;
            let mut byte = [0u8; 1];
            for _ in 0..trips {
                ping_in.read_exact(&mut byte).map_err(|error| format!("read: {error}"))?;
                pong_out.write_all(&byte).map_err(|error| format!("write: {error}"))?;
            }
            Ok(())
        });
        let mut byte = [1u8; 1];
        let start = Instant::now();
        let bounced = (0..trips).try_for_each(|_| {
            ping_out.write_all(&byte)?;
            pong_in.read_exact(&mut byte)
        });
        let elapsed = start.elapsed().as_nanos() as f64;
        // Closed before the join, so a peer waiting for the next ping sees the end.
        drop(ping_out);
        peer.join().map_err(|_| "the ping-pong peer panicked".to_string())??;
        bounced.map_err(|error| format!("ping-pong: {error}"))?;
        Ok(elapsed)
    })?;
    Ok(elapsed / (2 * trips) as f64)
}

/// What a blocked task's wake-up adds to a 1-byte AF_UNIX message, ns: a ping-pong's
/// one-way trip between CPUs `a` and `b` (a different CPU: the wake-up of a task on an idle
/// CPU; the same: a context switch) less one thread's write and read of the byte.
pub fn wake_up(a: usize, b: usize, trips: usize, repeats: usize) -> Result<Measurement, String> {
    let alone = stream_message(StreamFamily::Unix, 1, trips.max(1000), repeats)?.value;
    let samples = (0..repeats)
        .map(|_| unix_ping_pong(a, b, trips).map(|trip_ns| (trip_ns - alone).max(0.0)))
        .collect::<Result<Vec<_>, _>>()?;
    let what = if a == b { "both threads on one CPU (a context switch)" } else { "threads on two CPUs" };
    let method = format!(
        "1-byte AF_UNIX ping-pong, {what}, each thread blocking in read(): {trips} round trips; \
         round trip / 2 less one thread's 1-byte write and read ({alone:.0} ns)"
    );
    Ok(Measurement::from_samples(samples, "ns", &method))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFamily {
    Unix,
    Tcp,
}

impl StreamFamily {
    pub fn name(self) -> &'static str {
        match self {
            StreamFamily::Unix => "AF_UNIX",
            StreamFamily::Tcp => "TCP loopback",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_loops_run_and_give_positive_costs() {
        let fault = page_fault1(1, 1).unwrap();
        assert!(fault.value > 0.0 && fault.value < 1e6, "{fault:?}");
        let unix = stream_message(StreamFamily::Unix, 4096, 100, 2).unwrap();
        assert!(unix.value > 0.0, "{unix:?}");
        let tcp = stream_message(StreamFamily::Tcp, 4096, 100, 2).unwrap();
        assert!(tcp.value > 0.0, "{tcp:?}");
    }
}
