//! A node's background workers as state of their own: kswapd's wake-ups and passes
//! (pgdat->kswapd_wait, kswapd_highest_zoneidx), kcompactd's wake-ups and proactive schedule
//! (kcompactd_max_order, kcompactd_highest_zoneidx, the proactive check's deferral), and
//! the reclaim counters. Each owns its rules for waking and being taken; the allocator runs
//! the work (kswapd.rs, kcompactd.rs, reclaim.rs).

use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8};

use super::kswapd::KswapdPass;
use super::reclaim::ReclaimStats;
use crate::compaction::{COMPACT_MAX_DEFER_SHIFT, FRAG_CHECK_INTERVAL_MS};
use crate::types::ZoneType;

/// A node's kswapd: woken, for which zones, its pass in progress, and the passes run.
#[derive(Debug, Default)]
pub(crate) struct Kswapd {
    /// Woken and not yet taken by a pass.
    pending: AtomicBool,
    /// The highest zone type a wake-up asked to balance, plus one; 0 when none did.
    highest_zone: AtomicU8,
    /// Passes opened (pageoutrun).
    runs: AtomicU64,
    /// The pass in progress.
    pub(crate) pass: KswapdPass,
}

impl Kswapd {
    /// Asks for a pass balancing zones up to `highest_zone`; the highest asked since the
    /// last pass began wins (wakeup_kswapd()). Says whether kswapd was newly woken.
    pub(crate) fn wake(&self, highest_zone: ZoneType) -> bool {
        self.highest_zone.fetch_max(highest_zone as u8 + 1, Relaxed);
        !self.pending.swap(true, Relaxed)
    }

    /// Woken and not yet taken.
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Relaxed)
    }

    /// Takes the wake-up for a pass about to open; false if another took it first.
    pub(crate) fn take_wakeup(&self) -> bool {
        self.pending.swap(false, Relaxed)
    }

    /// A pass opens: counted, and the zones asked for taken (plus one; 0: none said).
    pub(crate) fn begin_pass(&self) -> u8 {
        self.runs.fetch_add(1, Relaxed);
        self.highest_zone.swap(0, Relaxed)
    }

    /// Passes opened so far.
    pub(crate) fn runs(&self) -> u64 {
        self.runs.load(Relaxed)
    }
}

/// A node's kcompactd: the order and zones a wake-up asked for, and when the proactive
/// check next runs and how many more it skips.
#[derive(Debug)]
pub(crate) struct Kcompactd {
    /// The largest order asked for since the last pass, plus one; 0 when not woken.
    order: AtomicU32,
    /// The lowest zone limit any wake-up since the last pass asked for, `ALL_ZONES` when
    /// none limited it (wakeup_kcompactd() only lowers it; the pass resets it).
    highest_zone: AtomicU8,
    /// When the proactive check is next due.
    next_proactive_ns: AtomicU64,
    /// Proactive checks still to skip after a pass that did not lower the score.
    proactive_defer: AtomicU32,
}

impl Default for Kcompactd {
    fn default() -> Self {
        Kcompactd {
            order: AtomicU32::new(0),
            highest_zone: AtomicU8::new(super::ALL_ZONES),
            next_proactive_ns: AtomicU64::new(FRAG_CHECK_INTERVAL_MS * 1_000_000),
            proactive_defer: AtomicU32::new(0),
        }
    }
}

impl Kcompactd {
    /// Asks for a pass for `order` in the zones up to `highest_zone`: the largest order and
    /// the lowest limit since the last pass win (wakeup_kcompactd()).
    pub(crate) fn wake(&self, order: u8, highest_zone: ZoneType) {
        self.highest_zone.fetch_min(highest_zone as u8, Relaxed);
        self.order.fetch_max(u32::from(order) + 1, Relaxed);
    }

    /// Takes a wake-up: the order and the zone limit (as stored) asked for, leaving the
    /// next pass unwoken and unlimited; `None` when not woken.
    pub(crate) fn take_wakeup(&self) -> Option<(u8, u8)> {
        // A load first: the common case, not woken, stays a read of a shared line.
        if self.order.load(Relaxed) == 0 {
            return None;
        }
        let wanted = self.order.swap(0, Relaxed);
        (wanted != 0).then(|| ((wanted - 1) as u8, self.highest_zone.swap(super::ALL_ZONES, Relaxed)))
    }

    /// Is the proactive check due at `now_ns`? Claims it, scheduling the next one an
    /// interval on, so that one caller runs it.
    pub(crate) fn claim_proactive_check(&self, now_ns: u64) -> bool {
        let interval_ns = FRAG_CHECK_INTERVAL_MS * 1_000_000;
        let due_ns = self.next_proactive_ns.load(Relaxed);
        now_ns >= due_ns
            && self.next_proactive_ns.compare_exchange(due_ns, now_ns + interval_ns, Relaxed, Relaxed).is_ok()
    }

    /// A check that would compact: skipped (and counted down) while deferred.
    pub(crate) fn skip_deferred_check(&self) -> bool {
        let deferred = self.proactive_defer.load(Relaxed);
        if deferred > 0 {
            self.proactive_defer.store(deferred - 1, Relaxed);
        }
        deferred > 0
    }

    /// After a proactive pass: the next 2^COMPACT_MAX_DEFER_SHIFT checks are skipped unless
    /// it lowered the score.
    pub(crate) fn proactive_pass_done(&self, lowered_score: bool) {
        let defer = if lowered_score { 0 } else { 1 << COMPACT_MAX_DEFER_SHIFT };
        self.proactive_defer.store(defer, Relaxed);
    }

    #[cfg(test)]
    pub(crate) fn proactive_defer(&self) -> u32 {
        self.proactive_defer.load(Relaxed)
    }

    #[cfg(test)]
    pub(crate) fn set_proactive_defer(&self, checks: u32) {
        self.proactive_defer.store(checks, Relaxed);
    }
}

/// A node's reclaim counters (pgsteal_kswapd, pgsteal_direct, allocstall).
#[derive(Debug, Default)]
pub(crate) struct ReclaimCounters {
    pgsteal_kswapd: AtomicU64,
    pgsteal_direct: AtomicU64,
    allocstall: AtomicU64,
}

impl ReclaimCounters {
    /// kswapd's client freed `pages`.
    pub(crate) fn count_kswapd(&self, pages: u64) {
        self.pgsteal_kswapd.fetch_add(pages, Relaxed);
    }

    /// A direct reclaim began.
    pub(crate) fn count_stall(&self) {
        self.allocstall.fetch_add(1, Relaxed);
    }

    /// A direct reclaim's client freed `pages`.
    pub(crate) fn count_direct(&self, pages: u64) {
        self.pgsteal_direct.fetch_add(pages, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> ReclaimStats {
        ReclaimStats {
            pgsteal_kswapd: self.pgsteal_kswapd.load(Relaxed),
            pgsteal_direct: self.pgsteal_direct.load(Relaxed),
            allocstall: self.allocstall.load(Relaxed),
        }
    }
}
