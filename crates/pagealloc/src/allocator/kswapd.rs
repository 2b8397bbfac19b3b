//! Background reclaim (mirrors kswapd() and balance_pgdat()): a pass over a node once it was
//! woken, asking the reclaim client for pages in rounds until the node is balanced at its
//! boosted high watermarks, or for the boosts' worth if it already was. The pass keeps
//! balance_pgdat()'s locals between rounds, so a harness may run it whole
//! ([`crate::Background::run_kswapd`], as a kernel thread's pass looks from outside) or a round
//! of at most SWAP_CLUSTER_MAX pages per call ([`crate::Background::kswapd_round`], so that a
//! simulator interleaves kswapd's work with the CPUs' and allocations see the boost raised
//! while kswapd reclaims it).

use core::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicU8,
    Ordering::{Acquire, Relaxed, Release},
};

use super::reclaim::{ReclaimReason, ReclaimRequest, DEF_PRIORITY, SWAP_CLUSTER_MAX};
use super::PageAllocator;
use crate::platform::Platform;
use crate::types::MAX_NR_ZONES;
use crate::zone::zone_flags::RECLAIM_ACTIVE;

/// A node's kswapd pass in progress: balance_pgdat()'s locals, kept between rounds.
#[derive(Debug, Default)]
pub(crate) struct KswapdPass {
    /// A pass is open.
    open: AtomicBool,
    /// A round is running: rounds of one node never overlap (kswapd is one thread).
    pub(super) in_round: AtomicBool,
    /// Boost still to reclaim (nr_boost_reclaim); 0 for ordinary reclaim.
    boost_left_pages: AtomicU64,
    priority: AtomicU32,
    /// Capped rounds: pages still to ask in the whole round balance_pgdat() would run at
    /// this priority, of which each capped round is a slice; 0 when none is begun.
    round_left_pages: AtomicU64,
    /// Capped rounds: a slice of the whole round freed less than it asked.
    round_fell_short: AtomicBool,
    /// Each zone type's boost when the pass began: what the pass lowers it by.
    start_boosts: [AtomicU64; MAX_NR_ZONES],
    /// The highest zone type the wake-ups asked for, plus one: kcompactd's after the pass.
    highest_zone: AtomicU8,
    /// A task of the harness calls [`crate::Background::kswapd_round`] for this node; the
    /// periodic work leaves kswapd to it.
    pub(super) own_task: AtomicBool,
}

impl KswapdPass {
    pub(crate) fn has_own_task(&self) -> bool {
        self.own_task.load(Relaxed)
    }

    /// Capped rounds start a new whole round at the next slice.
    fn forget_round(&self) {
        self.round_left_pages.store(0, Relaxed);
        self.round_fell_short.store(false, Relaxed);
    }
}

/// What a round did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Round {
    /// The pass goes on.
    Continue,
    /// The pass is over.
    Finished,
}

impl<P: Platform> PageAllocator<P> {
    /// Claims the node's round; opens a pass if none is open and kswapd was woken.
    pub(super) fn claim_round(&self, node: u16) -> bool {
        let state = &self.nodes[node as usize];
        let pass = &state.kswapd.pass;
        if !pass.open.load(Relaxed) && !state.kswapd.is_pending() {
            return false;
        }
        // The round's claim orders the pass state the last round left (Acquire here, Release
        // when a round ends): rounds may run on different threads.
        if pass.in_round.swap(true, Acquire) {
            return false;
        }
        if !pass.open.load(Relaxed) {
            if !state.kswapd.take_wakeup() {
                pass.in_round.store(false, Release);
                return false;
            }
            self.open_pass(node);
        }
        true
    }

    fn open_pass(&self, node: u16) {
        let state = &self.nodes[node as usize];
        let pass = &state.kswapd.pass;
        let highest_zone = state.kswapd.begin_pass();
        let mut boosts_pages = 0;
        for zone in self.zones.iter().filter(|zone| zone.state().node == node) {
            let boost = zone.state().boost_pages();
            pass.start_boosts[zone.state().zone_type as usize].store(boost, Relaxed);
            boosts_pages += boost;
        }
        pass.boost_left_pages.store(boosts_pages, Relaxed);
        pass.priority.store(u32::from(DEF_PRIORITY), Relaxed);
        pass.forget_round();
        pass.highest_zone.store(highest_zone, Relaxed);
        // Pagesets shrink towards their minimum while kswapd works (set_reclaim_active()).
        for zone in self.populated_zones(node) {
            zone.state().set_flag(RECLAIM_ACTIVE);
        }
        pass.open.store(true, Relaxed);
    }

