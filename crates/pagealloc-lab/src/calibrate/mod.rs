//! `pagelab calibrate`: measures this host and writes a machine profile (JSON) with every
//! constant's value, unit, method and spread over the repeats.
//!
//! - `profile`: the profile's types, written and read back;
//! - `host`: kernel, CPU model, topology, caches and zones, from procfs and sysfs;
//! - `hardware`: cache-line transfers, atomics, cache and memory latency, page zero and copy;
//! - `page_handoff`: pages written and read in turns by two cores (a message's pages);
//! - `kernel`: the real kernel around the allocator, timed from userspace;
//! - `cross_cpu`: a socket message's extra cost when its writer and reader are on two CPUs;
//! - `drift`: some of a profile's constants measured again, to see how far the host moved;
//! - `waker`: what a cross-CPU wake-up costs the task that wakes;
//! - `kernel_files`: spawning a process, creating a file, filling and truncating page cache;
//! - `kernel_path`: the kernel allocator's own path per call, from perf's call-chain samples;
//! - `own_path`: this library's path per call, for the `pagealloc` preset;
//! - `curves`: shared resources (memory bandwidth, a hot line, TLB shootdowns, locks) as
//!   curves over 1, 2, 4, ... CPUs at once (with `lost_time`, `read_mostly` and `shootdown`).

pub mod cross_cpu;
mod curve_points;
mod curves;
pub mod drift;
pub mod hardware;
pub mod huge_faults;
pub mod kernel;
pub mod kernel_files;
pub mod kernel_path;
mod lost_time;
pub mod own_path;
pub mod page_handoff;
mod pinned;
mod read_mostly;
mod shootdown;
pub mod two_cpu;
mod waker;

use std::path::PathBuf;

use clap::builder::TypedValueParser as _;

use crate::machine::host;
use crate::machine::profile::{HostInfo, MachineProfile, Measurement};
use kernel::StreamFamily;

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Where to write the profile (with --check: the profile to read).
    #[arg(long, default_value = "machine-profile.json")]
    pub out: PathBuf,
    /// Instead of calibrating: predict, from the profile, the real kernel on 2-CPU workloads
    /// the profile does not measure, measure them, and exit non-zero if a prediction is more
    /// than 15% off (exit status 1).
    #[arg(long)]
    pub check: bool,
    /// Runs of each measurement; the profile keeps their median and extremes.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..=1000).map(usize::from))]
    pub repeats: usize,
    /// Shorter runs (a tenth of the work each), for a smoke test.
    #[arg(long)]
    pub quick: bool,
    /// Runs one of the sampled loops in this process and exits (what `perf record` starts).
    #[arg(long, hide = true)]
    pub run_loop: Option<String>,
    /// Iterations of `--run-loop`.
    #[arg(long, hide = true, default_value_t = 1)]
    pub loop_count: u64,
}

/// Message sizes the stream sockets are timed at: AF_UNIX up to 64 KiB (af_unix's skbs
/// step from order 0 to order 3 pages across them), TCP up to 16 KiB (a write a loopback
/// receive buffer takes whole, so one thread never blocks on itself).
const UNIX_MESSAGE_BYTES: [usize; 4] = [1 << 10, 4 << 10, 16 << 10, 64 << 10];
const TCP_MESSAGE_BYTES: [usize; 3] = [1 << 10, 4 << 10, 16 << 10];

/// Work per measurement, scaled down by `--quick`.
struct Effort {
    repeats: usize,
    scale: u64,
}

impl Effort {
    fn times(&self, full: u64) -> u64 {
        (full / self.scale).max(1)
    }
}

pub fn run(args: &CalibrateArgs) -> Result<(), String> {
    if let Some(name) = &args.run_loop {
        let sampled =
            kernel_path::SampledLoop::parse(name).ok_or_else(|| format!("--run-loop {name}: no such loop"))?;
        return sampled.run(args.loop_count);
    }
    // Fail before minutes of measuring, not after.
    std::fs::File::create(&args.out).map_err(|error| format!("{}: {error}", args.out.display()))?;
    let host = host::read_host()?;
    let effort = Effort { repeats: args.repeats, scale: if args.quick { 10 } else { 1 } };
    let mut constants = Vec::new();
    let mut measure = |name: &str, measurement: Measurement| {
        println!(
            "{name:<28} {:>10.1} {} (spread {:.0}%)",
            measurement.value,
            measurement.unit,
            measurement.spread() * 100.0
        );
        constants.push((name.to_string(), measurement));
    };
    for (name, measurement) in hardware_constants(&host, &effort)? {
        measure(&name, measurement);
    }
    for (name, measurement) in kernel_constants(&host, &effort)? {
        measure(&name, measurement);
    }
    let curves = curves::measure(&host, &effort, |name, curve| {
        for point in &curve.points {
            let spread = if point.value == 0.0 { 0.0 } else { (point.max - point.min) / point.value };
            let at = format!("{name}[{}]", point.cpus);
            println!("{at:<32} {:>10.1} {} (spread {:.0}%)", point.value, curve.unit, spread * 100.0);
        }
    })?;
    let measured_at_s =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs());
    let profile = MachineProfile { format: MachineProfile::FORMAT, measured_at_s, host, constants, curves };
    let text = serde_json::to_string_pretty(&profile).map_err(|error| error.to_string())?;
    std::fs::write(&args.out, text + "\n").map_err(|error| format!("{}: {error}", args.out.display()))?;
    // Read back, as `--machine` will read it.
    let written = MachineProfile::read(&args.out)?;
    print!("{}", summary(&written));
    println!("wrote {} ({} constants, {} curves)", args.out.display(), written.constants.len(), written.curves.len());
    Ok(())
}

