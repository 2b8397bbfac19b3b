//! # pagealloc-sim
//!
//! A [`pagealloc::platform::Platform`] of N virtual CPUs with a discrete-event clock and a
//! cost model, so the very same allocator code runs as if on a 224-CPU server, on a laptop,
//! deterministically.
//!
//! ## Model
//! - Every virtual CPU has its own clock. The [`engine`] always runs the CPU with the
//!   earliest clock (ties to the lowest id); one allocator call executes atomically on the
//!   host while the platform hooks charge simulated time to that CPU.
//! - Locks are FIFO servers: a CPU asking for a lock that, in simulated time, is held until
//!   t waits until t. Calls are processed in order of their start time, so waiters queue in
//!   arrival order. A trylock fails if the lock is held at the caller's time.
//! - Shared cache lines (zone counters, free-list heads, pageset headers, frame metadata)
//!   have an owner and sharers; a touch by a CPU that does not hold the line pays a transfer
//!   cost by distance (SMT sibling, same socket, other socket) if another core still holds
//!   it, else the LLC's latency if the socket's LLC has it, else memory latency; a write
//!   invalidates the other sharers. Lock words are tracked with their lock.
//! - Caches: a private L2 share per CPU and a shared LLC per socket, exact LRU sets weighted
//!   by bytes, holding page data (4 KiB at a time) and shared lines (64 bytes) together, so
//!   metadata a CPU has not touched while it streamed through page data has been evicted.
//!   A page touch costs an L2 hit, an LLC hit or memory; it leaves the page in the toucher's
//!   L2 alone (touches are writes or reads after another CPU's write) and in its LLC.
//! - What CPUs share besides locks and lines ([`bandwidth`], `platform`): a page from memory
//!   costs more when other CPUs of its socket stream from memory at the same time (a curve
//!   by streaming CPUs); a page another core under the same LLC still holds costs its
//!   handoff (a write and a read figure); atomic RMWs on one word are served one at a time
//!   in simulated time's order; a TLB shootdown charges its caller and every target.
//! - The allocator reports touches of frame metadata by frame; [`MetadataLayout`] maps
//!   frames to lines: ours (12-byte records, five to a line) or Linux's 64-byte
//!   `struct page` (a line per frame), which reproductions of the seeds use.
//! - All constants are in [`calibration::Calibration`], one set used by every experiment.
//! - Faults, off unless asked for ([`SimHandle::inject_faults`]): seeded trylock refusals,
//!   and tasks that move to another CPU between allocator calls (the allocator sees the new
//!   CPU's id; the task's costs stay on its engine CPU's clock). They exercise paths that a
//!   deterministic run otherwise rarely takes: buddy fallbacks, remote pagesets.
//!
//! [`SimHandle::inject_faults`]: platform::SimHandle::inject_faults
//!
//! ## Approximations
//! - The allocator's own instruction cost is not modelled instruction by instruction: the
//!   workload charges a fixed compute time per operation; the allocator's data movement is
//!   what the hooks charge (lock words, shared lines, page data).
//! - A lock's queue order is the order in which calls *start*, a close stand-in for the order
//!   in which they reach the lock.
//! - Page data is modelled at page granularity: a touch moves the whole page, and every
//!   touch counts as a write for residency (a page read by two CPUs in turn bounces between
//!   their L2s through the LLC instead of being shared).
//! - Page data is cached inclusively (every page touch refreshes the LLC too). LLCs of
//!   different sockets do not exchange data: a page last written on the other socket, or a
//!   line written there that no L2 there still holds, comes from memory.
//! - The allocator's own frame-metadata lines are tracked as shared lines; the workload's
//!   page data as pages.
//! - Lines are cached non-inclusively: a line hit in a CPU's L2 does not refresh the LLC's
//!   copy, but an L2 eviction does not write it back either: a line that stayed hot in one
//!   L2 while the LLC turned over comes back from memory after its L2 eviction.
//! - Misses are charged one after another. A real core overlaps independent misses (the
//!   previous and next `struct page` of a list unlink, say), so code that misses on many
//!   independent lines, such as a long drain under the zone lock, costs more here than there.
//! - Memory latency is one value: a line or page of the other socket's node costs what a
//!   local one does.

pub mod bandwidth;
pub mod cache_group;
pub mod cache_key;
#[cfg(test)]
mod cache_set;
pub mod calibration;
mod dense_table;
pub mod engine;
pub mod metadata_layout;
mod node_index;
pub mod platform;
pub mod rng;
pub mod table_sizes;
pub mod topology;

pub use bandwidth::BandwidthCurve;
pub use calibration::Calibration;
pub use engine::Engine;
pub use metadata_layout::MetadataLayout;
pub use platform::{FaultConfig, FaultStats, SimPlatform, SimStats};
pub use topology::Topology;

/// A fixed, fast hasher for the simulator's maps (page frame numbers, lock and line ids):
/// identical on every run, and a few instructions per key instead of SipHash's rounds. Keys
/// are program-chosen, not adversarial, so hash flooding is no concern.
#[derive(Default, Clone, Copy)]
pub struct DeterministicHasher(u64);

impl std::hash::Hasher for DeterministicHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // Final avalanche so that low bits depend on all key bits (hashbrown uses the top 7
        // bits as tags and the low bits as the bucket).
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(byte as u64);
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.write_u64(value as u64);
    }

    #[inline]
    fn write_u16(&mut self, value: u16) {
        self.write_u64(value as u64);
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.write_u64(value as u64);
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}
