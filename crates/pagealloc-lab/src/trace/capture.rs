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
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
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
const KILL_GRACE: Duration = Duration::from_secs(2);

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
    /// The command to run while tracing.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// One CPU's ring-buffer loss counters (from `per_cpu/cpuN/stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuStats {
    pub cpu: u32,
    /// Events overwritten before they were read.
    pub overrun: u64,
    pub commit_overrun: u64,
    /// Events not recorded because the buffer was full.
    pub dropped_events: u64,
}

impl CpuStats {
    fn lost(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped_events
    }
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
    /// Uncompressed trace text, bytes.
    pub trace_bytes: u64,
    pub buffer_kib: u64,
    pub per_cpu: Vec<CpuStats>,
    /// File name inside the output directory.
    pub trace_file: String,
    /// The tracefs mount used (one pagelab mounted itself is unmounted again).
    pub tracefs: String,
    pub kernel_release: String,
}

/// Runs the capture; Err(message) on any failure (the caller prints it and exits non-zero).
pub fn capture(args: &CaptureArgs) -> Result<CaptureSummary, String> {
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
    snapshot(&args.out, "before")?;
    let (events, trace_bytes, run) = trace_command(&instance, args)?;
    let per_cpu = read_all_cpu_stats(&instance.path)?;
    snapshot(&args.out, "after")?;
    let summary = CaptureSummary {
        command: args.command.clone(),
        seconds_limit: args.seconds,
        stopped_early: run.stopped_early,
        wall_ms: run.wall_ms,
        exit_status: run.status.code(),
        exit_signal: run.status.signal(),
        events,
        trace_bytes,
        buffer_kib: args.buffer_kib,
        per_cpu,
        trace_file: TRACE_FILE.into(),
        tracefs: tracefs.root.display().to_string(),
        kernel_release: fs::read_to_string(RELEASE).map_err(|e| format!("cannot read {RELEASE}: {e}"))?.trim().into(),
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
        let unmounted =
            unsafe { libc::umount2(target.as_ptr(), 0) == 0 || libc::umount2(target.as_ptr(), libc::MNT_DETACH) == 0 };
        if !unmounted {
            eprintln!("warning: cannot unmount {}: {}", self.root.display(), io::Error::last_os_error());
            return;
        }
        let _ = fs::remove_dir(&self.root);
    }
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
fn trace_command(instance: &Instance, args: &CaptureArgs) -> Result<(u64, u64, RunOutcome), String> {
    let pipe = instance.path.join("trace_pipe");
    let input = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&pipe)
        .map_err(|e| format!("cannot open {}: {e}", pipe.display()))?;
    let out = args.out.join(TRACE_FILE);
    let output = File::create(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        let reader = thread::Builder::new()
            .name("trace-reader".into())
            .spawn_scoped(scope, || pump(input, output, &stop, &pipe, &out))
            .map_err(|e| format!("cannot start the trace reader thread: {e}"))?;
        let run = instance.write("tracing_on", "1").and_then(|()| run_command(args));
        // Tracing off before stopping the reader, on every path: it stops only on an empty buffer.
        let off = instance.write("tracing_on", "0");
        stop.store(true, Ordering::SeqCst);
        let drained = reader.join().map_err(|_| "the trace reader thread panicked".to_string())?;
        let run = run?;
        off?;
        let (lines, bytes) = drained?;
        Ok((lines, bytes, run))
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

struct RunOutcome {
    status: ExitStatus,
    wall_ms: u64,
    stopped_early: bool,
}

/// Runs the command with inherited stdio; stops it (SIGTERM, SIGKILL after KILL_GRACE) at the
/// --seconds limit or when pagelab itself is interrupted.
fn run_command(args: &CaptureArgs) -> Result<RunOutcome, String> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err("interrupted before the command started".into());
    }
    let start = Instant::now();
    let mut child = Command::new(&args.command[0])
        .args(&args.command[1..])
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", args.command[0]))?;
    let pid = child.id() as libc::pid_t;
    let deadline = args.seconds.map(|s| start + Duration::from_secs(s));
    let (mut term_sent, mut kill_sent) = (None::<Instant>, false);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let wall_ms = start.elapsed().as_millis() as u64;
                return Ok(RunOutcome { status, wall_ms, stopped_early: term_sent.is_some() });
            }
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("cannot wait for {:?}: {e}", args.command[0]));
            }
        }
        let now = Instant::now();
        match term_sent {
            None if deadline.is_some_and(|d| now >= d) || INTERRUPTED.load(Ordering::SeqCst) => {
                unsafe { libc::kill(pid, libc::SIGTERM) };
                term_sent = Some(now);
            }
            Some(sent) if !kill_sent && now - sent >= KILL_GRACE => {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                kill_sent = true;
            }
            _ => {}
        }
        thread::sleep(POLL);
    }
}

