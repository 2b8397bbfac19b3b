//! The traced command as a child process: inherited stdio, stopped at the time limit
//! (SIGTERM, then SIGKILL after a grace period) or when pagelab itself is interrupted, so a
//! capture's guards always get to clean up.

use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(10);
const KILL_GRACE: Duration = Duration::from_secs(2);

pub struct RunOutcome {
    pub status: ExitStatus,
    pub wall_ms: u64,
    pub stopped_early: bool,
}

/// Runs the command with inherited stdio; stops it (SIGTERM, SIGKILL after KILL_GRACE) at the
/// --seconds limit or when pagelab itself is interrupted.
pub fn run_command(command: &[String], seconds: Option<u64>) -> Result<RunOutcome, String> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err("interrupted before the command started".into());
    }
    let start = Instant::now();
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command[0]))?;
    let pid = child.id() as libc::pid_t;
    let deadline = seconds.map(|s| start + Duration::from_secs(s));
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
                return Err(format!("cannot wait for {:?}: {e}", command[0]));
            }
        }
        let now = Instant::now();
        match term_sent {
            None if deadline.is_some_and(|d| now >= d) || INTERRUPTED.load(Ordering::SeqCst) => {
                // SAFETY: kill(2) on our own child's pid, not yet reaped (try_wait saw it
                // running), so the pid cannot have been reused.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                term_sent = Some(now);
            }
            Some(sent) if !kill_sent && now - sent >= KILL_GRACE => {
                // SAFETY: as above: our unreaped child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                kill_sent = true;
            }
            _ => {}
        }
        thread::sleep(POLL);
    }
}

/// Set by SIGINT/SIGTERM while a capture runs.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_interrupt(_signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catches SIGINT and SIGTERM during a capture, so Ctrl-C stops the command and the guards still
/// clean up; restores the previous handlers on drop. Exec resets caught signals to the default,
/// so the command itself still gets Ctrl-C normally.
pub struct SignalGuard([(libc::c_int, libc::sighandler_t); 2]);

impl SignalGuard {
    pub fn install() -> Self {
        INTERRUPTED.store(false, Ordering::SeqCst);
        let handler = note_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the
        // previous dispositions are kept and restored on drop.
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
            // SAFETY: restores the disposition signal(2) returned for this signal.
            unsafe { libc::signal(signal, previous) };
        }
    }
}
