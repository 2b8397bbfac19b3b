//! Compaction's parts below the allocator: the fragmentation indices that say whether it can
//! help, the deferral that keeps failing zones from being rescanned, the two scanners (a
//! migration scanner from the zone start collecting allocated movable blocks, a free
//! scanner from the zone end isolating free pages to move them into), the pool of isolated
//! free pages, and the checks that end a run (mirrors mm/compaction.c). The run itself,
//! which asks the client to move each block, is the allocator's (`allocator::compact`).

mod defer;
mod finish;
mod index;
mod pool;
mod scan;
mod stats;

pub use finish::CompactResult;
pub(crate) use finish::{compaction_suitable, target_block_free};
pub use index::{
    extfrag_for_order_pct, extfrag_index_milli, fragmentation_score_pct, fragmentation_score_wmarks,
    unusable_index_milli, ContigInfo,
};
pub(crate) use pool::FreePool;
pub(crate) use scan::{migrate_candidates, suitable_source, Candidate};
pub use stats::{CompactCounters, CompactRun, CompactStats};

/// Blocks the migration scanner collects before they are moved (COMPACT_CLUSTER_MAX).
pub const COMPACT_CLUSTER_MAX: usize = 32;
/// Deferral grows to skipping 2^6 attempts (COMPACT_MAX_DEFER_SHIFT).
pub const COMPACT_MAX_DEFER_SHIFT: u32 = 6;
/// How often kcompactd checks the fragmentation score for proactive compaction
/// (HPAGE_FRAG_CHECK_INTERVAL_MSEC).
pub const FRAG_CHECK_INTERVAL_MS: u64 = 500;

/// How hard a run tries (mirrors `enum migrate_mode` as compaction uses it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactMode {
    /// The first direct attempt: only movable pageblocks are scanned for blocks to move.
    Async,
    /// kcompactd, proactive compaction and later direct attempts (MIGRATE_SYNC_LIGHT):
    /// movable and reclaimable pageblocks.
    Sync,
}

/// What a run aims for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactGoal {
    /// Until a free block of this order exists for the migratetype (direct compaction,
    /// kcompactd woken for an order); `whole_blocks_only` under NOFRAGMENT, where only a
    /// fallback block of pageblock order or more may serve.
    Order { order: u8, migratetype: crate::types::MigrateType, whole_blocks_only: bool },
    /// Until the zone's fragmentation score is at or below this percent (proactive).
    Score { low_pct: u64 },
    /// The whole zone, until the scanners meet (`/proc/sys/vm/compact_memory`, order -1).
    WholeZone,
}
