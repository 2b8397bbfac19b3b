//! Allocation requests (the parts of a GFP mask the page allocator acts on) and the internal
//! allocation flags derived from them (Linux `ALLOC_*`).

use crate::types::{MigrateType, ZoneType};

/// What a caller asks for, besides the order. Constructors mirror common GFP masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocRequest {
    /// Highest zone the memory may come from (`gfp_zone()`).
    pub highest_zone: ZoneType,
    /// Mobility of the allocation (`gfp_migratetype()`).
    pub migratetype: MigrateType,
    /// `__GFP_HIGH`: may dip below the min watermark (to half of it).
    pub high_priority: bool,
    /// `__GFP_DIRECT_RECLAIM`: the caller may sleep and reclaim. Non-blocking callers get
    /// deeper reserve access (and order > 0 ones the high-order atomic reserve).
    pub may_reclaim: bool,
    /// `__GFP_KSWAPD_RECLAIM`: may wake background reclaim.
    pub wake_kswapd: bool,
    /// Preferred node; `None` is the current CPU's node.
    pub node: Option<u16>,
    /// `__GFP_NORETRY`: one round of direct reclaim and compaction, then fail; a costly
    /// request whose first compaction was skipped or deferred fails at once (THP faults).
    pub no_retry: bool,
}

impl AllocRequest {
    /// GFP_KERNEL: unmovable kernel memory from Normal or below, may reclaim.
    pub const KERNEL: AllocRequest = AllocRequest {
        highest_zone: ZoneType::Normal,
        migratetype: MigrateType::Unmovable,
        high_priority: false,
        may_reclaim: true,
        wake_kswapd: true,
        node: None,
        no_retry: false,
    };
    /// GFP_HIGHUSER_MOVABLE: user pages, movable, may use ZONE_MOVABLE.
    pub const USER_MOVABLE: AllocRequest =
        AllocRequest { highest_zone: ZoneType::Movable, migratetype: MigrateType::Movable, ..AllocRequest::KERNEL };
    /// GFP_KERNEL | __GFP_RECLAIMABLE: slab caches that can be shrunk.
    pub const RECLAIMABLE: AllocRequest =
        AllocRequest { migratetype: MigrateType::Reclaimable, ..AllocRequest::KERNEL };
    /// GFP_ATOMIC: cannot sleep, high priority, reaches into reserves.
    pub const ATOMIC: AllocRequest = AllocRequest { high_priority: true, may_reclaim: false, ..AllocRequest::KERNEL };
    /// GFP_NOWAIT: cannot sleep, no reserve access beyond the non-blocking allowance.
    pub const NOWAIT: AllocRequest = AllocRequest { may_reclaim: false, ..AllocRequest::KERNEL };
    /// GFP_DMA32: below 4 GiB.
    pub const DMA32: AllocRequest = AllocRequest { highest_zone: ZoneType::Dma32, ..AllocRequest::KERNEL };
    /// GFP_TRANSHUGE_LIGHT: a THP fault without MADV_HUGEPAGE under the default
    /// `defrag=madvise`: movable, no reclaim, no compaction, no wake-ups.
    pub const TRANSHUGE_LIGHT: AllocRequest =
        AllocRequest { may_reclaim: false, wake_kswapd: false, no_retry: true, ..AllocRequest::USER_MOVABLE };
    /// GFP_TRANSHUGE: a THP fault in a MADV_HUGEPAGE region: direct compaction and reclaim,
    /// once (__GFP_NORETRY).
    pub const TRANSHUGE: AllocRequest =
        AllocRequest { may_reclaim: true, wake_kswapd: false, no_retry: true, ..AllocRequest::USER_MOVABLE };
    /// GFP_DMA: below 16 MiB.
    pub const DMA: AllocRequest = AllocRequest { highest_zone: ZoneType::Dma, ..AllocRequest::KERNEL };

    pub const fn with_migratetype(self, migratetype: MigrateType) -> AllocRequest {
        AllocRequest { migratetype, ..self }
    }

    pub const fn with_highest_zone(self, highest_zone: ZoneType) -> AllocRequest {
        AllocRequest { highest_zone, ..self }
    }

    pub const fn on_node(self, node: u16) -> AllocRequest {
        AllocRequest { node: Some(node), ..self }
    }
}

/// One block request as every layer below the zonelist walk sees it: the zone-take path, the
/// pagesets and the fallback path all receive this one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRequest {
    pub order: u8,
    pub migratetype: MigrateType,
    pub flags: AllocFlags,
}

/// Which watermark an attempt must pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatermarkLevel {
    Min,
    Low,
    High,
}

/// Internal allocation flags (Linux `ALLOC_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocFlags {
    pub watermark: WatermarkLevel,
    /// ALLOC_MIN_RESERVE (`__GFP_HIGH`): half the min watermark.
    pub min_reserve: bool,
    /// ALLOC_NON_BLOCK: a further quarter off, with min_reserve.
    pub non_block: bool,
    /// ALLOC_HIGHATOMIC: may use and create the high-order atomic reserve.
    pub highatomic: bool,
    /// ALLOC_NOFRAGMENT: claim only whole pageblocks, never steal.
    pub nofragment: bool,
    /// ALLOC_KSWAPD: may wake background reclaim.
    pub kswapd: bool,
}

impl AllocFlags {
    /// No reserve access, no fallback restriction, no wake-ups: what a check on behalf of
    /// the allocator itself uses (compaction's watermark test).
    pub const PLAIN: AllocFlags = AllocFlags {
        watermark: WatermarkLevel::Low,
        min_reserve: false,
        non_block: false,
        highatomic: false,
        nofragment: false,
        kswapd: false,
    };

    /// Flags of the fast-path attempt.
    pub fn fast_path(request: &AllocRequest) -> AllocFlags {
        AllocFlags {
            watermark: WatermarkLevel::Low,
            min_reserve: false,
            non_block: false,
            highatomic: false,
            nofragment: false,
            kswapd: request.wake_kswapd,
        }
    }

    /// Flags of the slow-path attempt (mirrors gfp_to_alloc_flags()).
    pub fn slow_path(request: &AllocRequest, order: u8) -> AllocFlags {
        let non_block = !request.may_reclaim;
        AllocFlags {
            watermark: WatermarkLevel::Min,
            min_reserve: request.high_priority,
            non_block,
            highatomic: non_block && order > 0,
            nofragment: false,
            kswapd: request.wake_kswapd,
        }
    }

    /// ALLOC_RESERVES: any reserve access.
    #[inline]
    pub fn uses_reserves(&self) -> bool {
        self.min_reserve || self.non_block || self.highatomic
    }
}
