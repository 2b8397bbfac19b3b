//! Small workloads to trace with `pagelab trace capture`, so the real traces of docs/lab.md can be
//! taken again on any Linux machine with nothing installed:
//! - `unix-stream`: two processes, one writing fixed-size chunks (64 KiB by default) into an
//!   AF_UNIX stream socket, the other reading them (the socket's skb pages are the
//!   allocations of interest, orders 0 to 3);
//! - `page-cache`: write a file, fsync it, drop its cached pages (POSIX_FADV_DONTNEED), read
//!   it back and delete it: page-cache allocations and frees, in rounds.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `pagelab trace unix-stream`.
#[derive(clap::Args, Debug, Clone)]
pub struct UnixStreamArgs {
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Bytes per write, KiB.
    #[arg(long, default_value_t = 64)]
    pub write_kib: usize,
}

/// `pagelab trace page-cache`.
#[derive(clap::Args, Debug, Clone)]
pub struct PageCacheArgs {
    /// File size, MiB.
    #[arg(long, default_value_t = 512)]
    pub mib: usize,
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Directory for the file.
    #[arg(long, default_value = "/tmp")]
    pub dir: PathBuf,
}

/// The writer: spawns the reader as a second process on the other end of a socket pair.
pub fn unix_stream(args: &UnixStreamArgs) -> Result<(), String> {
    let (writer_end, reader_end) = UnixStream::pair().map_err(|error| format!("socketpair: {error}"))?;
    let reader_fd = reader_end.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns; clearing FD_CLOEXEC lets the child
    // inherit it, which is the point.
    if unsafe { libc::fcntl(reader_fd, libc::F_SETFD, 0) } != 0 {
        return Err(format!("fcntl: {}", std::io::Error::last_os_error()));
    }
    let exe = std::env::current_exe().map_err(|error| error.to_string())?;
    let mut reader = std::process::Command::new(exe)
        .args(["trace", "unix-sink", "--fd", &reader_fd.to_string()])
        .spawn()
        .map_err(|error| format!("spawning the reader: {error}"))?;
    drop(reader_end);
    let chunk = vec![0x5a_u8; args.write_kib.max(1) << 10];
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let mut writes = 0u64;
    let mut stream = writer_end;
    while Instant::now() < deadline {
        stream.write_all(&chunk).map_err(|error| format!("write: {error}"))?;
        writes += 1;
    }
    drop(stream);
    let status = reader.wait().map_err(|error| error.to_string())?;
    println!("unix-stream: {writes} writes of {} KiB; reader {status}", args.write_kib);
    Ok(())
}

/// The reader: reads until the writer closes.
pub fn unix_sink(fd: i32) -> Result<(), String> {
    // SAFETY: the descriptor was inherited from the writer for this process alone; nothing
    // else in this process uses or closes it.
    let mut stream = unsafe { UnixStream::from_raw_fd(fd) };
    let mut buffer = vec![0u8; 64 << 10];
    while stream.read(&mut buffer).map_err(|error| format!("read: {error}"))? > 0 {}
    Ok(())
}

pub fn page_cache(args: &PageCacheArgs) -> Result<(), String> {
    let path = args.dir.join(format!("pagelab-page-cache-{}", std::process::id()));
    let chunk = vec![0xa5_u8; 1 << 20];
    for _ in 0..args.rounds {
        let mut file = File::create(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        for _ in 0..args.mib {
            file.write_all(&chunk).map_err(|error| format!("write: {error}"))?;
        }
        file.sync_all().map_err(|error| format!("fsync: {error}"))?;
        // SAFETY: advice on an open descriptor of ours; it only drops clean cached pages.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        let mut reread = File::open(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        let mut buffer = vec![0u8; 1 << 20];
        while reread.read(&mut buffer).map_err(|error| format!("read: {error}"))? > 0 {}
        std::fs::remove_file(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    }
    println!("page-cache: {} rounds of {} MiB", args.rounds, args.mib);
    Ok(())
}