/// The host and the headline numbers, for the terminal.
fn summary(profile: &MachineProfile) -> String {
    let host = &profile.host;
    let mut text = format!(
        "host: Linux {}, {}, {} CPUs in {} package(s), LLC {} KiB\n",
        host.kernel,
        host.cpu_model,
        host.cpus.len(),
        host.packages(),
        host.llc_kib().unwrap_or(0)
    );
    if let Some(fault) = profile.constant("page_fault1_page_ns") {
        text += &format!("page_fault1 at 1 task: {:.2} M faults/s\n", 1e3 / fault.value);
    }
    if let Some(zero) = profile.curve("page_zero_per_cpu_ns") {
        let all = host.cpus.len() as u32;
        if let (Some(one), Some(every)) = (zero.at(1), zero.at(all)) {
            text += &format!(
                "page zeroing: {:.0} ns per page at 1 CPU, {:.0} ns per page per CPU at {all} CPUs at once\n",
                one.value, every.value
            );
        }
    }
    text
}

/// Pairs of CPUs for the ping-pong: SMT siblings, two cores under one LLC, two cores of a
/// package under two LLC instances (core complex dies), two packages; each where the host
/// has it.
fn ping_pong_pairs(host: &HostInfo) -> Vec<(&'static str, &'static str, usize, usize)> {
    let mut pairs = Vec::new();
    let first = &host.cpus[0];
    let llc_sharers = host.llc_sharer_cpus();
    let shares_llc = |cpu: usize| llc_sharers.as_ref().is_none_or(|sharers| sharers.contains(&cpu));
    let find = |same_package: bool, same_core: bool, same_llc: bool| {
        host.cpus.iter().skip(1).find(|place| {
            (place.package == first.package) == same_package
                && (same_package && place.core == first.core) == same_core
                && (!same_package || same_core || shares_llc(place.cpu) == same_llc)
        })
    };
    if let Some(sibling) = find(true, true, true) {
        pairs.push(("line_smt_ns", "SMT siblings", first.cpu, sibling.cpu));
    }
    if let Some(core) = find(true, false, true) {
        pairs.push(("line_same_socket_ns", "two cores of one package and LLC", first.cpu, core.cpu));
    }
    if let Some(core) = find(true, false, false) {
        pairs.push(("line_other_llc_ns", "two cores of one package under two LLCs", first.cpu, core.cpu));
    }
    if let Some(other) = find(false, false, false) {
        pairs.push(("line_other_socket_ns", "two packages", first.cpu, other.cpu));
    }
    pairs
}

fn hardware_constants(host: &HostInfo, effort: &Effort) -> Result<Vec<(String, Measurement)>, String> {
    let repeats = effort.repeats;
    let mut constants = Vec::new();
    for (name, what, a, b) in ping_pong_pairs(host) {
        let transfer = hardware::ping_pong(a, b, effort.times(1_000_000), repeats, what)?;
        if name == "line_same_socket_ns" {
            let (write, read) = page_handoff::page_handoff(a, b, effort.times(20_000), repeats)?;
            constants.push(("page_write_other_l2_lines".into(), page_handoff::in_line_transfers(&write, &transfer)));
            constants.push(("page_read_other_l2_lines".into(), page_handoff::in_line_transfers(&read, &transfer)));
            constants.push(("page_write_other_l2_ns".into(), write));
            constants.push(("page_read_other_l2_ns".into(), read));
        }
        constants.push((name.to_string(), transfer));
    }
    crate::pinning::pin_to_cpu_id(host.cpus[0].cpu)?;
    constants.push(("atomic_rmw_ns".into(), hardware::atomic_rmw(effort.times(20_000_000), repeats)));
    let llc_bytes = (host.llc_kib().unwrap_or(8 << 10) as usize) << 10;
    let loads = effort.times(20_000_000);
    constants.push(("line_llc_ns".into(), hardware::pointer_chase(llc_bytes / 2, loads, repeats, "half the LLC")));
    let dram_bytes = (llc_bytes * 16).max(512 << 20);
    constants.push(("line_memory_ns".into(), hardware::pointer_chase(dram_bytes, loads, repeats, "16x the LLC")));
    let page_buffer = (llc_bytes * 4).max(128 << 20);
    constants.push(("page_zero_ns".into(), hardware::page_bandwidth(page_buffer, repeats, false)));
    constants.push(("page_copy_ns".into(), hardware::page_bandwidth(page_buffer, repeats, true)));
    let llc_half = llc_bytes / 2;
    constants.push(("page_zero_llc_ns".into(), hardware::page_bandwidth(llc_half, repeats, false)));
    let l2_half = (host.cache_kib(2).unwrap_or(256) as usize) << 9;
    constants.push(("page_zero_l2_ns".into(), hardware::page_bandwidth(l2_half, repeats, false)));
    constants
        .push(("percpu_counter_update_ns".into(), hardware::percpu_counter_update(effort.times(100_000_000), repeats)));
    Ok(constants)
}

