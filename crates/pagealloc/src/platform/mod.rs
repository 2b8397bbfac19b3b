//! What the allocator needs from the machine it runs on: the current CPU, a lock type, a clock,
//! and cost hooks through which a simulator charges time.
//!
//! Three implementations: [`TestPlatform`] (single host thread, CPU chosen by the test),
//! `StdPlatform` (real threads; feature `std`) and the many-CPU simulator in `pagealloc-sim`.
//! Every hook has an empty `#[inline(always)]` default, so on real hardware they compile to
//! nothing.

mod lock_atomics;
#[cfg(feature = "std")]
mod rseq_cpu;
#[cfg(feature = "std")]
mod std_platform;
mod tas_lock;
mod test_platform;
mod ticket_lock;

pub use lock_atomics::{AtomicFlag, AtomicWord};
#[cfg(feature = "std")]
pub use std_platform::StdPlatform;
pub use tas_lock::{Tas, TasLock};
pub use test_platform::TestPlatform;

/// spin's spinlock as a `lock_api::RawMutex` (feature `spin`), for a platform's `RawLock` or
/// `PcpLock`. It does not touch interrupts: wrap it as docs/platform.md shows where frees
/// happen in interrupt context.
#[cfg(feature = "spin")]
pub type SpinRawLock = spin::mutex::SpinMutex<()>;
pub use ticket_lock::{Ticket, TicketLock};

use crate::types::Pfn;

/// Which lock a hook is about. Stable across runs (no addresses), so a simulator that keys
/// its lock state by `LockId` stays deterministic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockId {
    /// A zone's free-area lock (`zone->lock`), by global zone index.
    Zone(u16),
    /// A per-CPU pageset lock, by (global zone index, CPU).
    Pcp { zone: u16, cpu: u32 },
    /// An LRU lock, by node.
    Lru(u16),
    /// One of a node's LRU batch locks (the 2018 RFC's scaled removal), by (node, id).
    LruBatch { node: u16, lock: u16 },
    /// A CPU's LRU add batch.
    LruAdd { cpu: u32 },
    /// A lock of the workload around the allocator (e.g. a modelled mm lock), by its id.
    Workload(u16),
}

/// A shared cache line the allocator touches, named by what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SharedLine {
    /// A zone's global counters (free pages, vmstat folds), by global zone index.
    ZoneCounters(u16),
    /// A zone's NUMA event counters when they are a class of their own (v4.14 .. v5.13's
    /// `zone->vm_numa_stat`), by global zone index.
    ZoneNumaCounters(u16),
    /// The machine-wide zone-stat counters (`vm_zone_stat`).
    GlobalCounters,
    /// The machine-wide NUMA event counters of the separate class (`vm_numa_stat`).
    GlobalNumaCounters,
    /// A zone's free-list heads, by (global zone index, order).
    FreeList { zone: u16, order: u8 },
    /// A per-CPU pageset's header, by (global zone index, CPU): remote when drained by another CPU.
    PcpHeader { zone: u16, cpu: u32 },
    /// The head of one of a node's LRU lists, by (node, list index).
    LruHead { node: u16, list: u8 },
    /// The metadata of one frame, by (global zone index, frame index within the zone). Which
    /// cache line that is depends on the record size: [`FRAME_METADATA_BYTES`] here, 64 bytes
    /// for Linux's `struct page`; a simulator maps frames to lines for the layout it models.
    ///
    /// [`FRAME_METADATA_BYTES`]: crate::FRAME_METADATA_BYTES
    FrameMeta { zone: u16, frame: u32 },
    /// A zone's stack of frees handed over by other arenas' CPUs (`remote_frees`), by global
    /// zone index.
    RemoteFrees(u16),
    /// One frame's state word in its zone's table of them (4 bytes each, 16 to a line), by
    /// (global zone index, frame index within the zone): what a parked free claims.
    FrameWord { zone: u16, frame: u32 },
    /// One pageblock's free and parked counts (fullest-first; 8 bytes each, 8 to a line),
    /// by (global zone index, pageblock index within the zone): what a parked free adds to.
    PageblockCounts { zone: u16, pageblock: u32 },
}

impl SharedLine {
    /// The metadata record of the zone's `index`-th frame.
    #[inline]
    pub fn frame_meta(zone: u16, index: u32) -> SharedLine {
        SharedLine::FrameMeta { zone, frame: index }
    }
}

/// The machine abstraction the allocator is generic over. A platform owns what it refers to
/// (`'static`), so clients given as `&'static` references can name it.
pub trait Platform: Send + Sync + 'static {
    /// Raw lock for zone and LRU locks (contended; FIFO is fairest).
    type RawLock: lock_api::RawMutex + Send + Sync;

    /// Raw lock for per-CPU pageset locks: taken by trylock on every fast-path call and
    /// almost never contended, so acquire cost matters most.
    type PcpLock: lock_api::RawMutex + Send + Sync;

    /// Id of the CPU the caller runs on, in `0..nr_cpus()`. May be stale by the time it is
    /// used (the thread can migrate); the allocator stays correct because per-CPU state is
    /// protected by its lock.
    fn current_cpu(&self) -> usize;

    /// Number of CPUs the allocator keeps per-CPU state for.
    fn nr_cpus(&self) -> usize;

    /// Monotonic time in nanoseconds.
    fn now_ns(&self) -> u64;

    /// About to acquire `lock` (blocking). A simulator queues the CPU behind the holder and
    /// returns the simulated wait in ns; real platforms return 0 (the lock measures real
    /// waits itself).
    #[inline(always)]
    fn lock_acquire(&self, _lock: LockId) -> u64 {
        0
    }

    /// About to try `lock`; returning false makes the trylock fail (a simulator answers from
    /// simulated time). Called only when the real lock was free.
    #[inline(always)]
    fn lock_try_acquire(&self, _lock: LockId) -> bool {
        true
    }

    /// Just released `lock`.
    #[inline(always)]
    fn lock_release(&self, _lock: LockId) {}

    /// Touched a shared cache line (`write` if modified).
    #[inline(always)]
    fn touch_shared(&self, _line: SharedLine, _write: bool) {}

    /// An atomic read-modify-write of a shared line (a counter fold's atomic add). Such
    /// writes serialise on the line, which changes hands one CPU at a time: a simulator
    /// queues them like a lock held for the transfer.
    #[inline(always)]
    fn atomic_shared(&self, _line: SharedLine) {}

    /// Touched the data of `pages` frames starting at `pfn` (zeroing, copying, prefetching).
    #[inline(always)]
    fn touch_pages(&self, _pfn: Pfn, _pages: u64) {}

    /// Made `updates` increments of CPU-local counters (vm events, NUMA event diffs): no
    /// line moves, but each is a load, an add and a store the call executes.
    #[inline(always)]
    fn percpu_counter_updates(&self, _updates: u32) {}
}
