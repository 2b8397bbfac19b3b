//! Every behaviour of the two PCP seed series as a switch, and named presets that reproduce
//! each stage (see `presets`). A `Policy` is plain data: copy it, tweak one field, compare.

/// When a high-order (1..=3) free counts as "free_high" and drains the pageset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FreeHighRule {
    /// Never (before v5.18).
    Off,
    /// Any order 1..=3 free while the pageset is freeing without allocating
    /// (free_factor != 0). v5.18, the 2022 series' patch 5.
    AnyHighOrder,
    /// Two consecutive order 1..=3 frees (2023 patch 1).
    Consecutive,
    /// Consecutive, and if the CPU's cache slice is large (FREE_HIGH_BATCH), only once
    /// `batch` pages are cached (2023 patch 3).
    ConsecutiveBatch,
    /// As above, and free_count >= batch (2023 patch 9).
    FreeCountBatch,
    /// As above with free_count >= batch + high_min / 2 (mainline, ~v6.16).
    FreeCountBatchHalfHighMin,
}

/// How the free path sizes a drain when the pageset is over high.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FreeSizing {
    /// `batch << free_factor`, the factor growing per drain without allocation
    /// (v5.14 .. v6.6).
    FreeFactor,
    /// `free_count` pages freed since the last allocation, clamped (v6.7 patch 7 onwards).
    FreeCount,
}

/// How `free_pcppages_bulk` picks pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrainPolicy {
    /// Round robin taking `batch_free` pages per list (grown per empty list skipped) instead
    /// of emptying each list in turn (before 2022 patch 3).
    pub proportional: bool,
    /// Skip lists outside the known non-empty index range (2022 patch 2; removed in 2023).
    pub track_active_range: bool,
    /// Collect the pages under the PCP lock first, then free them under the zone lock
    /// (before 2022 patch 4), instead of one pass under the zone lock.
    pub two_pass: bool,
    /// Prefetch the buddy at the block's order; before 2022 patch 1 the order-0 buddy was
    /// prefetched for every block.
    pub prefetch_correct_buddy: bool,
    /// Start with the list just freed to rather than the one after it.
    pub start_at_freed_list: bool,
    /// Drain in `batch`-sized chunks, dropping and retaking the PCP lock in between
    /// (mainline, 2025).
    pub chunked: bool,
    /// The switches beyond Linux (the `pagealloc` preset); all off in every Linux preset.
    pub beyond_linux: DrainBeyondLinux,
}

/// Drain behaviour beyond Linux, apart from the switches of Linux's own history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DrainBeyondLinux {
    /// Before a flush of the buddy-bound list (fullest-first) takes the zone lock, read the
    /// records its merges will touch, so that the hold finds them cached instead of missing
    /// in it while other CPUs wait. Random frees are where it pays; `pageset` drains,
    /// mostly of sequential frees, are left alone: warming them too costs instructions for
    /// no measurable gain (docs/decisions.md).
    pub warm_merges: bool,
    /// A drain or buddy-bound flush gives each run of address-contiguous blocks to the
    /// buddy as its largest aligned blocks, instead of one block at a time
    /// (`buddy/runs.rs`). Same buddy blocks after the drain; fewer merges.
    pub coalesce_runs: bool,
    /// With per-CPU arenas: a buddy-bound flush of frees into another CPU's arena hands
    /// them to that arena with one compare-and-swap (`remote_frees`) instead of taking its
    /// zone lock; the arena's next lock holder, usually its owner, releases them.
    pub hand_remote_frees: bool,
}

impl DrainBeyondLinux {
    /// Every switch off: Linux's drains.
    pub const OFF: DrainBeyondLinux =
        DrainBeyondLinux { warm_merges: false, coalesce_runs: false, hand_remote_frees: false };
}

