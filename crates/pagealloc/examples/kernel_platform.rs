//! A `Platform` as a `no_std` kernel would write it (docs/platform.md walks through it):
//! the CPU id from a per-CPU register, locks that keep interrupts off while held (frees
//! happen in interrupt context), and the cost hooks left empty. The "kernel" parts (the
//! per-CPU register, the interrupt flag) are stand-ins so the example runs on a host; the
//! rest is what a kernel writes.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pagealloc::lock_api::{GuardSend, RawMutex};
use pagealloc::platform::{Platform, TicketLock};
use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator};

/// Stand-ins for the architecture: on x86-64 `current_cpu` reads a per-CPU variable through
/// GS (`mov %gs:cpu_number, %eax`), and the interrupt flag is saved, cleared and restored
/// with `pushf; cli` / `popf`.
mod arch {
    use super::*;

    static INTERRUPTS_ON: AtomicBool = AtomicBool::new(true);

    std::thread_local! { static CPU: core::cell::Cell<usize> = const { core::cell::Cell::new(0) }; }

    pub fn current_cpu() -> usize {
        CPU.with(|cpu| cpu.get())
    }

    pub fn set_cpu(cpu: usize) {
        CPU.with(|slot| slot.set(cpu));
    }

    /// Disables interrupts; returns whether they were on.
    pub fn irq_save() -> bool {
        INTERRUPTS_ON.swap(false, Ordering::SeqCst)
    }

    pub fn irq_restore(were_on: bool) {
        INTERRUPTS_ON.store(were_on, Ordering::SeqCst);
    }

    pub fn interrupts_on() -> bool {
        INTERRUPTS_ON.load(Ordering::SeqCst)
    }

    /// A timer the kernel already has (the TSC, the HPET): nanoseconds since boot.
    pub fn now_ns() -> u64 {
        static TICKS: AtomicU64 = AtomicU64::new(0);
        TICKS.fetch_add(1_000, Ordering::Relaxed)
    }
}

/// A spinlock that keeps interrupts off while held (spin_lock_irqsave()): an interrupt
/// handler on this CPU that frees a page cannot then spin on a lock its own CPU holds.
/// Locks nest (a pageset lock, then the zone lock); each saves the flag it found when taken
/// and puts it back when released, so releasing in reverse order ends with the caller's.
pub struct IrqSafe {
    lock: TicketLock,
    interrupts_were_on: AtomicBool,
}

// SAFETY: the lock is the ticket lock's, whose exclusion lock_api's contract needs; the
// interrupt flag is only saved after the lock is taken and restored before it is released,
// by the holder.
unsafe impl RawMutex for IrqSafe {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: IrqSafe = IrqSafe { lock: TicketLock::INIT, interrupts_were_on: AtomicBool::new(false) };
    type GuardMarker = GuardSend;

    fn lock(&self) {
        let were_on = arch::irq_save();
        self.lock.lock();
        self.interrupts_were_on.store(were_on, Ordering::Relaxed);
    }

    fn try_lock(&self) -> bool {
        let were_on = arch::irq_save();
        if self.lock.try_lock() {
            self.interrupts_were_on.store(were_on, Ordering::Relaxed);
            true
        } else {
            arch::irq_restore(were_on);
            false
        }
    }

    unsafe fn unlock(&self) {
        let were_on = self.interrupts_were_on.load(Ordering::Relaxed);
        // SAFETY: the caller holds the lock (lock_api's contract for unlock).
        unsafe { self.lock.unlock() };
        arch::irq_restore(were_on);
    }
}

/// The kernel's platform: what the allocator asks of it, and nothing else.
pub struct KernelPlatform {
    nr_cpus: usize,
}

impl Platform for KernelPlatform {
    type RawLock = IrqSafe;
    type PcpLock = IrqSafe;

    fn current_cpu(&self) -> usize {
        arch::current_cpu()
    }

    fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    fn now_ns(&self) -> u64 {
        arch::now_ns()
    }
    // The cost hooks (lock_acquire, touch_shared, ...) keep their empty defaults: they
    // exist for the simulator and compile to nothing here.
}

fn main() {
    // 4 CPUs, 64 MiB from pfn 0x1000 up, as the firmware's memory map gave it.
    let builder = AllocatorBuilder::new().node(4).zone(0, pagealloc::ZoneType::Normal, 0x1000..0x5000);
    let allocator = PageAllocator::build(builder, KernelPlatform { nr_cpus: 4 }).expect("a valid machine");
    for cpu in 0..4 {
        arch::set_cpu(cpu);
        let page = allocator.alloc_pages(0, AllocRequest::KERNEL).expect("memory");
        assert!(arch::interrupts_on(), "every lock gave interrupts back");
        allocator.free_pages(page).expect("our page");
    }
    allocator.check_invariants().expect("consistent");
    println!("4 CPUs allocated and freed through an interrupt-safe platform");
}