/// Set by SIGINT/SIGTERM while a capture runs.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_interrupt(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catches SIGINT and SIGTERM during a capture, so Ctrl-C stops the command and the guards still
/// clean up; restores the previous handlers on drop. Exec resets caught signals to the default,
/// so the command itself still gets Ctrl-C normally.
struct SignalGuard([(libc::c_int, libc::sighandler_t); 2]);

impl SignalGuard {
    fn install() -> Self {
        INTERRUPTED.store(false, Ordering::SeqCst);
        let handler = note_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        SignalGuard([libc::SIGINT, libc::SIGTERM].map(|signal| unsafe {
            let previous = libc::signal(signal, handler);
            if previous == libc::SIG_IGN {
                libc::signal(signal, libc::SIG_IGN); // an ignored signal stays ignored, for the command too
            }
            (signal, previous)
        }))
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for &(signal, previous) in &self.0 {
            unsafe { libc::signal(signal, previous) };
        }
    }
}

/// Parses one CPU's `per_cpu/cpuN/stats` text (lines such as `overrun: 0`).
fn parse_cpu_stats(cpu: u32, text: &str) -> Result<CpuStats, String> {
    let mut stats = CpuStats { cpu, ..CpuStats::default() };
    let mut seen = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let field = match key.trim() {
            "overrun" => &mut stats.overrun,
            "commit overrun" => &mut stats.commit_overrun,
            "dropped events" => &mut stats.dropped_events,
            _ => continue,
        };
        *field = value.trim().parse().map_err(|_| format!("cpu{cpu} stats: cannot parse {line:?}"))?;
        seen += 1;
    }
    if seen != 3 {
        return Err(format!("cpu{cpu} stats: expected overrun, commit overrun and dropped events lines"));
    }
    Ok(stats)
}

/// The stats of every CPU directory under `<instance>/per_cpu`, by CPU number.
fn read_all_cpu_stats(instance: &Path) -> Result<Vec<CpuStats>, String> {
    let dir = instance.join("per_cpu");
    let entries = fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut all = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name();
        let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        let path = entry.path().join("stats");
        let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        all.push(parse_cpu_stats(cpu, &text)?);
    }
    all.sort_by_key(|s| s.cpu);
    Ok(all)
}

/// None if no CPU lost events; else a message naming the CPUs and their losses.
fn loss_report(per_cpu: &[CpuStats], buffer_kib: u64) -> Option<String> {
    let lossy: Vec<String> = per_cpu
        .iter()
        .filter(|s| s.lost() > 0)
        .map(|s| {
            format!(
                "cpu{} lost {} (overrun {}, commit overrun {}, dropped {})",
                s.cpu,
                s.lost(),
                s.overrun,
                s.commit_overrun,
                s.dropped_events
            )
        })
        .collect();
    if lossy.is_empty() {
        return None;
    }
    let total: u64 = per_cpu.iter().map(CpuStats::lost).sum();
    Some(format!(
        "the trace ring buffer lost {total} events: {}; the files were written but the trace is incomplete; \
         rerun with a larger --buffer-kib than {buffer_kib} (e.g. {})",
        lossy.join(", "),
        buffer_kib.saturating_mul(4)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    const STATS: &str = "entries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 4096\n\
        oldest event ts:  16297.098371\nnow ts: 16628.329822\ndropped events: 7\nread events: 100\n";

    #[test]
    fn parses_the_three_loss_counters() {
        let stats = parse_cpu_stats(1, STATS).expect("parses");
        assert_eq!(stats, CpuStats { cpu: 1, overrun: 3, commit_overrun: 0, dropped_events: 7 });
        assert_eq!(stats.lost(), 10);
    }

    #[test]
    fn rejects_missing_or_bad_counters() {
        assert!(parse_cpu_stats(0, "entries: 0\noverrun: 0\n").is_err());
        let bad = STATS.replace("overrun: 3", "overrun: x");
        assert!(parse_cpu_stats(0, &bad).unwrap_err().contains("overrun: x"));
    }

    #[test]
    fn loss_report_is_silent_without_losses() {
        let clean = [CpuStats { cpu: 0, ..CpuStats::default() }, CpuStats { cpu: 1, ..CpuStats::default() }];
        assert_eq!(loss_report(&clean, 65536), None);
    }

    #[test]
    fn loss_report_names_cpus_counts_and_remedy() {
        let per_cpu = [
            CpuStats { cpu: 0, ..CpuStats::default() },
            CpuStats { cpu: 3, overrun: 5, commit_overrun: 1, dropped_events: 2 },
        ];
        let message = loss_report(&per_cpu, 1024).expect("reports");
        assert!(message.contains("lost 8 events"), "{message}");
        assert!(message.contains("cpu3 lost 8 (overrun 5, commit overrun 1, dropped 2)"), "{message}");
        assert!(!message.contains("cpu0"), "{message}");
        assert!(message.contains("--buffer-kib") && message.contains("4096"), "{message}");
    }

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