/// Per-CPU pageset behaviour. The builder rejects values outside what Linux allows
/// (`max_cached_order` <= 3, `thp_lists` <= 2, `batch_scale_max` <= 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PcpPolicy {
    /// Per-CPU pagesets at all. Off = every request takes the zone lock.
    pub enabled: bool,
    /// Highest order cached besides pageblock order (0 reverts high-order caching; 3 is
    /// PAGE_ALLOC_COSTLY_ORDER).
    pub max_cached_order: u8,
    /// Lists for pageblock-order (THP) blocks: 0, 1 (v5.13 .. v6.x) or 2 (movable and not).
    pub thp_lists: u8,
    pub drain: DrainPolicy,
    pub free_high: FreeHighRule,
    /// A free_high drain is capped at `batch << batch_scale_max` pages (2023 patch 4) instead
    /// of emptying the pageset.
    pub free_high_capped: bool,
    pub free_sizing: FreeSizing,
    /// PCP_BATCH_SCALE_MAX: largest log2 multiplier of batch for scaled refills and drains.
    /// `None` leaves the free factor unbounded (before 2023 patch 4).
    pub batch_scale_max: Option<u8>,
    /// Scale order-0 refills by alloc_factor (2023 patch 5).
    pub alloc_factor: bool,
    /// high moves between high_min and high_max (2023 patch 7), with periodic decay.
    pub autotune_high: bool,
    /// Shrink high and stop raising it while the zone is below its high watermark
    /// (2023 patch 8).
    pub below_high: bool,
    /// Override of batch (pages), as in the 310/1860 experiments.
    pub batch_override: Option<u32>,
    /// Override of high (pages); fixes high_min = high_max.
    pub high_override: Option<u32>,
    /// Beyond Linux: pageblock-order refills and drains move (batch << `thp_batch_shift`)
    /// pages per zone-lock hold, several blocks (Linux's `max(batch >> order, 2)` refills
    /// 2 and drains one per hold). 0 in every Linux preset.
    pub thp_batch_shift: u8,
    /// How far auto-tuning may raise high: Linux's high_max in every Linux preset.
    pub high_max: HighMaxRule,
}

/// The bound auto-tuning raises a pageset's high to (with `autotune_high`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HighMaxRule {
    /// The kernel's: the zone's managed pages / 8 / the node's CPUs
    /// (MIN_PERCPU_PAGELIST_HIGH_FRACTION, zone_highsize()).
    Linux,
    /// Beyond Linux: the zone's managed pages / `share` / CPUs, so the pagesets together
    /// hold at most 1/`share` of the zone (used where larger than Linux's).
    ZoneShare(u16),
    /// Beyond Linux: high stays at high_min (the low watermark over the CPUs). Pages a
    /// pageset holds are hidden from placement: with fullest-first, a pageset auto-tuned
    /// to 1/16 of memory made every pageblock look fuller than it was, so frees stayed in
    /// the pageset and no pageblock drained (docs/decisions.md).
    HighMin,
    /// Beyond Linux: high auto-tunes up to Linux's high_max, but the pages of orders
    /// 0..=3 are held to high_min (a small-order free past it drains only those lists).
    /// Small blocks hidden in a pageset make partly used pageblocks look fuller to
    /// fullest-first; a whole pageblock-order block hides no partly used pageblock, so a
    /// THP stream keeps Linux's room (`HighMin` held it to 3 blocks on 4 GiB).
    SmallOrdersAtHighMin,
}

impl HighMaxRule {
    /// The bound on a pageset's pages of orders 0..=3, when the rule has one.
    #[inline]
    pub fn bounds_small_orders(self) -> bool {
        self == HighMaxRule::SmallOrdersAtHighMin
    }
}

/// How the NUMA event counters (numa_hit, numa_miss, numa_foreign, interleave_hit, local,
/// other) are kept: the stages of the 2017-2021 NUMA-statistics work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NumaStats {
    /// Ordinary zone statistics (before v4.14): a per-CPU diff per counter, folded into the
    /// zone's and the global counters past the threshold with the half-threshold overstep.
    /// `threshold: None` is the zone's `stat_threshold` (normal or pressure formula);
    /// `Some(t)`, 32..=32765, fixes it, as the 2017 RFC swept it.
    ZoneStat { threshold: Option<u16> },
    /// A class of its own (v4.14 .. v5.13): u16 per-CPU diffs folded past a large threshold
    /// (the kernel's is U16_MAX - 2), on their own shared lines.
    SeparateClass { threshold: u16 },
    /// Plain per-CPU counters with no threshold, folded only when read (v5.14 on).
    PerCpu,
    /// Not counted (`vm.numa_stat = 0`, v4.16 on).
    Disabled,
}

