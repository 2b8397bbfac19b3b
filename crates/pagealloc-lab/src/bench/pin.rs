//! Pinning benchmark threads to CPUs.

/// Pins the calling thread to `cpu` (modulo the CPUs available); false if the OS refused.
pub fn pin_to_cpu(cpu: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        // SAFETY: cpu_set_t is plain data, zero is a valid (empty) set; CPU_SET writes within
        // it for an index below CPU_SETSIZE; sched_setaffinity reads `size_of` bytes of it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu % cpus, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        false
    }
}
