//! The current CPU read straight from the thread's rseq area, which glibc (>= 2.35)
//! registers for every thread and the kernel keeps up to date on every return to user
//! space. One load through the thread pointer, where `sched_getcpu()` is a library call,
//! made twice per allocation and free pair (its cost: docs/decisions.md).

/// Where this process's rseq area sits relative to the thread pointer, if glibc
/// registered one (x86-64 only; elsewhere callers use `sched_getcpu()`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RseqCpu {
    offset_bytes: Option<isize>,
}

/// Byte offset of `cpu_id` in the kernel's `struct rseq` (after `cpu_id_start`).
const CPU_ID_OFFSET_BYTES: isize = 4;

impl RseqCpu {
    /// Looks up glibc's `__rseq_offset` and `__rseq_size`. A size of 0 means rseq is not
    /// registered (an old kernel, a tunable turned it off, or a tool such as valgrind).
    pub(crate) fn detect() -> RseqCpu {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            // SAFETY: dlsym only reads the loaded objects' symbol tables. A non-null result
            // is the address of glibc's exported variable of that name: `__rseq_size` is an
            // unsigned int and `__rseq_offset` a ptrdiff_t, both set before main runs and
            // constant afterwards, so reading them through correctly typed pointers is sound.
            unsafe {
                let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()) as *const u32;
                let offset = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()) as *const isize;
                if !size.is_null() && !offset.is_null() && *size >= 8 {
                    return RseqCpu { offset_bytes: Some(*offset) };
                }
            }
        }
        RseqCpu { offset_bytes: None }
    }

    /// The CPU this thread last ran on, or `None` if rseq is unavailable to this thread.
    #[inline(always)]
    pub(crate) fn current(&self) -> Option<u32> {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let offset_bytes = self.offset_bytes?;
            let thread_pointer: usize;
            // SAFETY: on x86-64 Linux the TCB's first word (%fs:0) holds the thread pointer
            // itself; reading it has no side effects.
            unsafe {
                core::arch::asm!("mov {}, fs:0", out(reg) thread_pointer, options(nostack, readonly, preserves_flags));
            }
            let cpu_id = (thread_pointer as isize + offset_bytes + CPU_ID_OFFSET_BYTES) as *const u32;
            // SAFETY: `detect` found a registered rseq area, which glibc places at thread
            // pointer + __rseq_offset in every thread for the thread's lifetime; `cpu_id` is
            // a 4-byte aligned u32 in it. Volatile: the kernel rewrites it behind our back.
            let cpu = unsafe { core::ptr::read_volatile(cpu_id) };
            // Negative values mean "not registered" (this thread's registration failed).
            return (cpu as i32 >= 0).then_some(cpu);
        }
        #[allow(unreachable_code)]
        None
    }
}