impl NumaStats {
    /// The separate class's threshold in Linux (NUMA_STATS_THRESHOLD).
    pub const SEPARATE_CLASS_THRESHOLD: u16 = u16::MAX - 2;
    /// Range of a fixed zone-stat threshold (an i16 diff with room for the overstep).
    pub const ZONE_STAT_THRESHOLDS: core::ops::RangeInclusive<u16> = 32..=32_765;
}

impl NumaStats {
    /// Parses the names [`core::fmt::Display`] prints: `zone-stat`, `threshold-N`,
    /// `separate-class`, `separate-class-N`, `per-cpu`, `disabled`. Values outside the ranges
    /// the builder accepts are `None`.
    pub fn parse(text: &str) -> Option<NumaStats> {
        let stats = match text {
            "zone-stat" => NumaStats::ZoneStat { threshold: None },
            "separate-class" => NumaStats::SeparateClass { threshold: Self::SEPARATE_CLASS_THRESHOLD },
            "per-cpu" => NumaStats::PerCpu,
            "disabled" => NumaStats::Disabled,
            _ => {
                if let Some(number) = text.strip_prefix("threshold-") {
                    let threshold = number.parse().ok().filter(|t| Self::ZONE_STAT_THRESHOLDS.contains(t))?;
                    NumaStats::ZoneStat { threshold: Some(threshold) }
                } else {
                    let number = text.strip_prefix("separate-class-")?;
                    let threshold =
                        number.parse().ok().filter(|&t| (1..=Self::SEPARATE_CLASS_THRESHOLD).contains(&t))?;
                    NumaStats::SeparateClass { threshold }
                }
            }
        };
        Some(stats)
    }
}

impl core::fmt::Display for NumaStats {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            NumaStats::ZoneStat { threshold: None } => write!(f, "zone-stat"),
            NumaStats::ZoneStat { threshold: Some(threshold) } => write!(f, "threshold-{threshold}"),
            NumaStats::SeparateClass { threshold } if threshold == Self::SEPARATE_CLASS_THRESHOLD => {
                write!(f, "separate-class")
            }
            NumaStats::SeparateClass { threshold } => write!(f, "separate-class-{threshold}"),
            NumaStats::PerCpu => write!(f, "per-cpu"),
            NumaStats::Disabled => write!(f, "disabled"),
        }
    }
}

/// How a zone's free-page count (NR_FREE_PAGES), which every watermark check reads, is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FreePagesCount {
    /// Exact, published once per zone-lock hold (this project's default, and the Linux
    /// presets' so far: the seeds' experiments never come near the watermarks).
    Published,
    /// As Linux keeps it: a vmstat counter whose per-CPU diffs fold past the zone's
    /// `stat_threshold`, so checks read a count that may lag by up to CPUs x threshold;
    /// `zone_watermark_ok_safe` reads the exact count below `percpu_drift_mark`.
    PerCpuDiffs,
}

/// vmstat behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VmstatPolicy {
    pub numa: NumaStats,
    pub free_pages: FreePagesCount,
}

impl VmstatPolicy {
    /// NUMA counters per CPU since v5.14; the free count published exactly (see
    /// [`FreePagesCount::Published`]).
    pub const MAINLINE: VmstatPolicy = VmstatPolicy { numa: NumaStats::PerCpu, free_pages: FreePagesCount::Published };
    /// v4.14 - v5.13: NUMA counters in their own class with the u16 threshold.
    pub const LINUX_4_14: VmstatPolicy = VmstatPolicy {
        numa: NumaStats::SeparateClass { threshold: NumaStats::SEPARATE_CLASS_THRESHOLD },
        ..VmstatPolicy::MAINLINE
    };
}

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
}

