//! `pagelab trace capture`: record the kernel's page-allocator tracepoints (six kmem events)
//! while a command runs, so a real workload's alloc/free stream can be counted and replayed
//! offline.
//!
//! Why this shape: a private tracefs instance keeps the global trace buffer and anyone else's
//! settings untouched; `trace_pipe` is streamed into a gzip file while the command runs, so the
//! per-CPU ring buffers only have to absorb bursts; /proc snapshots (zoneinfo, buddyinfo,
//! pagetypeinfo, vmstat) before and after give the replay its machine and a cross-check; and the
//! per-CPU ring-buffer stats are checked at the end, because a trace with silently lost events
//! would replay as leaks or double frees. Every kernel-side change (instance, tracefs mount) is
//! undone by a guard's Drop, on error paths and on Ctrl-C too.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use flate2::write::GzEncoder;

use super::child::{run_command, RunOutcome, SignalGuard};
use super::ring_stats::{loss_report, read_all_cpu_stats, CpuStats};
use flate2::Compression;

/// The kmem tracepoints recorded (all under `events/kmem/`).
const EVENTS: [&str; 6] = [
    "mm_page_alloc",
    "mm_page_free",
    "mm_page_free_batched",
    "mm_page_alloc_zone_locked",
    "mm_page_pcpu_drain",
    "mm_page_alloc_extfrag",
];
/// /proc files saved as `<name>.before` and `<name>.after`.
const PROC_SNAPSHOTS: [&str; 4] = ["zoneinfo", "buddyinfo", "pagetypeinfo", "vmstat"];
const RELEASE: &str = "/proc/sys/kernel/osrelease";
const TRACE_FILE: &str = "trace.txt.gz";
const SUMMARY_FILE: &str = "capture.json";
const TRACEFS_CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
const READ_BUFFER_BYTES: usize = 1 << 20;
const POLL: Duration = Duration::from_millis(10);

/// `pagelab trace capture` arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct CaptureArgs {
    /// Output directory (created; files inside are overwritten).
    #[arg(long, default_value = "pagelab-trace")]
    pub out: std::path::PathBuf,
    /// Stop the command (SIGTERM, then SIGKILL after 2 s) after this many seconds.
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Per-CPU ring buffer, KiB.
    #[arg(long, default_value_t = 65536)]
    pub buffer_kib: u64,
    /// Read /proc/zoneinfo every N ms while the command runs, each read marked in the trace
    /// (`zoneinfo.samples`; the replay sets the kernel's pagesets beside its own); 0: never.
    #[arg(long, default_value_t = 100)]
    pub sample_ms: u64,
    /// Leave the pagesets as they are (by default each CPU first faults and frees more
    /// order-0 movable pages than its pagesets hold, so they start with those alone).
    #[arg(long)]
    pub no_settle: bool,
    /// The command to run while tracing.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// What a capture did; written to `<out>/capture.json`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CaptureSummary {
    pub command: Vec<String>,
    pub seconds_limit: Option<u64>,
    /// True if the command was stopped (by --seconds or by SIGINT/SIGTERM to pagelab).
    pub stopped_early: bool,
    /// From spawning the command to reaping it.
    pub wall_ms: u64,
    /// The command's exit code; None if a signal ended it.
    pub exit_status: Option<i32>,
    /// The signal that ended the command, if any.
    pub exit_signal: Option<i32>,
    /// Trace lines written (one event each).
    pub events: u64,
    /// /proc/zoneinfo samples taken while the command ran (`--sample-ms`).
    pub zoneinfo_samples: u64,
    /// Uncompressed trace text, bytes.
    pub trace_bytes: u64,
    pub buffer_kib: u64,
    pub per_cpu: Vec<CpuStats>,
    /// File name inside the output directory.
    pub trace_file: String,
    /// The tracefs mount used (one pagelab mounted itself is unmounted again).
    pub tracefs: String,
    pub kernel_release: String,
    /// The last-level cache of CPU 0 (sysfs `cpu0/cache/index*`), KiB, and the CPUs sharing
    /// it: whether pagesets free in batches depends on it, so the replay reads it here.
    pub llc_kib: Option<u64>,
    pub llc_cpus: Option<u32>,
    /// Pages each CPU faulted and freed to settle its pagesets before the snapshot (0: not
    /// settled).
    pub settled_pages: u64,
}

