//! Two more workloads to capture: a TCP loopback stream (its skb pages are order-3 page_frag
//! blocks), and page_fault1 at several tasks.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// `pagelab trace tcp-stream`.
#[derive(clap::Args, Debug, Clone)]
pub struct TcpStreamArgs {
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub seconds: u64,
    /// Bytes per write, KiB.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub write_kib: u64,
}

/// `pagelab trace page-fault1`.
#[derive(clap::Args, Debug, Clone)]
pub struct PageFault1Args {
    /// Processes, pinned to the online CPUs in turn (one each while there are enough).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub tasks: u16,
    /// Rounds of map 128 MiB, touch, unmap, per process.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=10000))]
    pub rounds: u16,
}

/// A writer thread streaming fixed-size writes to a reader thread over TCP loopback.
pub fn tcp_stream(args: &TcpStreamArgs) -> Result<(), String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|error| format!("bind: {error}"))?;
    let address = listener.local_addr().map_err(|error| error.to_string())?;
    let reader = std::thread::spawn(move || -> Result<u64, String> {
        let (mut stream, _) = listener.accept().map_err(|error| format!("accept: {error}"))?;
        let mut buffer = vec![0u8; 64 << 10];
        let mut bytes = 0u64;
        loop {
            match stream.read(&mut buffer).map_err(|error| format!("read: {error}"))? {
                0 => return Ok(bytes),
                read => bytes += read as u64,
            }
        }
    });
    let mut stream = std::net::TcpStream::connect(address).map_err(|error| format!("connect: {error}"))?;
    let chunk = vec![0x5a_u8; (args.write_kib << 10) as usize];
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let mut writes = 0u64;
    while Instant::now() < deadline {
        stream.write_all(&chunk).map_err(|error| format!("write: {error}"))?;
        writes += 1;
    }
    drop(stream);
    let bytes = reader.join().map_err(|_| "the reader panicked".to_string())??;
    println!("tcp-stream: {writes} writes of {} KiB, {bytes} bytes read", args.write_kib);
    Ok(())
}

/// page_fault1 with `tasks` processes pinned to the online CPUs in turn.
pub fn page_fault1(args: &PageFault1Args) -> Result<(), String> {
    let host = crate::machine::host::read_host()?;
    let cpus: Vec<usize> = (0..usize::from(args.tasks)).map(|task| host.cpus[task % host.cpus.len()].cpu).collect();
    let rate = crate::calibrate::two_cpu::page_fault1_tasks(&cpus, false, usize::from(args.rounds), 1)?;
    println!("page-fault1: {} processes on CPUs {cpus:?}: {:.0} faults/s", args.tasks, rate.value);
    Ok(())
}