impl FragBeyondLinux {
    /// Fullest-first off (its threshold at the value it takes when on).
    pub const OFF: FragBeyondLinux = FragBeyondLinux { fullest_first: false, buddy_bound_free_pages: 128 };
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

/// Allocator behaviour: the pageset switches, the vmstat switches, the configuration of
/// clients' LRU lists, and fragmentation avoidance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Policy {
    pub pcp: PcpPolicy,
    pub vmstat: VmstatPolicy,
    pub lru: LruConfig,
    pub frag: FragPolicy,
    pub arenas: ArenaRule,
}

impl Policy {
    /// The first switch set to act where it cannot, with why, or `None`. A policy with such
    /// a switch would run, and measure, without it; the builder refuses it. Switches at
    /// their neutral value (off, 0, mainline's) are never inert. Pageset switches under
    /// `pcp.enabled = false` are not checked: they describe pagesets the policy turns off.
    pub fn inert_switch(&self) -> Option<&'static str> {
        let (pcp, frag) = (&self.pcp, &self.frag);
        let drain = &pcp.drain;
        let per_cpu_arenas = self.arenas == ArenaRule::PerCpu;
        let rules: [(bool, &'static str); 6] = [
            (
                pcp.enabled && drain.beyond_linux.coalesce_runs && drain.two_pass,
                "drain.coalesce_runs needs single-pass drains, and drain.two_pass is on",
            ),
            (
                pcp.enabled && pcp.free_high_capped && pcp.free_high == FreeHighRule::Off,
                "free_high_capped caps free_high drains, and free_high is off",
            ),
            (
                pcp.enabled && pcp.thp_batch_shift != 0 && pcp.thp_lists == 0,
                "thp_batch_shift sizes the THP lists' refills, and thp_lists is 0",
            ),
            (
                pcp.enabled && drain.beyond_linux.warm_merges && !(frag.beyond_linux.fullest_first || per_cpu_arenas),
                "drain.warm_merges warms buddy-bound flushes, and with neither fullest-first \
                 placement nor per-CPU arenas there are none",
            ),
            (
                pcp.enabled && drain.beyond_linux.hand_remote_frees && !per_cpu_arenas,
                "drain.hand_remote_frees hands frees to another CPU's arena, and arenas are per node",
            ),
            (
                frag.beyond_linux.buddy_bound_free_pages != FragBeyondLinux::OFF.buddy_bound_free_pages
                    && !frag.beyond_linux.fullest_first,
                "frag.buddy_bound_free_pages belongs to fullest-first placement, which is off",
            ),
        ];
        rules.into_iter().find(|&(inert, _)| inert).map(|(_, why)| why)
    }
}

/// How a machine's memory is divided among its CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArenaRule {
    /// Each node's zones serve all its CPUs, one zone lock each (Linux).
    PerNode,
    /// Beyond Linux (the `pagealloc` preset): a single-node machine's zones are cut into one
    /// arena per CPU (at most 8, and at most one per `builder::MIN_ARENA_PAGES`; more CPUs
    /// share them round robin), each arena a node of its
    /// own, as `numa=fake` cuts them. A CPU allocates from its arena first; each arena has
    /// its own zone lock; a free into another CPU's arena goes to that arena's buddy
    /// (batched on the buddy-bound list), not to a remote pageset. Multi-node
    /// descriptions keep their nodes.
    PerCpu,
}

impl PcpPolicy {
    /// Default PCP_BATCH_SCALE_MAX.
    pub const DEFAULT_BATCH_SCALE_MAX: u8 = 5;
    /// Largest PCP_BATCH_SCALE_MAX Linux accepts.
    pub const MAX_BATCH_SCALE: u8 = 6;
    /// Stand-in for "unbounded" free_factor growth; growth stops anyway once the scaled
    /// batch reaches high - batch.
    const UNBOUNDED_SCALE: u8 = 20;

    /// PCP_BATCH_SCALE_MAX in force.
    #[inline]
    pub fn scale_max(&self) -> u8 {
        self.batch_scale_max.unwrap_or(Self::UNBOUNDED_SCALE)
    }

    /// Orders that use the pagesets (mirrors pcp_allowed_order()).
    #[inline]
    pub fn caches_order(&self, order: u8) -> bool {
        self.enabled && (order <= self.max_cached_order || (order == crate::PAGEBLOCK_ORDER && self.thp_lists > 0))
    }
}
