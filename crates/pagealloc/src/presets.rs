//! Named policies reproducing each stage of the seed series (docs/glossary.md names each
//! series with its title, author and date), as a table.
//!
//! The 2022 high-order PCP series: `vanilla-5.17`, `revert-highpcp`, `highpcp-patch1` ..
//! `highpcp-patch4`, `highpcp-full`.
//! The 2023 PCP auto-tuning series: `base` (v6.6), `patch1` .. `patch9` cumulative, and
//! `mainline` (later fixes). Aliases: `linux-5.17`, `linux-6.6`, `pcp-autotune-patchN`,
//! `global-lock` (no pagesets).
//! The 2018 lru_lock RFC: `lru-k1` .. `lru-k4`, cumulative.

use crate::policy::{
    ArenaRule, BoostRule, DrainBeyondLinux, DrainPolicy, FragBeyondLinux, FragPolicy, FreeHighRule, FreeSizing,
    HighMaxRule, LruCommit, LruConfig, PcpPolicy, Policy, VmstatPolicy,
};
use crate::sizing::LinuxVersion;

/// A named policy with what it reproduces.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub summary: &'static str,
    pub policy: Policy,
    /// The kernel release whose code *around* the allocator (the fault path's locks, RSS
    /// counting) a reproduction of this preset follows; the allocator's own rules are the
    /// policy. Presets beyond Linux follow mainline.
    pub release: LinuxVersion,
}

const VANILLA_5_17: PcpPolicy = PcpPolicy {
    enabled: true,
    max_cached_order: 3,
    thp_lists: 1,
    drain: DrainPolicy {
        proportional: true,
        track_active_range: false,
        two_pass: true,
        prefetch_correct_buddy: false,
        start_at_freed_list: false,
        chunked: false,
        beyond_linux: DrainBeyondLinux::OFF,
    },
    free_high: FreeHighRule::Off,
    free_high_capped: false,
    free_sizing: FreeSizing::FreeFactor,
    batch_scale_max: None,
    alloc_factor: false,
    autotune_high: false,
    below_high: false,
    batch_override: None,
    high_override: None,
    thp_batch_shift: 0,
    high_max: HighMaxRule::Linux,
};

const fn with_drain(base: PcpPolicy, drain: DrainPolicy) -> PcpPolicy {
    PcpPolicy { drain, ..base }
}

const HIGHPCP_PATCH1: PcpPolicy =
    with_drain(VANILLA_5_17, DrainPolicy { prefetch_correct_buddy: true, ..VANILLA_5_17.drain });
const HIGHPCP_PATCH2: PcpPolicy =
    with_drain(HIGHPCP_PATCH1, DrainPolicy { track_active_range: true, ..HIGHPCP_PATCH1.drain });
const HIGHPCP_PATCH3: PcpPolicy =
    with_drain(HIGHPCP_PATCH2, DrainPolicy { proportional: false, ..HIGHPCP_PATCH2.drain });
const HIGHPCP_PATCH4: PcpPolicy = with_drain(HIGHPCP_PATCH3, DrainPolicy { two_pass: false, ..HIGHPCP_PATCH3.drain });
const HIGHPCP_FULL: PcpPolicy = PcpPolicy { free_high: FreeHighRule::AnyHighOrder, ..HIGHPCP_PATCH4 };
const REVERT_HIGHPCP: PcpPolicy = PcpPolicy { max_cached_order: 0, thp_lists: 0, ..VANILLA_5_17 };

/// v6.6: the 2022 series merged, active-range tracking gone, draining starts at the list
/// just freed to.
const BASE: PcpPolicy = with_drain(
    HIGHPCP_FULL,
    DrainPolicy { track_active_range: false, start_at_freed_list: true, ..HIGHPCP_FULL.drain },
);
const PATCH1: PcpPolicy = PcpPolicy { free_high: FreeHighRule::Consecutive, ..BASE };
/// Patch 2 only computes the per-CPU cache slice (used from patch 3).
const PATCH2: PcpPolicy = PATCH1;
const PATCH3: PcpPolicy = PcpPolicy { free_high: FreeHighRule::ConsecutiveBatch, ..PATCH2 };
const PATCH4: PcpPolicy =
    PcpPolicy { batch_scale_max: Some(PcpPolicy::DEFAULT_BATCH_SCALE_MAX), free_high_capped: true, ..PATCH3 };
