//! The migration scanner's walk over one pageblock: allocated movable blocks, read without
//! the zone lock (mirrors isolate_migratepages_block(); the client, which owns each block,
//! decides under its own locks whether it can still move it).

use crate::frame::{FrameInfo, FrameState};
use crate::types::{MigrateType, Pfn, PAGEBLOCK_ORDER};
use crate::zone_mem::ZoneMem;

use super::{CompactMode, COMPACT_CLUSTER_MAX};

/// An allocated movable block the scanner found: its head and the head's word when seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub pfn: Pfn,
    pub head: FrameInfo,
}

/// Up to [`COMPACT_CLUSTER_MAX`] candidates, and where the scan stopped.
#[derive(Debug)]
pub(crate) struct Candidates {
    pub found: [Candidate; COMPACT_CLUSTER_MAX],
    pub len: usize,
    /// The next pfn to scan (the pageblock's end once it is done).
    pub next_pfn: Pfn,
    pub scanned_pages: u64,
}

impl Candidates {
    pub(crate) fn as_slice(&self) -> &[Candidate] {
        &self.found[..self.len]
    }
}

/// May the migration scanner take blocks from a pageblock of this type? Not Linux's
/// suitable_migration_source(), deliberately: the fragmentation goal has the scanner skip
/// unmovable pageblocks in every mode (Linux's synchronous runs scan them for movable pages
/// stolen into them), and asynchronous runs take only movable pageblocks whatever the
/// request (Linux's take the request's own type). Never reserve pageblocks.
pub(crate) fn suitable_source(block_type: MigrateType, mode: CompactMode) -> bool {
    match mode {
        CompactMode::Async => matches!(block_type, MigrateType::Movable | MigrateType::Cma),
        CompactMode::Sync => matches!(block_type, MigrateType::Movable | MigrateType::Cma | MigrateType::Reclaimable),
    }
}

/// Collects allocated movable blocks below pageblock order from `from` to the end of its
/// pageblock (clipped to the zone), at most [`COMPACT_CLUSTER_MAX`].
pub(crate) fn migrate_candidates(mem: &ZoneMem, from: Pfn, end: Pfn) -> Candidates {
    debug_assert!(from < end && end - from <= crate::types::PAGEBLOCK_PAGES);
    let mut out = Candidates {
        found: [Candidate { pfn: 0, head: FrameInfo::INTERIOR }; COMPACT_CLUSTER_MAX],
        len: 0,
        next_pfn: end,
        scanned_pages: 0,
    };
    let mut pfn = from;
    while pfn < end {
        if out.len == COMPACT_CLUSTER_MAX {
            out.next_pfn = pfn;
            break;
        }
        let head = mem.frame(pfn).info();
        // Racy reads: a stale order only makes the walk skip or revisit frames, and the
        // step is clamped to the pageblock.
        let step = match head.state() {
            FrameState::AllocHead | FrameState::FreeHead | FrameState::PcpHead | FrameState::Parked => {
                1u64 << head.order()
            }
            FrameState::Interior | FrameState::Reserved | FrameState::Hole => 1,
        };
        if head.state() == FrameState::AllocHead
            && head.migratetype() == MigrateType::Movable
            && head.order() < PAGEBLOCK_ORDER
            && pfn & (step - 1) == 0
        {
            out.found[out.len] = Candidate { pfn, head };
            out.len += 1;
        }
        pfn = (pfn + step).min(end);
    }
    out.scanned_pages = out.next_pfn.min(end) - from;
    out
}
