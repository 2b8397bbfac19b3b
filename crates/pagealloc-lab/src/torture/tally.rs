//! What the workers did, counted: operations by kind, allocations by order and by request,
//! and the pressure they met. Each worker counts locally and adds its counts to the shared
//! tally after each batch, so the hot loop touches no shared line.

use std::ops::AddAssign;

use pagealloc::types::NR_ORDERS;
use pagealloc::{AllocRequest, MigrateType};

/// The operations a worker performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Alloc,
    Free,
    AllocBulk,
    FreeBulk,
    DrainLocal,
    DrainAll,
    CpuOffline,
    PeriodicWork,
    /// Pages read into the reclaimable page cache, or its oldest dropped when it is full.
    CacheRead,
    /// A whole-node compaction run (`compact_node`).
    Compact,
    /// An exact run (`alloc_pages_exact`), part of it freed at once by frame number
    /// (`free_pages_exact`).
    Exact,
    /// A span of pageblocks taken offline (`offline`), or one brought back (`online`).
    Offline,
    Online,
    /// A contiguous run (`alloc_contig`), freed at once (`free_contig`).
    Contig,
    /// Memory added past the highest zone's end (`add_memory`, feature `memory-growth`;
    /// counted 0 without it).
    #[cfg_attr(not(feature = "memory-growth"), allow(dead_code))]
    Grow,
}

impl Op {
    pub const COUNT: usize = 15;
    pub const NAMES: [&'static str; Op::COUNT] = [
        "alloc",
        "free",
        "alloc_bulk",
        "free_bulk",
        "drain_local",
        "drain_all",
        "cpu_offline",
        "periodic",
        "cache_read",
        "compact",
        "exact",
        "offline",
        "online",
        "contig",
        "grow",
    ];
}

/// Every request the workers make: the GFP-like constants, plus atomic requests of each
/// mobility and a DMA32 atomic one, so high-order non-blocking requests reach the high-order
/// atomic reserve from every pageblock type.
pub const REQUESTS: [(&str, AllocRequest); 11] = [
    ("kernel", AllocRequest::KERNEL),
    ("user_movable", AllocRequest::USER_MOVABLE),
    ("reclaimable", AllocRequest::RECLAIMABLE),
    ("atomic", AllocRequest::ATOMIC),
    ("nowait", AllocRequest::NOWAIT),
    ("dma32", AllocRequest::DMA32),
    ("dma", AllocRequest::DMA),
    (
        "atomic_movable",
        AllocRequest::ATOMIC.with_migratetype(MigrateType::Movable).with_highest_zone(pagealloc::ZoneType::Movable),
    ),
    ("atomic_reclaimable", AllocRequest::ATOMIC.with_migratetype(MigrateType::Reclaimable)),
    ("atomic_dma32", AllocRequest::ATOMIC.with_highest_zone(pagealloc::ZoneType::Dma32)),
    // Last: made only on a machine with a memory-only node 1, whose watermarks and kswapd
    // it drives (a task bound to that node's memory, as with mbind()).
    ("node1_movable", AllocRequest::USER_MOVABLE.on_node(1)),
];

/// The index in `REQUESTS` of the request for node 1.
pub const NODE1_REQUEST: usize = REQUESTS.len() - 1;

/// The first `FILL_REQUESTS` of `REQUESTS` may use Normal (or Movable): the ones a hog fills
/// memory with (the DMA zones would run dry first and end the fill early).
pub const FILL_REQUESTS: usize = 5;

/// Counts of one worker, or of all of them.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub ops: [u64; Op::COUNT],
    /// Blocks allocated (single and bulk), by order and by request (index into `REQUESTS`).
    pub allocs_by_order: [u64; NR_ORDERS],
    pub allocs_by_request: [u64; REQUESTS.len()],
    pub pages_allocated: u64,
    /// Single allocations that failed with OutOfMemory.
    pub out_of_memory: u64,
    /// Bulk calls that returned fewer blocks than asked (memory ran short).
    pub bulk_short: u64,
    /// Hog cycles completed: filled memory until OutOfMemory at order 0, held, released.
    pub hog_cycles: u64,
    pub vmstat_passes: u64,
    pub kswapd_passes: u64,
    /// Rounds of a kswapd pass run as a kswapd task runs them.
    pub kswapd_rounds: u64,
    /// Pages the drains (explicit, offline and vmstat) returned to the buddy.
    pub drained_pages: u64,
    /// Pages read into the page cache.
    pub cache_pages_read: u64,
    /// Pages taken offline, pages of contiguous runs, and range operations refused.
    pub offlined_pages: u64,
    pub contig_pages: u64,
    pub range_refusals: u64,
    /// Pages added past the highest zone's end.
    pub grown_pages: u64,
    /// Deliberate panics of the migration client caught after unwinding an operation.
    pub client_panics_caught: u64,
}

impl Tally {
    pub fn total_ops(&self) -> u64 {
        self.ops.iter().sum()
    }

    pub fn count(&mut self, op: Op) {
        self.ops[op as usize] += 1;
    }

    /// One block allocated at `order` for `REQUESTS[request_index]`.
    pub fn allocated(&mut self, order: u8, request_index: usize) {
        self.allocs_by_order[order as usize] += 1;
        self.allocs_by_request[request_index] += 1;
        self.pages_allocated += 1 << order;
    }
}

impl AddAssign<&Tally> for Tally {
    fn add_assign(&mut self, other: &Tally) {
        let pairs = self.ops.iter_mut().zip(&other.ops);
        let pairs = pairs.chain(self.allocs_by_order.iter_mut().zip(&other.allocs_by_order));
        for (mine, theirs) in pairs.chain(self.allocs_by_request.iter_mut().zip(&other.allocs_by_request)) {
            *mine += theirs;
        }
        self.pages_allocated += other.pages_allocated;
        self.out_of_memory += other.out_of_memory;
        self.bulk_short += other.bulk_short;
        self.hog_cycles += other.hog_cycles;
        self.vmstat_passes += other.vmstat_passes;
        self.kswapd_passes += other.kswapd_passes;
        self.kswapd_rounds += other.kswapd_rounds;
        self.drained_pages += other.drained_pages;
        self.cache_pages_read += other.cache_pages_read;
        self.offlined_pages += other.offlined_pages;
        self.grown_pages += other.grown_pages;
        self.contig_pages += other.contig_pages;
        self.range_refusals += other.range_refusals;
        self.client_panics_caught += other.client_panics_caught;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_requests_reach_normal() {
        for (name, request) in &REQUESTS[..FILL_REQUESTS] {
            assert!(request.highest_zone >= pagealloc::ZoneType::Normal, "{name}");
        }
    }

    #[test]
    fn tallies_add_field_by_field() {
        let mut worker = Tally::default();
        worker.count(Op::FreeBulk);
        worker.allocated(3, 2);
        worker.out_of_memory = 5;
        let mut total = Tally::default();
        total += &worker;
        total += &worker;
        assert_eq!(total.ops[Op::FreeBulk as usize], 2);
        assert_eq!((total.allocs_by_order[3], total.allocs_by_request[2], total.pages_allocated), (2, 2, 16));
        assert_eq!((total.out_of_memory, total.total_ops()), (10, 2));
    }
}