const PATCH5: PcpPolicy = PcpPolicy { alloc_factor: true, ..PATCH4 };
/// Patch 6 adds high_min/high_max with equal values: no behaviour change.
const PATCH6: PcpPolicy = PATCH5;
/// Patch 7 tunes high; consecutive-free detection still relies on drains (free_factor):
/// patch 9's changelog says it replaced that reliance with a counter.
const PATCH7: PcpPolicy = PcpPolicy { autotune_high: true, ..PATCH6 };
const PATCH8: PcpPolicy = PcpPolicy { below_high: true, ..PATCH7 };
const PATCH9: PcpPolicy =
    PcpPolicy { free_high: FreeHighRule::FreeCountBatch, free_sizing: FreeSizing::FreeCount, ..PATCH8 };
const MAINLINE: PcpPolicy = PcpPolicy {
    free_high: FreeHighRule::FreeCountBatchHalfHighMin,
    thp_lists: 2,
    drain: DrainPolicy { chunked: true, ..PATCH9.drain },
    ..PATCH9
};
const GLOBAL_LOCK: PcpPolicy = PcpPolicy { enabled: false, ..MAINLINE };
/// Fullest-first's pagesets: mainline's, with the pages of orders 0..=3 held to high_min
/// (see `HighMaxRule::SmallOrdersAtHighMin`).
const MAINLINE_SMALL_AT_HIGH_MIN: PcpPolicy = PcpPolicy { high_max: HighMaxRule::SmallOrdersAtHighMin, ..MAINLINE };

const V5_17: LinuxVersion = LinuxVersion::new(5, 17);
const V6_6: LinuxVersion = LinuxVersion::new(6, 6);

/// A preset of the v5.17 .. v6.8 era (LRU add batches of 15), following `release`.
const fn preset(
    name: &'static str,
    aliases: &'static [&'static str],
    summary: &'static str,
    pcp: PcpPolicy,
    release: LinuxVersion,
) -> Preset {
    Preset { release, ..with_lru(name, aliases, summary, pcp, LruConfig::LINUX_15) }
}

const fn with_lru(
    name: &'static str,
    aliases: &'static [&'static str],
    summary: &'static str,
    pcp: PcpPolicy,
    lru: LruConfig,
) -> Preset {
    Preset {
        name,
        aliases,
        summary,
        policy: Policy {
            pcp,
            vmstat: VmstatPolicy::MAINLINE,
            lru,
            frag: FragPolicy::MAINLINE,
            arenas: ArenaRule::PerNode,
        },
        release: LinuxVersion::MAINLINE,
    }
}

/// A kernel of the 2018 lru_lock RFC (v4.15-rc): NUMA counters in their own class (v4.14).
const fn lru_rfc(name: &'static str, summary: &'static str, pcp: PcpPolicy, lru: LruConfig) -> Preset {
    Preset {
        name,
        aliases: &[],
        summary,
        policy: Policy {
            pcp,
            vmstat: VmstatPolicy::LINUX_4_14,
            lru,
            frag: FragPolicy::MAINLINE,
            arenas: ArenaRule::PerNode,
        },
        release: LinuxVersion::new(4, 15),
    }
}

/// The 2018 lru_lock RFC's baseline kernel: order-0 pagesets whose batch (31) and high
/// (6 x batch = 186) came from zone_batchsize() and pageset_set_batch() for zones this size,
/// drains of exactly one batch (no scaling), 14-page LRU add batches, one LRU lock per node.
const LRU_K1: PcpPolicy =
    PcpPolicy { batch_override: Some(31), high_override: Some(186), batch_scale_max: Some(0), ..REVERT_HIGHPCP };