/// Runs the capture; Err(message) on any failure (the caller prints it and exits non-zero).
pub fn capture(args: &CaptureArgs) -> Result<CaptureSummary, String> {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("pagelab trace capture needs root: tracefs instances can only be set up by root".into());
    }
    if args.command.is_empty() || args.buffer_kib == 0 {
        return Err("pagelab trace capture needs a command after `--` and a non-zero --buffer-kib".into());
    }
    let _signals = SignalGuard::install();
    fs::create_dir_all(&args.out).map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let tracefs = Tracefs::find_or_mount()?;
    check_events(&tracefs.root)?;
    let instance = Instance::create(&tracefs.root)?;
    instance.configure(args.buffer_kib)?;
    let settled_pages = if args.no_settle { 0 } else { super::settle::settle_pagesets()? };
    snapshot(&args.out, "before")?;
    let (events, trace_bytes, zoneinfo_samples, run) = trace_command(&instance, args)?;
    let per_cpu = read_all_cpu_stats(&instance.path)?;
    snapshot(&args.out, "after")?;
    let llc = host_llc();
    let summary = CaptureSummary {
        command: args.command.clone(),
        seconds_limit: args.seconds,
        stopped_early: run.stopped_early,
        wall_ms: run.wall_ms,
        exit_status: run.status.code(),
        exit_signal: run.status.signal(),
        events,
        zoneinfo_samples,
        trace_bytes,
        buffer_kib: args.buffer_kib,
        per_cpu,
        trace_file: TRACE_FILE.into(),
        tracefs: tracefs.root.display().to_string(),
        kernel_release: fs::read_to_string(RELEASE).map_err(|e| format!("cannot read {RELEASE}: {e}"))?.trim().into(),
        llc_kib: llc.map(|(kib, _)| kib),
        llc_cpus: llc.map(|(_, cpus)| cpus),
        settled_pages,
    };
    let json_path = args.out.join(SUMMARY_FILE);
    let json = serde_json::to_string_pretty(&summary).map_err(|e| format!("cannot encode the summary: {e}"))?;
    fs::write(&json_path, json + "\n").map_err(|e| format!("cannot write {}: {e}", json_path.display()))?;
    match loss_report(&summary.per_cpu, args.buffer_kib) {
        Some(message) => Err(message),
        None => Ok(summary),
    }
}

/// The tracefs mount in use; unmounts it on drop if pagelab mounted it.
struct Tracefs {
    root: PathBuf,
    mounted: bool,
}

