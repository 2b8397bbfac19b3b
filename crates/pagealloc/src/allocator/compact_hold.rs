//! The pages one compaction run holds outside the buddy: the free scanner's pool, the
//! target a client is moving a block into, and the moved-from blocks claimed but not yet
//! freed. Dropping the hold gives every one of them back to the zone, on the ordinary path
//! and when a client's panic unwinds through the run alike (the client is the embedder's
//! code, called with no allocator lock held), so a run never leaks a page.

use crate::compaction::{FreePool, COMPACT_CLUSTER_MAX};
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::types::Pfn;
use crate::zone::Zone;

pub(super) struct RunHold<'a, P: Platform> {
    zone: &'a Zone<P>,
    platform: &'a P,
    /// Free blocks isolated by the free scanner (mirrors cc->freepages).
    pub(super) pool: FreePool,
    /// The target being lent to the client: its pfn and order, and once handed out the
    /// head it carries; until the client returns.
    in_flight: Option<(Pfn, u8, Option<FrameInfo>)>,
    /// Moved-from blocks claimed back, freed together at the end of a cluster.
    moved: [(Pfn, u8); COMPACT_CLUSTER_MAX],
    moved_len: usize,
    /// Pages of targets the client kept, counted as handed out of the zone with the
    /// cluster's frees (so the zone's alloc and free counters move together).
    kept_target_pages: u64,
}

impl<'a, P: Platform> RunHold<'a, P> {
    pub(super) fn new(zone: &'a Zone<P>, platform: &'a P) -> RunHold<'a, P> {
        RunHold {
            zone,
            platform,
            pool: FreePool::new(),
            in_flight: None,
            moved: [(0, 0); COMPACT_CLUSTER_MAX],
            moved_len: 0,
            kept_target_pages: 0,
        }
    }

    /// The target at `pfn`, of `order`, taken from the pool, is about to be handed out.
    pub(super) fn lend_target(&mut self, pfn: Pfn, order: u8) {
        debug_assert!(self.in_flight.is_none(), "one client call at a time");
        self.in_flight = Some((pfn, order, None));
    }

    /// The lent target's head is now `head`, as the client will see it.
    pub(super) fn target_handed_out(&mut self, head: FrameInfo) {
        debug_assert_eq!(head.state(), FrameState::AllocHead);
        let lent = self.in_flight.as_mut().expect("a target was lent");
        debug_assert_eq!(head.order(), lent.1);
        lent.2 = Some(head);
    }

    /// The client returned; `kept`: it kept the target (the move went through).
    pub(super) fn target_returned(&mut self, kept: bool) {
        let (_, order, _) = self.in_flight.take().expect("a target was lent");
        if kept {
            self.kept_target_pages += 1 << order;
        }
    }

    /// Holds a claimed moved-from block until the cluster's frees.
    pub(super) fn push_moved(&mut self, pfn: Pfn, order: u8) {
        assert!(self.moved_len < COMPACT_CLUSTER_MAX, "more moves than a cluster's candidates");
        self.moved[self.moved_len] = (pfn, order);
        self.moved_len += 1;
    }

    /// Frees the cluster's moved-from blocks under one zone-lock hold, and counts the
    /// targets kept as pages handed out. Returns the pages freed.
    pub(super) fn free_moved(&mut self) -> u64 {
        if self.moved_len == 0 && self.kept_target_pages == 0 {
            return 0;
        }
        // Emptied before the frees: a panic among them must not free them again on unwind.
        let moved_len = core::mem::take(&mut self.moved_len);
        let kept_target_pages = core::mem::take(&mut self.kept_target_pages);
        let mut locked = self.zone.buddy(self.platform).lock();
        let mut freed_pages = 0;
        for &(pfn, order) in &self.moved[..moved_len] {
            locked.release(pfn, order, FrameState::Interior);
            freed_pages += 1u64 << order;
        }
        locked.area.counters.alloc_zone_pages += kept_target_pages;
        drop(locked);
        if freed_pages > 0 {
            self.zone.state().vmstat.count_pgfree(freed_pages);
        }
        freed_pages
    }

    /// Gives the pool back to the buddy (mirrors release_free_list()).
    pub(super) fn release_pool(&mut self) {
        if !self.pool.is_empty() {
            self.pool.release(&mut self.zone.buddy(self.platform).lock());
        }
    }
}

impl<P: Platform> Drop for RunHold<'_, P> {
    fn drop(&mut self) {
        // A target still lent: the run unwound before the client returned it. Take it back
        // if it was never handed out, or if its head is still as handed out (a client that
        // freed it, against the contract, left nothing to take).
        if let Some((pfn, order, head)) = self.in_flight.take() {
            let back = match head {
                None => true,
                Some(head) => self.zone.mem().frame(pfn).transition(head, head.freed()).is_ok(),
            };
            if back {
                self.pool.put_back(pfn, order);
            }
        }
        self.free_moved();
        self.release_pool();
    }
}