/// The RFC's second kernel: PCP batch 310 and high 1860.
const LRU_K2: PcpPolicy = PcpPolicy { batch_override: Some(310), high_override: Some(1860), ..LRU_K1 };
const LRU_SCALED: LruConfig = LruConfig { commit: LruCommit::ScaledRemoval, ..LruConfig::LINUX_2018 };
const LRU_SPLICE: LruConfig = LruConfig { commit: LruCommit::Splice, ..LruConfig::LINUX_2018 };

/// v4.20's pagesets: order-0 only, batch and high from the zone size, drains of one batch.
const LINUX_4_20: PcpPolicy = PcpPolicy { batch_scale_max: Some(0), ..REVERT_HIGHPCP };

/// A kernel of the 2018 fragmentation-avoidance series (v4.20-rc3 and its patches).
const fn frag_2018(
    name: &'static str,
    aliases: &'static [&'static str],
    summary: &'static str,
    frag: FragPolicy,
) -> Preset {
    Preset {
        name,
        aliases,
        summary,
        policy: Policy {
            pcp: LINUX_4_20,
            vmstat: VmstatPolicy::LINUX_4_14,
            lru: LruConfig::LINUX_15,
            frag,
            arenas: ArenaRule::PerNode,
        },
        release: LinuxVersion::new(4, 20),
    }
}

/// Mainline with another fragmentation-avoidance policy.
const fn mainline_frag(name: &'static str, summary: &'static str, pcp: PcpPolicy, frag: FragPolicy) -> Preset {
    Preset {
        name,
        aliases: &[],
        summary,
        policy: Policy {
            pcp,
            vmstat: VmstatPolicy::MAINLINE,
            lru: LruConfig::MAINLINE,
            frag,
            arenas: ArenaRule::PerNode,
        },
        release: LinuxVersion::MAINLINE,
    }
}

/// Fullest-first placement at its default threshold.
const FULLEST_FIRST: FragBeyondLinux = FragBeyondLinux { fullest_first: true, ..FragBeyondLinux::OFF };
const FRAG_LOWZONE: FragPolicy = FragPolicy { nofragment_lowzone: true, ..FragPolicy::LINUX_4_20 };
const FRAG_BOOST: FragPolicy =
    FragPolicy { boost: BoostRule::EveryFallback, boost_reclaim_shrinks_slab: false, ..FRAG_LOWZONE };
const FRAG_STALL: FragPolicy = FragPolicy { stall_movable: true, ..FRAG_BOOST };

/// The embedder default, measured against mainline one change at a time (docs/decisions.md,
/// docs/benchmarks.md, docs/scaling.md): fullest-first placement keeps free memory in whole
/// pageblocks, as LLFree does; pageblock-order blocks move 256 batches per zone-lock hold,
/// at most high_max (Linux: 2 per refill, 1 per drain); a pageset's pages of orders 0-3
/// stay at high_min, as fullest-first needs, while pageblock-order blocks keep Linux's
/// auto-tuned high; each node is cut into per-CPU arenas, each with its own zone lock;
/// buddy-bound flushes read their merges' records before the zone lock; a freed block
/// likely to merge is listed at the head (Linux: the tail); drains give runs of
/// contiguous blocks to the buddy as aligned blocks (Linux: one block at a time); frees
/// into another CPU's arena are handed to it through a lock-free stack, until its low
/// watermark's worth waits.
/// Every Linux rule else is mainline's (`HighMaxRule::ZoneShare` is left out:
/// docs/decisions.md).
pub const PAGEALLOC: Policy = Policy {
    pcp: PcpPolicy {
        thp_batch_shift: 8,
        drain: DrainPolicy {
            beyond_linux: DrainBeyondLinux { warm_merges: true, coalesce_runs: true, hand_remote_frees: true },
            ..MAINLINE_SMALL_AT_HIGH_MIN.drain
        },
        ..MAINLINE_SMALL_AT_HIGH_MIN
    },
    vmstat: VmstatPolicy::MAINLINE,
    lru: LruConfig::MAINLINE,
    frag: FragPolicy {
        beyond_linux: FragBeyondLinux { parked_frees: true, ..FULLEST_FIRST },
        merge_likely_to_tail: false,
        ..FragPolicy::MAINLINE
    },
    arenas: ArenaRule::PerCpu,
};

