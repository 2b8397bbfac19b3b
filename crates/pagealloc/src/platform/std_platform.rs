//! Real threads on a real machine: CPU id read from the thread's rseq area (falling back to
//! `sched_getcpu`), a monotonic clock, and hooks that compile to nothing.
//!
//! Zone locks are parking_lot's adaptive mutex rather than the kernel's FIFO spinlock: a
//! userspace thread can be preempted while holding or waiting for a lock, and a FIFO
//! spinlock then convoys behind the preempted waiter (docs/decisions.md has the measurement).

use std::time::Instant;

use super::rseq_cpu::RseqCpu;
use super::{Platform, TasLock};

pub struct StdPlatform {
    nr_cpus: usize,
    epoch: Instant,
    rseq: RseqCpu,
}

impl StdPlatform {
    /// Platform with one per-CPU slot per CPU the machine has (configured CPUs, not the ones
    /// this process may use now): under taskset or a cgroup quota the process still runs on
    /// CPUs with their own ids, and sizing by the allowed count would fold unrelated CPUs
    /// onto one pageset.
    pub fn new() -> StdPlatform {
        StdPlatform::with_cpus(configured_cpus())
    }

    /// Platform with `nr_cpus` slots; CPU ids the OS reports are folded into that range.
    pub fn with_cpus(nr_cpus: usize) -> StdPlatform {
        assert!(nr_cpus > 0, "a platform needs at least one CPU");
        StdPlatform { nr_cpus, epoch: Instant::now(), rseq: RseqCpu::detect() }
    }
}

impl core::fmt::Debug for StdPlatform {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StdPlatform").field("nr_cpus", &self.nr_cpus).finish_non_exhaustive()
    }
}

impl Default for StdPlatform {
    fn default() -> Self {
        StdPlatform::new()
    }
}

impl Platform for StdPlatform {
    type RawLock = parking_lot::RawMutex;
    type PcpLock = TasLock;

    #[inline]
    fn current_cpu(&self) -> usize {
        let cpu = match self.rseq.current() {
            Some(cpu) => cpu as usize,
            None => sched_getcpu(),
        };
        if cpu < self.nr_cpus {
            cpu
        } else {
            cpu % self.nr_cpus
        }
    }

    fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }
}

/// CPUs the machine has (sysconf(_SC_NPROCESSORS_CONF)), at least the ones this process may
/// use; the allowed count where the OS does not say.
fn configured_cpus() -> usize {
    let allowed = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf takes a constant name and reads no caller memory.
        let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        if configured > 0 {
            return (configured as usize).max(allowed);
        }
    }
    allowed
}

/// The kernel's answer through glibc (a library call; the vDSO or a system call when
/// rseq is not registered).
#[cold]
fn sched_getcpu() -> usize {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sched_getcpu takes no arguments and only reads per-thread kernel state.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 {
            return cpu as usize;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under an affinity mask (taskset), the platform still numbers CPUs as the machine does:
    /// a thread allowed only the last CPU reports that CPU, not CPU 0 folded from a
    /// one-CPU count (which made unrelated CPUs share a pageset).
    #[test]
    fn an_affinity_mask_does_not_fold_cpu_ids() {
        let configured = configured_cpus();
        if configured < 2 {
            return; // nothing to fold on a one-CPU machine
        }
        let last = configured - 1;
        let platform = std::thread::spawn(move || {
            // SAFETY: as in sched_getcpu's use of libc; the set is plain data, zero is empty,
            // CPU_SET writes within it for last < CPU_SETSIZE.
            let pinned = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(last, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
            };
            assert!(pinned, "pin to CPU {last}");
            let platform = StdPlatform::new();
            (platform.nr_cpus(), platform.current_cpu())
        })
        .join()
        .unwrap();
        assert_eq!(platform, (configured, last));
    }

    /// A thread pinned to each CPU it may use, in turn, reports exactly that CPU, below
    /// nr_cpus (a folded, stale or out-of-range id fails here).
    #[test]
    fn a_thread_pinned_to_each_allowed_cpu_reports_it() {
        let platform = StdPlatform::new();
        let allowed: std::vec::Vec<usize> = std::thread::spawn(|| {
            // SAFETY: the set is plain data written by the kernel; CPU_ISSET reads within it.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
                (0..libc::CPU_SETSIZE as usize).filter(|&cpu| libc::CPU_ISSET(cpu, &set)).collect()
            }
        })
        .join()
        .unwrap();
        assert!(!allowed.is_empty());
        for cpu in allowed {
            let reported = std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        // SAFETY: as above; CPU_SET writes within the set for cpu < CPU_SETSIZE.
                        let pinned = unsafe {
                            let mut set: libc::cpu_set_t = std::mem::zeroed();
                            libc::CPU_SET(cpu, &mut set);
                            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
                        };
                        assert!(pinned, "pin to CPU {cpu}");
                        (0..1000).map(|_| platform.current_cpu()).collect::<std::vec::Vec<_>>()
                    })
                    .join()
                    .unwrap()
            });
            assert!(cpu < platform.nr_cpus(), "CPU {cpu} beyond nr_cpus {}", platform.nr_cpus());
            assert!(reported.iter().all(|&r| r == cpu), "pinned to {cpu}, reported {:?}", &reported[..8]);
        }
    }

    #[test]
    fn rseq_and_sched_getcpu_agree() {
        let platform = StdPlatform::with_cpus(1024);
        // A thread may migrate between the two reads; retry a few times.
        let agreed = (0..100).any(|_| platform.current_cpu() == sched_getcpu());
        assert!(agreed, "rseq cpu {} vs sched_getcpu {}", platform.current_cpu(), sched_getcpu());
    }
}
