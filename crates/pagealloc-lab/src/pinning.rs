//! Pinning threads to CPUs: benchmark and workload threads to CPUs of the process's allowed
//! set (taskset, cgroups), so that thread `i` runs on the `i`-th allowed CPU and never on a
//! CPU the run was not given; and a calibration's threads to a CPU by its id.

/// The CPUs this process may run on, in order (sched_getaffinity); empty where unknown.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data and zero is a valid (empty) set; sched_getaffinity
        // writes at most `size_of` bytes into it; CPU_ISSET reads within it for indices below
        // CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Vec::new();
            }
            (0..libc::CPU_SETSIZE as usize).filter(|&cpu| libc::CPU_ISSET(cpu, &set)).collect()
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// Checks before a run that `threads` threads can each be pinned to a CPU of their own.
pub fn check_pinning(threads: usize) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        let allowed = allowed_cpus();
        if allowed.len() < threads {
            return Err(format!("{threads} pinned threads asked, this process may run on {} CPUs", allowed.len()));
        }
    }
    let _ = threads;
    Ok(())
}

/// Pins the calling thread to the `index`-th allowed CPU; returns that CPU. An error when the
/// OS refuses (the allowed set changed since `check_pinning`).
pub fn pin_to_cpu(index: usize) -> Result<usize, String> {
    #[cfg(target_os = "linux")]
    {
        let allowed = allowed_cpus();
        let Some(&cpu) = allowed.get(index % allowed.len().max(1)) else {
            return Err(String::from("no CPU is allowed for this process"));
        };
        // SAFETY: as in allowed_cpus; CPU_SET writes within the set for cpu < CPU_SETSIZE
        // (allowed_cpus only returns such indices).
        let pinned = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
        if pinned {
            Ok(cpu)
        } else {
            Err(format!("the OS refused to pin a thread to CPU {cpu}"))
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(index)
    }
}

/// Pins the calling thread to CPU `cpu` (its id, not an index into the allowed set).
pub fn pin_to_cpu_id(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("cannot pin to CPU {cpu}: beyond CPU_SETSIZE"));
    }
    if pin_without_allocating(cpu) {
        Ok(())
    } else {
        Err(format!("cannot pin to CPU {cpu}: {}", std::io::Error::last_os_error()))
    }
}

/// Pins the calling thread to CPU `cpu` (below CPU_SETSIZE) without allocating: for a forked
/// child of a threaded parent. Says whether it worked.
pub fn pin_without_allocating(cpu: usize) -> bool {
    // SAFETY: the set is zeroed then filled by the libc macros (the caller checked the CPU is
    // below CPU_SETSIZE); sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_pin_to_allowed_cpus_only() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let handle = std::thread::spawn(move || {
            let cpu = pin_to_cpu(allowed.len() + 1).unwrap();
            (cpu, allowed_cpus())
        });
        let (cpu, now_allowed) = handle.join().unwrap();
        assert_eq!(now_allowed, [cpu], "pinned to exactly one allowed CPU");
        assert!(check_pinning(usize::MAX).is_err(), "more threads than allowed CPUs is an error");
    }
}
