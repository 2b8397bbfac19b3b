//! The fragmentation-avoidance switches: the 2018 series' stages, defrag_mode, and
//! placement beyond Linux.

/// How a request with no free block of its own migratetype takes one from another type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FallbackDesign {
    /// Up to v6.9 (the 2018 series' kernels): the largest fallback block is taken (the
    /// smallest, for a movable request that may not claim the block); every free page of
    /// its pageblock moves to the requester's lists, and the pageblock is re-typed only if
    /// half of it is free or alike. Free lists need not match their pageblock's type.
    Steal2018,
    /// v6.10 onwards: claim a whole pageblock (half-pageblock rule) or else steal the
    /// smallest block, leaving its pageblock's type; free lists always match it.
    ClaimOrSteal,
}

/// When a fallback raises the zone's watermark boost (patches 2-4 of the 2018
/// fragmentation-avoidance series).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoostRule {
    /// Never (v4.20 and before).
    Off,
    /// On every fallback below pageblock order, steals included (the 2018 design, v5.0).
    EveryFallback,
    /// Only when claiming a pageblock is attempted (mainline).
    ClaimAttempts,
}

/// Fragmentation avoidance: the seed series' stages, defrag_mode, and placement beyond
/// Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragPolicy {
    pub fallback: FallbackDesign,
    pub boost: BoostRule,
    /// ALLOC_NOFRAGMENT on the first pass when a lower zone of the node (DMA32) can serve
    /// instead of fragmenting Normal (patch 1 of the 2018 fragmentation-avoidance
    /// series, v5.0).
    pub nofragment_lowzone: bool,
    /// A movable request that would fragment a pageblock in a boosted zone waits for
    /// kswapd's pass first, then retries without fragmenting (patch 5 of the 2018
    /// fragmentation-avoidance series, never merged).
    pub stall_movable: bool,
    /// ALLOC_NOFRAGMENT always; another type's memory only after reclaim and compaction
    /// failed (vm.defrag_mode, v6.15).
    pub defrag_mode: bool,
    /// Placement beyond Linux (the `pagealloc` and `mainline+fullest-first` presets); off
    /// in every Linux preset.
    pub beyond_linux: FragBeyondLinux,
    /// Boost reclaim may shrink slab-like caches (v5.3 on). The 2018 series left them alone
    /// while reclaiming a boost (sc.may_shrinkslab off, v5.0-v5.2): compaction cannot move
    /// slab pages, so freeing them does not mend the fragmentation that raised the boost.
    pub boost_reclaim_shrinks_slab: bool,
    /// A costly __GFP_NORETRY request (a THP fault) whose first compaction was skipped for
    /// want of free memory gives up rather than reclaim (v5.4, "avoid expensive reclaim
    /// when compaction may not succeed"). Before, only a deferred compaction made it give
    /// up: a skipped one went on to a round of direct reclaim and compaction.
    pub noretry_gives_up_when_skipped: bool,
    /// A freed block whose buddy one order up is free goes to its list's tail, where it
    /// waits for that merge (buddy_merge_likely(), Linux). Off in the `pagealloc` preset:
    /// the test reads the higher buddy's record and the tail write touches another, two
    /// cold lines per free, and its order-0 takes come from the fullest pageblock, not
    /// the list heads (measured: docs/decisions.md).
    pub merge_likely_to_tail: bool,
}

/// Placement beyond Linux, apart from the switches of Linux's own history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragBeyondLinux {
    /// Order-0 takes from the buddy come from the fullest partly used pageblock, and frees
    /// from pageblocks with `buddy_bound_free_pages` free bypass the pagesets, so emptier
    /// pageblocks drain and merge.
    pub fullest_first: bool,
    /// Under `fullest_first`: a free whose pageblock has at least this many pages free in
    /// the buddy goes there (batched on the pageset's buddy-bound list), not to the
    /// pageset, which would hand it out again. 128 (a quarter pageblock) in the `pagealloc`
    /// preset, chosen by a sweep (docs/decisions.md).
    pub buddy_bound_free_pages: u16,
    /// Under `fullest_first`: a free below pageblock order parks its block in its pageblock
    /// (the head's word and the pageblock's parked count, no list, no lock) instead of
    /// going to a pageset or the buddy. The free that leaves the pageblock holding nothing
    /// but free and parked pages gives them to the buddy, where they merge whole; the rest
    /// go there when memory is wanted (a request's slow path, a drain, kswapd). LLFree's
    /// free, which sets a bit and counts its 2 MiB area, is the model.
    pub parked_frees: bool,
}

impl FragBeyondLinux {
    /// Fullest-first off (its threshold at the value it takes when on).
    pub const OFF: FragBeyondLinux =
        FragBeyondLinux { fullest_first: false, buddy_bound_free_pages: 128, parked_frees: false };
}

impl FragPolicy {
    /// Mainline: claim or steal, boost on claim attempts, NOFRAGMENT for a lower zone.
    pub const MAINLINE: FragPolicy = FragPolicy {
        fallback: FallbackDesign::ClaimOrSteal,
        boost: BoostRule::ClaimAttempts,
        nofragment_lowzone: true,
        stall_movable: false,
        defrag_mode: false,
        beyond_linux: FragBeyondLinux::OFF,
        boost_reclaim_shrinks_slab: true,
        noretry_gives_up_when_skipped: true,
        merge_likely_to_tail: true,
    };
    /// v4.20-rc3, the seed's baseline.
    pub const LINUX_4_20: FragPolicy = FragPolicy {
        fallback: FallbackDesign::Steal2018,
        boost: BoostRule::Off,
        nofragment_lowzone: false,
        noretry_gives_up_when_skipped: false,
        ..FragPolicy::MAINLINE
    };
}