impl Tracefs {
    fn find_or_mount() -> Result<Self, String> {
        if let Some(root) = TRACEFS_CANDIDATES.iter().map(Path::new).find(|p| p.join("events/kmem").is_dir()) {
            return Ok(Tracefs { root: root.to_path_buf(), mounted: false });
        }
        let dir = std::env::temp_dir().join(format!("pagelab-tracefs-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let target = CString::new(dir.as_os_str().as_bytes()).map_err(|_| format!("bad path {}", dir.display()))?;
        // SAFETY: both paths are NUL-terminated CStrings alive for the call; no data argument.
        let rc = unsafe { libc::mount(c"nodev".as_ptr(), target.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) };
        if rc != 0 {
            let error = io::Error::last_os_error();
            let _ = fs::remove_dir(&dir);
            let (tried, dir) = (TRACEFS_CANDIDATES.join(" or "), dir.display());
            return Err(format!(
                "tracefs with events/kmem is not under {tried}, and mounting it on {dir} failed: {error}"
            ));
        }
        Ok(Tracefs { root: dir, mounted: true })
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if !self.mounted {
            return;
        }
        let Ok(target) = CString::new(self.root.as_os_str().as_bytes()) else { return };
        // SAFETY: a NUL-terminated path alive for the calls.
        let unmounted =
            unsafe { libc::umount2(target.as_ptr(), 0) == 0 || libc::umount2(target.as_ptr(), libc::MNT_DETACH) == 0 };
        if !unmounted {
            eprintln!("warning: cannot unmount {}: {}", self.root.display(), io::Error::last_os_error());
            return;
        }
        let _ = fs::remove_dir(&self.root);
    }
}

/// CPU 0's last-level cache: (KiB, CPUs sharing it), as calibrate reads the host.
fn host_llc() -> Option<(u64, u32)> {
    let host = crate::machine::host::read_host().ok()?;
    Some((host.llc_kib()?, host.llc_sharers()?))
}

/// Refuses a kernel that lacks any of the six kmem tracepoints.
fn check_events(tracefs: &Path) -> Result<(), String> {
    let kmem = tracefs.join("events/kmem");
    let missing: Vec<&str> = EVENTS.iter().copied().filter(|e| !kmem.join(e).is_dir()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!("this kernel lacks the kmem tracepoint(s) {} (not under {})", missing.join(", "), kmem.display()))
}

/// A private trace instance (`instances/pagelab-<pid>`); removed on drop.
struct Instance {
    path: PathBuf,
}

impl Instance {
    fn create(tracefs: &Path) -> Result<Self, String> {
        let path = tracefs.join("instances").join(format!("pagelab-{}", std::process::id()));
        fs::create_dir(&path).map_err(|e| format!("cannot create the trace instance {}: {e}", path.display()))?;
        Ok(Instance { path })
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.path.join(file);
        fs::write(&path, value).map_err(|e| format!("cannot write {value:?} to {}: {e}", path.display()))
    }

    /// Tracing off (a new instance starts on), clock, buffer size, the six events, empty buffer.
    fn configure(&self, buffer_kib: u64) -> Result<(), String> {
        self.write("tracing_on", "0")?;
        self.write("trace_clock", "local")?;
        self.write("buffer_size_kb", &buffer_kib.to_string())?;
        for event in EVENTS {
            self.write(&format!("events/kmem/{event}/enable"), "1")?;
        }
        self.write("trace", "")
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        for _ in 0..40 {
            match fs::remove_dir(&self.path) {
                Ok(()) => return,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => thread::sleep(Duration::from_millis(50)),
                Err(e) => return eprintln!("warning: cannot remove trace instance {}: {e}", self.path.display()),
            }
        }
        eprintln!("warning: trace instance {} stayed busy; remove it with rmdir", self.path.display());
    }
}

/// Copies each of PROC_SNAPSHOTS to `<out>/<name>.<suffix>`.
fn snapshot(out: &Path, suffix: &str) -> Result<(), String> {
    for name in PROC_SNAPSHOTS {
        let source = Path::new("/proc").join(name);
        let bytes = fs::read(&source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
        let target = out.join(format!("{name}.{suffix}"));
        fs::write(&target, bytes).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    Ok(())
}

/// Streams the instance's `trace_pipe` into the trace file (a reader thread) while the command
/// runs with tracing on; returns (lines, bytes, outcome) once the reader has drained the buffer.
fn trace_command(instance: &Instance, args: &CaptureArgs) -> Result<(u64, u64, u64, RunOutcome), String> {
    let pipe = instance.path.join("trace_pipe");
    let input = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&pipe)
        .map_err(|e| format!("cannot open {}: {e}", pipe.display()))?;
    let out = args.out.join(TRACE_FILE);
    let output = File::create(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let stop = AtomicBool::new(false);
    let stop_sampling = AtomicBool::new(false);
    thread::scope(|scope| {
        let reader = thread::Builder::new()
            .name("trace-reader".into())
            .spawn_scoped(scope, || pump(input, output, &stop, &pipe, &out))
            .map_err(|e| format!("cannot start the trace reader thread: {e}"))?;
        let on = instance.write("tracing_on", "1");
        let period = Duration::from_millis(args.sample_ms);
        let sampler = (on.is_ok() && args.sample_ms > 0).then(|| {
            let stop_sampling = &stop_sampling;
            scope.spawn(move || super::samples::run_sampler(&instance.path, &args.out, period, stop_sampling))
        });
        let run = on.and_then(|()| run_command(&args.command, args.seconds));
        stop_sampling.store(true, Ordering::SeqCst);
        let sampled = sampler.map(|thread| thread.join().map_err(|_| "the sampler thread panicked".to_string()));
        // Tracing off before stopping the reader, on every path: it stops only on an empty buffer.
        let off = instance.write("tracing_on", "0");
        stop.store(true, Ordering::SeqCst);
        let drained = reader.join().map_err(|_| "the trace reader thread panicked".to_string())?;
        let run = run?;
        off?;
        let samples = super::samples::taken_or_warn(sampled.transpose()?);
        let (lines, bytes) = drained?;
        Ok((lines, bytes, samples, run))
    })
}

/// Reads `trace_pipe` (non-blocking) into a gzip file until `stop` is set and two reads begun
/// after that found the buffer empty. Returns (lines, bytes) written.
fn pump(mut input: File, output: File, stop: &AtomicBool, pipe: &Path, out: &Path) -> Result<(u64, u64), String> {
    let write_error = |e: io::Error| format!("cannot write {}: {e}", out.display());
    let mut gz = GzEncoder::new(BufWriter::with_capacity(READ_BUFFER_BYTES, output), Compression::fast());
    let mut buffer = vec![0u8; READ_BUFFER_BYTES];
    let (mut lines, mut bytes, mut empty_after_stop) = (0u64, 0u64, 0u32);
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        match input.read(&mut buffer) {
            Ok(n) if n > 0 => {
                empty_after_stop = 0;
                lines += count_lines(&buffer[..n]);
                bytes += n as u64;
                gz.write_all(&buffer[..n]).map_err(write_error)?;
                continue;
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read {}: {e}", pipe.display())),
        }
        if stopping {
            empty_after_stop += 1;
            if empty_after_stop >= 2 {
                break;
            }
        }
        thread::sleep(POLL);
    }
    let buffered = gz.finish().map_err(write_error)?;
    buffered.into_inner().map_err(|e| write_error(e.into_error()))?;
    Ok((lines, bytes))
}

fn count_lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn counts_newlines() {
        assert_eq!(count_lines(b"a\nb\n\nc"), 3);
        assert_eq!(count_lines(b""), 0);
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        capture: CaptureArgs,
    }

    #[test]
    fn arguments_take_the_command_after_dashes() {
        let cli = Cli::try_parse_from(["pagelab", "--seconds", "3", "--", "sh", "-c", "ls --all"]).expect("parses");
        assert_eq!(cli.capture.command, ["sh", "-c", "ls --all"]);
        assert_eq!(cli.capture.seconds, Some(3));
        assert_eq!(cli.capture.buffer_kib, 65536);
        assert_eq!(cli.capture.out, PathBuf::from("pagelab-trace"));
        assert!(Cli::try_parse_from(["pagelab"]).is_err());
    }
}