fn kernel_constants(host: &HostInfo, effort: &Effort) -> Result<Vec<(String, Measurement)>, String> {
    let repeats = effort.repeats;
    let mut constants = vec![
        ("page_fault1_page_ns".to_string(), kernel::page_fault1(effort.times(20) as usize, repeats)?),
        ("mmap_munmap_128m_ns".to_string(), kernel::mmap_munmap(effort.times(2000) as usize, repeats)?),
    ];
    let messages = effort.times(100_000) as usize;
    for bytes in UNIX_MESSAGE_BYTES {
        let name = format!("unix_stream_{}k_ns", bytes >> 10);
        constants.push((name, kernel::stream_message(StreamFamily::Unix, bytes, messages, repeats)?));
    }
    for bytes in TCP_MESSAGE_BYTES {
        let name = format!("tcp_stream_{}k_ns", bytes >> 10);
        constants.push((name, kernel::stream_message(StreamFamily::Tcp, bytes, messages, repeats)?));
    }
    constants.extend(allocator_paths(effort)?);
    constants.extend(wake_ups(host, effort)?);
    constants.push(("process_spawn_ns".to_string(), kernel_files::process_spawn(effort.times(500) as usize, repeats)?));
    constants.push(("file_create_ns".to_string(), kernel_files::file_create(effort.times(5000) as usize, repeats)?));
    let (fill, truncate) = kernel_files::page_cache_fill_and_truncate((effort.times(256)).max(8), repeats)?;
    constants.push(("page_cache_fill_ns".to_string(), fill));
    constants.push(("page_cache_truncate_ns".to_string(), truncate));
    Ok(constants)
}

/// A blocked task's wake-up: on another CPU (where the host has two) and on the same CPU;
/// and, between two CPUs, a socket message's cross-CPU part without a wake-up.
fn wake_ups(host: &HostInfo, effort: &Effort) -> Result<Vec<(String, Measurement)>, String> {
    let trips = effort.times(20_000) as usize;
    let first = host.cpus[0].cpu;
    let mut constants = vec![("switch_same_cpu_ns".to_string(), kernel::wake_up(first, first, trips, effort.repeats)?)];
    if let Some(other) = host.cpus.get(1) {
        constants.push(("wake_other_cpu_ns".to_string(), kernel::wake_up(first, other.cpu, trips, effort.repeats)?));
        let writes = effort.times(2_000) as usize;
        constants.push(("wake_waker_ns".to_string(), waker::waker_cost(first, other.cpu, writes, effort.repeats)?));
        for (name, family) in [("unix_cross_cpu_ns", StreamFamily::Unix), ("tcp_cross_cpu_ns", StreamFamily::Tcp)] {
            let cross = cross_cpu::cross_cpu_message(family, first, other.cpu, trips, effort.repeats)?;
            constants.push((name.to_string(), cross));
        }
    }
    Ok(constants)
}

/// The kernel allocator's path per call (order 0 from page_fault1, orders 0 to 3 from
/// AF_UNIX 64 KiB writes), where perf can sample it, and this library's own.
fn allocator_paths(effort: &Effort) -> Result<Vec<(String, Measurement)>, String> {
    use kernel_path::SampledLoop;
    let mut constants = Vec::new();
    let loops = [
        (SampledLoop::PageFault1, effort.times(20), "kernel_alloc_order0_ns", "kernel_free_order0_ns"),
        (SampledLoop::Unix64k, effort.times(100_000), "kernel_alloc_order0to3_ns", "kernel_free_order0to3_ns"),
    ];
    for (sampled, count, alloc_name, free_name) in loops {
        if let Some(paths) = kernel_path::allocator_path(sampled, count, effort.repeats)? {
            constants.push((alloc_name.to_string(), paths.alloc));
            constants.push((free_name.to_string(), paths.free));
            if sampled == SampledLoop::PageFault1 {
                // The kernel's own zeroing of a faulted page (clear_page).
                constants.push(("kernel_clear_page_ns".to_string(), paths.zeroing));
            }
        }
    }
    let (alloc, free) = own_path::pagealloc_path(32_768, effort.times(20) as usize, effort.repeats)?;
    constants.push(("pagealloc_alloc_ns".to_string(), alloc));
    constants.push(("pagealloc_free_ns".to_string(), free));
    Ok(constants)
}
