//! The configuration of clients' LRU lists: batch size and how batches commit.

/// How the LRU lists (the `lru` module) commit adds and removals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LruCommit {
    /// A full add batch is flushed under the node's LRU lock page by page; every removal
    /// takes that lock.
    Classic,
    /// Removals take batch locks instead of the node lock (the 2018 lru_lock RFC).
    ScaledRemoval,
    /// As `ScaledRemoval`, and flushes splice chains prepared outside the lock.
    Splice,
}

/// The LRU lists' configuration, for clients that keep LRU lists beside the allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LruConfig {
    /// Pages per per-CPU add batch, 1..=64 (PAGEVEC_SIZE: 14 in 2018, 15 later, 31 since v6.9).
    pub batch_pages: u8,
    pub commit: LruCommit,
    /// Batch locks per node in the scaled modes, at least 1 (the RFC's NUM_LRU_BATCH_LOCKS 32).
    pub batch_locks: u16,
}

impl LruConfig {
    /// The kernels of early 2018: 14-page add batches, one LRU lock per node.
    pub const LINUX_2018: LruConfig = LruConfig { batch_pages: 14, commit: LruCommit::Classic, batch_locks: 32 };
    /// v4.x-v6.8 batches of 15.
    pub const LINUX_15: LruConfig = LruConfig { batch_pages: 15, ..LruConfig::LINUX_2018 };
    /// Since v6.9: batches of 31.
    pub const MAINLINE: LruConfig = LruConfig { batch_pages: 31, ..LruConfig::LINUX_2018 };
}