    /// One round: a node short of its boosted high watermarks gets ordinary reclaim until
    /// it is balanced; a node balanced but boosted gets boost reclaim, the boosts' worth of
    /// cheap pages whatever the watermarks say, ending at the first round that frees
    /// nothing. Without `cap_pages` each round lowers the priority: a whole pass runs on
    /// the caller's thread and must end. With it, a round asks at most that many pages, a
    /// slice of balance_pgdat()'s round: once the slices have asked a whole round's worth
    /// the priority steps down if any of them freed less than it asked (raise_priority:
    /// the scan fell short of nr_to_reclaim), and at once when one freed nothing. A client
    /// that frees all it is asked while allocations keep the node short keeps the pass
    /// open, as kswapd stays in balance_pgdat() while its rounds meet their target.
    pub(super) fn round(&self, node: u16, cap_pages: Option<u64>) -> Round {
        let pass = &self.nodes[node as usize].kswapd.pass;
        let Some(client) = self.reclaim.as_ref() else { return self.close_pass(node) };
        let mut priority = pass.priority.load(Relaxed);
        let mut boost_left_pages = pass.boost_left_pages.load(Relaxed);
        self.release_node_handed_over(node);
        let balanced = self.node_balanced(node);
        if !balanced && boost_left_pages > 0 {
            // Short of the watermarks: ordinary reclaim from the first priority; the
            // boosts stay in place until the pass ends.
            boost_left_pages = 0;
            priority = u32::from(DEF_PRIORITY);
            pass.forget_round();
        }
        if (balanced && boost_left_pages == 0) || priority == 0 {
            return self.close_pass(node);
        }
        let boost_only = boost_left_pages > 0;
        let wanted_pages = if boost_only { boost_left_pages.max(SWAP_CLUSTER_MAX) } else { self.node_shortfall(node) };
        let pages = cap_pages.map_or(wanted_pages, |cap| wanted_pages.min(cap));
        let shrink_slab = !boost_only || self.policy.frag.boost_reclaim_shrinks_slab;
        let request = ReclaimRequest {
            node,
            pages,
            reason: ReclaimReason::Background,
            boost_only,
            shrink_slab,
            priority: priority as u8,
        };
        let freed = client.reclaim(self, request);
        self.nodes[node as usize].reclaim.count_kswapd(freed);
        if boost_only {
            // No progress on a boost ends the pass: it must not loop on expensive pages.
            if freed == 0 {
                return self.close_pass(node);
            }
            boost_left_pages -= boost_left_pages.min(freed);
            // Boost reclaim stays at cheap priorities (no writeback).
            if cap_pages.is_none() && priority > u32::from(DEF_PRIORITY) - 2 {
                priority -= 1;
            }
        } else if freed == 0 || self.round_raises_priority(node, wanted_pages, cap_pages.map(|_| (pages, freed))) {
            priority -= 1;
            pass.forget_round();
        }
        pass.boost_left_pages.store(boost_left_pages, Relaxed);
        pass.priority.store(priority, Relaxed);
        Round::Continue
    }

    /// Does this round lower the priority (balance_pgdat()'s raise_priority)? Always for
    /// an uncapped round (`slice` None). A capped one, which asked and freed `slice`, counts
    /// its ask off the `wanted_pages` the whole round's first slice saw; at the whole
    /// round's end, it lowers the priority if some slice freed less than it asked.
    fn round_raises_priority(&self, node: u16, wanted_pages: u64, slice: Option<(u64, u64)>) -> bool {
        let Some((asked_pages, freed_pages)) = slice else { return true };
        let pass = &self.nodes[node as usize].kswapd.pass;
        if freed_pages < asked_pages {
            pass.round_fell_short.store(true, Relaxed);
        }
        let left_pages = match pass.round_left_pages.load(Relaxed) {
            0 => wanted_pages,
            left_pages => left_pages,
        };
        let left_pages = left_pages.saturating_sub(asked_pages);
        pass.round_left_pages.store(left_pages, Relaxed);
        left_pages == 0 && pass.round_fell_short.swap(false, Relaxed)
    }

    /// Ends the pass: each zone's boost drops by what it was when the pass began (boosts
    /// raised meanwhile stay for the next pass), kcompactd is woken if there were any
    /// (under defrag_mode after every pass: kswapd works for free pageblocks), and the
    /// pressure thresholds go unless a wake-up came in meanwhile (kswapd_try_to_sleep()).
    fn close_pass(&self, node: u16) -> Round {
        let state = &self.nodes[node as usize];
        let pass = &state.kswapd.pass;
        for zone in self.populated_zones(node) {
            zone.state().clear_flag(RECLAIM_ACTIVE);
        }
        let mut boosted = false;
        for zone in self.zones.iter().filter(|zone| zone.state().node == node) {
            let start_boost = pass.start_boosts[zone.state().zone_type as usize].swap(0, Relaxed);
            if start_boost == 0 {
                continue;
            }
            boosted = true;
            // Boosts are raised under the zone lock; lowered under it too.
            let _locked = zone.buddy(&self.platform).lock();
            let boost = zone.state().boost_pages();
            zone.state().boost_pages.store(boost - boost.min(start_boost), Relaxed);
        }
        if boosted || self.policy.frag.defrag_mode {
            // For the zones the wake-ups asked for (wakeup_kcompactd() with
            // kswapd_highest_zoneidx); every zone if none said.
            let highest_zone = super::zone_limit(pass.highest_zone.swap(0, Relaxed).wrapping_sub(1));
            self.wake_kcompactd_for(node, crate::types::PAGEBLOCK_ORDER, highest_zone);
        }
        if !state.kswapd.is_pending() {
            self.set_pressure_thresholds(node, false);
            // A wake-up between the load and the store set pressure first: restore it.
            if state.kswapd.is_pending() {
                self.set_pressure_thresholds(node, true);
            }
        }
        pass.open.store(false, Relaxed);
        Round::Finished
    }
}