pub const PRESETS: &[Preset] = &[
    preset(
        "vanilla-5.17",
        &["linux-5.17"],
        "v5.17: high-order PCP lists, proportional two-pass drains",
        VANILLA_5_17,
        V5_17,
    ),
    preset("revert-highpcp", &[], "v5.17 with only order-0 pages on the PCP", REVERT_HIGHPCP, V5_17),
    preset("highpcp-patch1", &[], "2022 #1: prefetch the buddy of the right order", HIGHPCP_PATCH1, V5_17),
    preset("highpcp-patch2", &[], "2022 #2: track the range of active PCP lists", HIGHPCP_PATCH2, V5_17),
    preset("highpcp-patch3", &[], "2022 #3: drain whole lists round robin", HIGHPCP_PATCH3, V5_17),
    preset("highpcp-patch4", &[], "2022 #4: single pass under the zone lock", HIGHPCP_PATCH4, V5_17),
    preset(
        "highpcp-full",
        &["linux-5.18"],
        "2022 #5: free_high drains on high-order frees",
        HIGHPCP_FULL,
        LinuxVersion::new(5, 18),
    ),
    preset(
        "base",
        &["linux-6.6"],
        "v6.6: fixed high, free_factor doubling, free_high on any order 1-3 free",
        BASE,
        V6_6,
    ),
    preset(
        "patch1",
        &["pcp-autotune-patch1"],
        "2023 #1: free_high needs two consecutive high-order frees",
        PATCH1,
        V6_6,
    ),
    preset(
        "patch2",
        &["pcp-autotune-patch2"],
        "2023 #2: per-CPU cache slice computed (no behaviour change)",
        PATCH2,
        V6_6,
    ),
    preset(
        "patch3",
        &["pcp-autotune-patch3"],
        "2023 #3: large cache slice caches a batch before free_high",
        PATCH3,
        V6_6,
    ),
    preset("patch4", &["pcp-autotune-patch4"], "2023 #4: PCP_BATCH_SCALE_MAX = 5 bounds scaled batches", PATCH4, V6_6),
    preset("patch5", &["pcp-autotune-patch5"], "2023 #5: order-0 refills scale with alloc_factor", PATCH5, V6_6),
    preset(
        "patch6",
        &["pcp-autotune-patch6"],
        "2023 #6: high_min/high_max framework (no behaviour change)",
        PATCH6,
        V6_6,
    ),
    preset("patch7", &["pcp-autotune-patch7"], "2023 #7: high auto-tuned between bounds, with decay", PATCH7, V6_6),
    preset("patch8", &["pcp-autotune-patch8"], "2023 #8: shrink high below the high watermark", PATCH8, V6_6),
    preset(
        "patch9",
        &["pcp-autotune-patch9"],
        "2023 #9: a free_count counter detects consecutive frees (>= batch)",
        PATCH9,
        V6_6,
    ),
    with_lru(
        "mainline",
        &["linux-6.18"],
        "later fixes: free_high at batch + high_min/2, chunked drains, two THP lists",
        MAINLINE,
        LruConfig::MAINLINE,
    ),
    with_lru(
        "global-lock",
        &["no-pcp"],
        "no per-CPU pagesets: every request takes the zone lock",
        GLOBAL_LOCK,
        LruConfig::MAINLINE,
    ),
    frag_2018(
        "vanilla-4.20",
        &["linux-4.20"],
        "v4.20-rc3: steal the largest fallback block, no boosting, no NOFRAGMENT",
        FragPolicy::LINUX_4_20,
    ),
    frag_2018(
        "lowzone",
        &["frag-patch1"],
        "2018 frag #1: NOFRAGMENT uses DMA32 before fragmenting Normal",
        FRAG_LOWZONE,
    ),
    frag_2018("boost", &["frag-patch4"], "2018 frag #2-4: boost on every fallback, kswapd reclaims it", FRAG_BOOST),
    frag_2018(
        "stall",
        &["frag-patch5"],
        "2018 frag #5: movable requests wait for kswapd before fragmenting",
        FRAG_STALL,
    ),
    mainline_frag(
        "mainline+defrag-mode",
        "vm.defrag_mode (v6.15): fall back to another type only after reclaim and compaction",
        MAINLINE,
        FragPolicy { defrag_mode: true, ..FragPolicy::MAINLINE },
    ),
    mainline_frag(
        "mainline+fullest-first",
        "beyond Linux: order-0 takes from the fullest pageblock; frees into pageblocks a quarter free skip the \
         pageset, which stays at high_min",
        MAINLINE_SMALL_AT_HIGH_MIN,
        FragPolicy { beyond_linux: FULLEST_FIRST, ..FragPolicy::MAINLINE },
    ),
    Preset {
        name: "pagealloc",
        aliases: &["embedder"],
        summary: "beyond Linux, the default for embedders: mainline with fullest-first placement, \
                  pageblock-order refills and drains of 256 batches, per-CPU arenas, coalesced drains, \
                  remote frees handed to the arena's owner, frees parked in their pageblocks",
        policy: PAGEALLOC,
        release: LinuxVersion::MAINLINE,
    },
    lru_rfc("lru-k1", "2018 lru_lock RFC baseline: PCP batch 31, high 186, classic LRU", LRU_K1, LruConfig::LINUX_2018),
    lru_rfc("lru-k2", "2018 lru_lock RFC: PCP batch 310, high 1860, classic LRU", LRU_K2, LruConfig::LINUX_2018),
    lru_rfc("lru-k3", "2018 lru_lock RFC: lru-k2 with removals under batch locks", LRU_K2, LRU_SCALED),
    lru_rfc("lru-k4", "2018 lru_lock RFC: lru-k3 with prepared lists spliced in one hold", LRU_K2, LRU_SPLICE),
];

