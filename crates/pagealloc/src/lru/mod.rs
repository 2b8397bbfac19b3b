//! LRU lists for clients of the allocator (page cache, anonymous memory, a buffer pool):
//! per node (lruvec) an active and an inactive list for anonymous and for file pages, with
//! per-CPU add batches (mirrors mm/swap.c and include/linux/mm_inline.h).
//!
//! How adds and removals commit is [`LruCommit`]:
//! - `Classic`: a full add batch is flushed under the node's LRU lock, page by page, and
//!   every removal takes that lock (the kernels of 2018);
//! - `ScaledRemoval`: the 2018 RFC's batch locks. Each listed page records a batch-lock id;
//!   the pages one flush adds share one (ids go round robin per flush). The node lock
//!   covers the list heads: adds take it with the batch lock of the old first page and of
//!   the new pages. A removal takes the batch locks of the page and of its two neighbours,
//!   in increasing id order, plus the node lock first when a neighbour is a list head;
//!   after locking it re-reads the neighbours and retries if they changed. Nobody then
//!   writes a link the removal writes: a link is written only by whoever holds the batch
//!   lock of the page it belongs to, or the node lock for a head. Isolation, putback,
//!   rotation and activation take the node lock and every batch lock. Deadlock order: the
//!   node lock, then batch locks in increasing id order.
//! - `Splice`: as `ScaledRemoval`, and a flush links one local chain per target list
//!   outside the list locks (its pages are still in the CPU's batch, under that batch's
//!   lock, and no list reaches them), then splices each chain at its head in one hold,
//!   writing four entries per chain (three for one page) and each size once, and marks the
//!   pages listed before letting go.
//!
//! A page in a CPU's add batch (pending) may be deleted: it is dropped from the batch.
//! Isolation sees only listed pages (Linux's lru_add_drain() comes first where it matters).

mod batch;
mod check;
mod links;
mod move_ops;
mod removal;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

pub use check::LruViolation;
use links::Links;

use crate::platform::{LockId, Platform};
pub use crate::policy::{LruCommit, LruConfig};
use crate::sync::{LockStats, PlatformMutex};

/// Lists per node.
pub const NR_LRU_LISTS: usize = 4;
/// Largest add batch (Linux's PAGEVEC_SIZE was 14, then 15, and 31 since v6.9).
pub const MAX_BATCH_PAGES: u8 = 64;
/// Pages a batched removal handles per node-lock hold (SWAP_CLUSTER_MAX lock breaks of
/// release_pages()).
pub const REMOVAL_LOCK_BATCH: usize = 32;

/// One of a node's lists (Linux `enum lru_list` without the unevictable list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LruList {
    InactiveAnon = 0,
    ActiveAnon = 1,
    InactiveFile = 2,
    ActiveFile = 3,
}

impl LruList {
    pub const ALL: [LruList; NR_LRU_LISTS] =
        [LruList::InactiveAnon, LruList::ActiveAnon, LruList::InactiveFile, LruList::ActiveFile];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn is_active(self) -> bool {
        matches!(self, LruList::ActiveAnon | LruList::ActiveFile)
    }

    /// The list of the same kind with the other activity.
    pub const fn with_active(self, active: bool) -> LruList {
        match (self, active) {
            (LruList::InactiveAnon | LruList::ActiveAnon, false) => LruList::InactiveAnon,
            (LruList::InactiveAnon | LruList::ActiveAnon, true) => LruList::ActiveAnon,
            (_, false) => LruList::InactiveFile,
            (_, true) => LruList::ActiveFile,
        }
    }
}

/// Memory the LRU covers: `pages` frames of zone `zone` on `node`. Page ids run over the
/// spans in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LruSpan {
    pub node: u16,
    pub zone: u16,
    pub pages: u32,
}

/// A page, by its id over the spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LruPage(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LruError {
    PageOutOfRange {
        page: u32,
        pages: u32,
    },
    /// Added while on the LRU already (listed, pending or isolated).
    AlreadyOnLru {
        page: u32,
    },
    /// Deleted, moved or activated while not on a list or batch.
    NotOnLru {
        page: u32,
    },
    /// Put back while not isolated.
    NotIsolated {
        page: u32,
    },
    InvalidConfig(&'static str),
}

impl core::error::Error for LruError {}

impl core::fmt::Display for LruError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LruError::PageOutOfRange { page, pages } => write!(f, "LRU page {page} out of range (0..{pages})"),
            LruError::AlreadyOnLru { page } => write!(f, "LRU page {page} is already on the LRU"),
            LruError::NotOnLru { page } => write!(f, "LRU page {page} is not on the LRU"),
            LruError::NotIsolated { page } => write!(f, "LRU page {page} is not isolated"),
            LruError::InvalidConfig(what) => write!(f, "invalid LRU configuration: {what}"),
        }
    }
}

/// Operation counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LruStats {
    pub adds: u64,
    pub flushes: u64,
    pub deletes: u64,
    pub isolated: u64,
    pub rotations: u64,
    pub activations: u64,
}

#[derive(Debug, Default)]
struct Counters {
    adds: AtomicU64,
    flushes: AtomicU64,
    deletes: AtomicU64,
    isolated: AtomicU64,
    rotations: AtomicU64,
    activations: AtomicU64,
}

