//! The real kernel on workloads the profile does not measure, for `calibrate --check`:
//! page_fault1 at several tasks (processes or threads, each pinned to its own CPU), and a
//! sender and a receiver on two CPUs streaming AF_UNIX messages.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Barrier;
use std::time::Instant;

use super::kernel::{page_fault1, FAULT_MAP_PAGES};
use crate::machine::profile::Measurement;
use crate::pinning::pin_to_cpu_id;

const PAGES_PER_ROUND: u64 = FAULT_MAP_PAGES as u64;

/// page_fault1 with one forked process per CPU of `cpus`, `rounds` rounds each: faults per
/// second over all of them, from the fork to the last exit.
fn processes_once(cpus: &[usize], rounds: usize) -> Result<f64, String> {
    if let Some(&cpu) = cpus.iter().find(|&&cpu| cpu >= libc::CPU_SETSIZE as usize) {
        return Err(format!("CPU {cpu} is beyond what sched_setaffinity takes"));
    }
    let start = Instant::now();
    let mut children = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        // SAFETY: the child calls only system calls (sched_setaffinity, mmap, madvise,
        // munmap), stores to its own mapping, and _exit: it allocates nothing and takes no
        // lock, so a lock another thread of the parent held at the fork cannot block it, and
        // nothing in it can panic (the CPU was checked above).
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => return Err(format!("fork: {}", std::io::Error::last_os_error())),
            0 => {
                let ok = crate::pinning::pin_without_allocating(cpu) && super::kernel::fault_rounds(rounds);
                // SAFETY: ends the child at once, without running the parent's destructors.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            child => children.push(child),
        }
    }
    let mut failed = false;
    for child in children {
        let mut status = 0;
        // SAFETY: waits for a child this function forked.
        let waited = unsafe { libc::waitpid(child, &mut status, 0) };
        failed |= waited != child || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0;
    }
    if failed {
        return Err("a page_fault1 process failed".into());
    }
    Ok((cpus.len() * rounds) as f64 * PAGES_PER_ROUND as f64 / start.elapsed().as_secs_f64())
}

/// page_fault1 with one thread per CPU of `cpus` in this process (one address space).
fn threads_once(cpus: &[usize], rounds: usize) -> Result<f64, String> {
    let elapsed_s = pinned_threads(cpus, "page_fault1", || page_fault1(rounds, 1).map(drop))?;
    Ok((cpus.len() * rounds) as f64 * PAGES_PER_ROUND as f64 / elapsed_s)
}

/// Runs `work` on a thread pinned to each CPU of `cpus`, all released at once: seconds from
/// the release to the last thread's end.
fn pinned_threads(cpus: &[usize], what: &str, work: impl Fn() -> Result<(), String> + Sync) -> Result<f64, String> {
    super::pinned::released_together(cpus, what, |_| Ok(()), |_, ()| work()).map(|(elapsed_s, _)| elapsed_s)
}

/// page_fault1 at `cpus.len()` tasks, faults per second, median of `repeats`.
pub fn page_fault1_tasks(cpus: &[usize], threads: bool, rounds: usize, repeats: usize) -> Result<Measurement, String> {
    let samples = (0..repeats)
        .map(|_| if threads { threads_once(cpus, rounds) } else { processes_once(cpus, rounds) })
        .collect::<Result<Vec<_>, _>>()?;
    let mode = if threads { "threads of one process" } else { "processes" };
    let method = format!(
        "page_fault1 as {} {mode} pinned to CPUs {cpus:?}, {rounds} rounds each; faults / wall time",
        cpus.len()
    );
    Ok(Measurement::from_samples(samples, "faults/s", &method))
}

/// A sender pinned to `cpus.0` writing `messages` of `bytes` to an AF_UNIX stream, and a
/// receiver pinned to `cpus.1` reading them: messages per second, median of `repeats`.
pub fn unix_pair(cpus: (usize, usize), bytes: usize, messages: usize, repeats: usize) -> Result<Measurement, String> {
    let samples = (0..repeats).map(|_| unix_pair_once(cpus, bytes, messages)).collect::<Result<Vec<_>, _>>()?;
    let method = format!(
        "AF_UNIX stream, sender on CPU {} and receiver on CPU {}: {messages} messages of {bytes} bytes; \
         messages / wall time",
        cpus.0, cpus.1
    );
    Ok(Measurement::from_samples(samples, "messages/s", &method))
}

