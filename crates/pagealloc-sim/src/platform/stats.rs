//! What the cost model charged: lock statistics per class of lock, shared-line and page-data
//! touches and how they were served, summed over CPUs.

use serde::Serialize;

/// What only the simulator sees of one class of the allocator's locks. Acquisitions,
/// contention and waits are counted once, by the allocator's own locks, the same way on
/// real threads (`Counters::zone_lock_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LockClassStats {
    pub hold_ns: u64,
    /// Trylocks refused because the lock was held in simulated time.
    pub try_failures: u64,
}

/// The workload's own locks (a modelled mm lock, say): not the allocator's, so the
/// simulator is their only counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WorkloadLockStats {
    pub acquisitions: u64,
    /// Acquisitions that had to wait.
    pub contended: u64,
    pub wait_ns: u64,
    pub hold_ns: u64,
    /// RMWs on the locks' words that do not take them (readers' counts), and their waits.
    pub rmws: u64,
    pub rmw_wait_ns: u64,
}

/// What the cost model charged, summed over CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SimStats {
    pub zone_lock: LockClassStats,
    pub pcp_lock: LockClassStats,
    pub lru_lock: LockClassStats,
    pub lru_batch_lock: LockClassStats,
    pub lru_add_lock: LockClassStats,
    pub workload_lock: WorkloadLockStats,
    /// Touches of shared lines, however served.
    pub line_touches: u64,
    /// Touches of shared lines that another CPU held.
    pub line_transfers: u64,
    pub line_transfer_ns: u64,
    /// Shared-line touches served by the socket's LLC.
    pub line_llc_hits: u64,
    /// Shared-line touches served by memory.
    pub line_misses: u64,
    /// Atomic RMWs of shared lines (counter folds), and their time queued behind each other.
    pub line_rmws: u64,
    pub line_rmw_wait_ns: u64,
    pub page_touches: u64,
    /// Touches served by the socket's LLC (or another core's L2 there).
    pub page_llc_hits: u64,
    /// Touches served by memory (LLC misses: the seeds' "cache miss rate").
    pub page_misses: u64,
    /// Touches served by another core's L2 under the same LLC.
    pub page_other_l2_hits: u64,
    /// What page misses cost beyond one CPU alone on its socket's memory: the bandwidth
    /// other CPUs streaming at the same time took.
    pub memory_shared_ns: u64,
    /// TLB shootdowns, and the interrupts they sent (one per target CPU).
    pub tlb_shootdowns: u64,
    pub tlb_shootdown_ipis: u64,
}