/// One node's lists: its lock, batch locks and sizes.
struct NodeLru<P: Platform> {
    lock: PlatformMutex<P, ()>,
    batch_locks: Box<[PlatformMutex<P, ()>]>,
    sizes: [AtomicU64; NR_LRU_LISTS],
    next_batch_lock: AtomicU32,
}

/// A CPU's add batch (mirrors cpu_fbatches.lru_add).
#[derive(Debug)]
struct CpuBatch {
    pages: [u32; MAX_BATCH_PAGES as usize],
    len: u8,
}

pub struct Lru<P: Platform> {
    config: LruConfig,
    links: Links,
    /// Per span: first page id and node.
    span_nodes: Box<[(u32, u16)]>,
    nodes: Box<[NodeLru<P>]>,
    cpus: Box<[PlatformMutex<P, CpuBatch>]>,
    counters: Counters,
}

impl<P: Platform> core::fmt::Debug for Lru<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lru").field("config", &self.config).field("pages", &self.links.pages).finish_non_exhaustive()
    }
}

impl<P: Platform> Lru<P> {
    pub fn new(spans: &[LruSpan], nr_cpus: usize, config: LruConfig) -> Result<Lru<P>, LruError> {
        if !(1..=MAX_BATCH_PAGES).contains(&config.batch_pages) {
            return Err(LruError::InvalidConfig("batch_pages is 1..=64"));
        }
        if config.batch_locks == 0 || nr_cpus == 0 || nr_cpus > 1 << 20 {
            return Err(LruError::InvalidConfig("at least one batch lock and 1..=2^20 CPUs"));
        }
        let mut span_table = Vec::with_capacity(spans.len());
        let mut first = 0u32;
        for span in spans {
            span_table.push((first, span.zone, span.node));
            first = first.checked_add(span.pages).ok_or(LruError::InvalidConfig("more than 2^32 pages"))?;
        }
        let nodes = spans.iter().map(|span| span.node + 1).max().unwrap_or(0);
        if u64::from(first) + u64::from(nodes) * NR_LRU_LISTS as u64 > u64::from(u32::MAX) {
            return Err(LruError::InvalidConfig("too many pages for 32-bit ids"));
        }
        let links = Links::new(first, nodes, span_table.iter().map(|&(first, zone, _)| (first, zone)).collect());
        let nodes: Vec<NodeLru<P>> = (0..nodes)
            .map(|node| NodeLru {
                lock: PlatformMutex::new(LockId::Lru(node), ()),
                batch_locks: (0..config.batch_locks)
                    .map(|lock| PlatformMutex::new(LockId::LruBatch { node, lock }, ()))
                    .collect(),
                sizes: Default::default(),
                next_batch_lock: AtomicU32::new(0),
            })
            .collect();
        let cpus: Vec<PlatformMutex<P, CpuBatch>> = (0..nr_cpus)
            .map(|cpu| {
                let batch = CpuBatch { pages: [0; MAX_BATCH_PAGES as usize], len: 0 };
                PlatformMutex::new(LockId::LruAdd { cpu: cpu as u32 }, batch)
            })
            .collect();
        Ok(Lru {
            config,
            links,
            span_nodes: span_table.iter().map(|&(first, _, node)| (first, node)).collect(),
            nodes: nodes.into_boxed_slice(),
            cpus: cpus.into_boxed_slice(),
            counters: Counters::default(),
        })
    }

    pub fn config(&self) -> LruConfig {
        self.config
    }

    /// The node of `page` (a checked id).
    fn node_of(&self, page: u32) -> u16 {
        let span = self.span_nodes.partition_point(|&(first, _)| first <= page) - 1;
        self.span_nodes[span].1
    }

    fn check_page(&self, page: LruPage) -> Result<u32, LruError> {
        if page.0 < self.links.pages {
            Ok(page.0)
        } else {
            Err(LruError::PageOutOfRange { page: page.0, pages: self.links.pages })
        }
    }

    fn scaled(&self) -> bool {
        self.config.commit != LruCommit::Classic
    }

    /// Pages on `node`'s `list` (not counting pending ones); 0 for a node it lacks.
    pub fn pages(&self, node: u16, list: LruList) -> u64 {
        self.nodes.get(node as usize).map_or(0, |n| n.sizes[list.index()].load(Relaxed))
    }

    /// Pages waiting in the CPUs' add batches (each batch read under its lock).
    pub fn pending_pages(&self, platform: &P) -> u64 {
        self.cpus.iter().map(|cpu| u64::from(cpu.lock(platform).len)).sum()
    }

    pub fn stats(&self) -> LruStats {
        let c = &self.counters;
        LruStats {
            adds: c.adds.load(Relaxed),
            flushes: c.flushes.load(Relaxed),
            deletes: c.deletes.load(Relaxed),
            isolated: c.isolated.load(Relaxed),
            rotations: c.rotations.load(Relaxed),
            activations: c.activations.load(Relaxed),
        }
    }

    /// The node LRU locks' statistics, summed (batch locks not included).
    pub fn lock_stats(&self) -> LockStats {
        let mut total = LockStats::default();
        for node in self.nodes.iter() {
            total += node.lock.stats();
        }
        total
    }

    /// The batch locks' statistics, summed over nodes.
    pub fn batch_lock_stats(&self) -> LockStats {
        let mut total = LockStats::default();
        for lock in self.nodes.iter().flat_map(|node| node.batch_locks.iter()) {
            total += lock.stats();
        }
        total
    }
}
