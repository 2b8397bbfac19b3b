//! The pageset switches: the 2022 high-order and 2023 auto-tuning series' stages, and
//! the drain rules beyond Linux.

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
