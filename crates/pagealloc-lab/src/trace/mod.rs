//! Real kernel traces: capture the kmem tracepoints of a workload on Linux (`capture`),
//! read ftrace text (`parse`), count it as the tracepoints count (`counts`), replay its
//! alloc/free stream through the allocator on a machine built from the traced one's
//! /proc/zoneinfo (`zoneinfo`, `gfp`, `replay`), and write our own runs in the same format
//! (`writer`).

pub mod capture;
pub mod child;
pub mod counts;
pub mod gfp;
pub mod initial;
pub mod machine;
mod more_workloads;
pub mod parse;
mod pfn_hasher;
pub mod platform;
pub mod replay;
pub mod replay_cli;
pub mod ring_stats;
pub mod samples;
mod settle;
pub mod timeline;
pub mod timers;
pub mod workloads;
pub mod writer;
pub mod zoneinfo;

/// `pagelab trace` subcommands.
#[derive(clap::Subcommand)]
pub enum TraceCommand {
    /// Record the kmem page-allocator events of a command through tracefs (root, Linux), with
    /// /proc/zoneinfo, buddyinfo, pagetypeinfo and vmstat before and after.
    Capture(capture::CaptureArgs),
    /// Two processes streaming fixed-size writes through an AF_UNIX socket (a workload to
    /// capture).
    UnixStream(workloads::UnixStreamArgs),
    /// The reading end of `unix-stream` (started by it).
    #[command(hide = true)]
    UnixSink {
        #[arg(long)]
        fd: i32,
    },
    /// Write, fsync, drop from the cache, re-read and delete a file, in rounds (a workload to
    /// capture).
    PageCache(workloads::PageCacheArgs),
    /// A writer and a reader thread streaming fixed-size writes over TCP loopback (a
    /// workload to capture).
    TcpStream(more_workloads::TcpStreamArgs),
    /// page_fault1 with several processes, pinned to the online CPUs in turn (a workload to
    /// capture).
    PageFault1(more_workloads::PageFault1Args),
}

pub fn run(command: &TraceCommand) -> Result<(), String> {
    match command {
        TraceCommand::Capture(args) => {
            let summary = capture::capture(args)?;
            println!("{}", serde_json::to_string_pretty(&summary).map_err(|error| error.to_string())?);
            Ok(())
        }
        TraceCommand::UnixStream(args) => workloads::unix_stream(args),
        TraceCommand::UnixSink { fd } => workloads::unix_sink(*fd),
        TraceCommand::PageCache(args) => workloads::page_cache(args),
        TraceCommand::TcpStream(args) => more_workloads::tcp_stream(args),
        TraceCommand::PageFault1(args) => more_workloads::page_fault1(args),
    }
}