fn unix_pair_once(cpus: (usize, usize), bytes: usize, messages: usize) -> Result<f64, String> {
    let (mut writer, mut reader) = UnixStream::pair().map_err(|error| format!("socketpair: {error}"))?;
    // Pinned before the sender starts: an error here leaves no thread waiting.
    pin_to_cpu_id(cpus.1)?;
    let barrier = Barrier::new(2);
    std::thread::scope(|scope| {
        let barrier = &barrier;
        // The sender owns its end: returning early closes it, and the reader sees the end.
        let sender = scope.spawn(move || -> Result<(), String> {
            let pinned = pin_to_cpu_id(cpus.0);
            barrier.wait();
            pinned?;
            let message = vec![0x5au8; bytes];
            for _ in 0..messages {
                writer.write_all(&message).map_err(|error| format!("write: {error}"))?;
            }
            Ok(())
        });
        let mut buffer = vec![0u8; bytes];
        barrier.wait();
        let start = Instant::now();
        let received = (0..messages).try_for_each(|_| reader.read_exact(&mut buffer));
        let elapsed_s = start.elapsed().as_secs_f64();
        // Closed before the join, so a sender blocked on a full buffer gets an error.
        drop(reader);
        let sent = sender.join().map_err(|_| "the sender panicked".to_string())?;
        sent?;
        received.map_err(|error| format!("read: {error}"))?;
        Ok(messages as f64 / elapsed_s)
    })
}

/// Pages `dd` writes in each process of [`process_churn`]: its one 4 MiB buffer.
pub const CHURN_PAGES: u64 = 1024;

/// `dd` reading 4 MiB of zeros into a fresh buffer and exiting: a process that spawns, faults
/// [`CHURN_PAGES`] anonymous pages in, and exits, as a build's processes do.
fn churn_process() -> std::process::Command {
    let mut command = std::process::Command::new("dd");
    command.args(["if=/dev/zero", "of=/dev/null", "bs=4M", "count=1", "status=none"]);
    command
}

/// One thread pinned to each CPU of `cpus` spawns `processes` of [`churn_process`] one after
/// another (the children inherit the pinning): processes per second over all of them.
fn process_churn_once(cpus: &[usize], processes: usize) -> Result<f64, String> {
    let elapsed_s = pinned_threads(cpus, "process-churn", || {
        for _ in 0..processes {
            let status = churn_process().status().map_err(|error| format!("dd: {error}"))?;
            if !status.success() {
                return Err(format!("dd exited with {status}"));
            }
        }
        Ok(())
    })?;
    Ok((cpus.len() * processes) as f64 / elapsed_s)
}

/// Process churn on `cpus`: processes per second, median of `repeats`.
pub fn process_churn(cpus: &[usize], processes: usize, repeats: usize) -> Result<Measurement, String> {
    let samples = (0..repeats).map(|_| process_churn_once(cpus, processes)).collect::<Result<Vec<_>, _>>()?;
    let method = format!(
        "a thread pinned to each of CPUs {cpus:?} spawns {processes} processes of `dd if=/dev/zero \
         of=/dev/null bs=4M count=1` one after another; processes / wall time"
    );
    Ok(Measurement::from_samples(samples, "processes/s", &method))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_cpu_loops_run() {
        let faults = page_fault1_tasks(&[0, 0], false, 1, 1).unwrap();
        assert!(faults.value > 0.0, "{faults:?}");
        let faults = page_fault1_tasks(&[0, 0], true, 1, 1).unwrap();
        assert!(faults.value > 0.0, "{faults:?}");
        let pair = unix_pair((0, 0), 4096, 1000, 1).unwrap();
        assert!(pair.value > 0.0, "{pair:?}");
        let churn = process_churn(&[0, 0], 2, 1).unwrap();
        assert!(churn.value > 0.0, "{churn:?}");
    }
}