/// Finds a preset by name or alias.
pub fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|preset| preset.name == name || preset.aliases.contains(&name))
}

impl Default for Policy {
    /// Mainline behaviour.
    fn default() -> Self {
        Policy {
            pcp: MAINLINE,
            vmstat: VmstatPolicy::MAINLINE,
            lru: LruConfig::MAINLINE,
            frag: FragPolicy::MAINLINE,
            arenas: ArenaRule::PerNode,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique_and_resolve() {
        let mut names: alloc::vec::Vec<&str> =
            PRESETS.iter().flat_map(|p| core::iter::once(p.name).chain(p.aliases.iter().copied())).collect();
        let total = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), total);
        assert_eq!(find("linux-6.6").unwrap().name, "base");
        assert_eq!(find("pcp-autotune-patch7").unwrap().name, "patch7");
        assert!(find("nope").is_none());
    }

    #[test]
    fn each_2023_patch_changes_what_its_summary_says() {
        let get = |name| find(name).unwrap().policy.pcp;
        assert_eq!(get("base").free_high, FreeHighRule::AnyHighOrder);
        assert_eq!(get("patch1").free_high, FreeHighRule::Consecutive);
        assert_eq!(get("patch3").free_high, FreeHighRule::ConsecutiveBatch);
        assert_eq!(get("patch4").batch_scale_max, Some(5));
        assert!(!get("patch4").alloc_factor && get("patch5").alloc_factor);
        assert!(!get("patch6").autotune_high && get("patch7").autotune_high);
        assert!(!get("patch7").below_high && get("patch8").below_high);
        assert_eq!(get("patch9").free_high, FreeHighRule::FreeCountBatch);
        assert_eq!(get("mainline").thp_lists, 2);
        assert_eq!(get("revert-highpcp").max_cached_order, 0);
        assert!(get("vanilla-5.17").drain.proportional && !get("highpcp-patch3").drain.proportional);
        assert!(get("highpcp-patch3").drain.two_pass && !get("highpcp-patch4").drain.two_pass);
    }
}
