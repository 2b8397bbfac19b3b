//! The allocation path: request checks, the zonelist walk with its watermark tests, pageset
//! or buddy takes, and the slow path (mirrors __alloc_pages(), get_page_from_freelist(),
//! rmqueue(), rmqueue_buddy() and __alloc_pages_slowpath()).

use super::PageAllocator;
use crate::block::Block;
use crate::compaction::{CompactMode, CompactResult};
use crate::error::AllocError;
use crate::events::PageEvent;
use crate::highatomic;
use crate::platform::Platform;
use crate::request::{AllocFlags, AllocRequest, BlockRequest, WatermarkLevel};
use crate::types::{MigrateType, Pfn, ZoneType, COSTLY_ORDER, MAX_ORDER, PAGEBLOCK_ORDER};
use crate::vmstat::{self, NumaEvent};
use crate::watermark::{mark_pages, watermark_fast};
use crate::zone::{zone_flags, Zone};

/// One allocation as the zonelist walk carries it: the block wanted (its flags change
/// between passes) and where it may come from.
#[derive(Clone, Copy)]
struct AllocCall {
    block: BlockRequest,
    highest_zone: ZoneType,
    preferred_node: u16,
    /// The described node `preferred_node` is: zones of its arenas are local to the request.
    preferred_home: u16,
    cpu: usize,
    /// The caller may block and wake kswapd: it may wait for kswapd (`FragPolicy::stall_movable`).
    may_stall: bool,
}

/// Direct reclaim rounds that free pages without the allocation succeeding before the
/// caller gives up on reclaim (MAX_RECLAIM_RETRIES).
const MAX_RECLAIM_RETRIES: u32 = 16;

impl<P: Platform> PageAllocator<P> {
    /// Allocates 2^order contiguous frames.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(3, AllocRequest::USER_MOVABLE).unwrap(); // 8 pages
    /// assert_eq!((block.order(), block.pfn() % 8), (3, 0));
    /// allocator.free_pages(block).unwrap();
    /// ```
    #[inline]
    pub fn alloc_pages(&self, order: u8, request: AllocRequest) -> Result<Block, AllocError> {
        let result = self.alloc_pages_untraced(order, request);
        // mm_page_alloc: one load and a predicted branch without a subscriber.
        if self.sink.0.is_some() {
            if let Ok(block) = &result {
                self.trace_alloc(block.pfn(), order, request);
            }
        }
        result
    }

    #[cold]
    #[inline(never)]
    fn trace_alloc(&self, pfn: Pfn, order: u8, request: AllocRequest) {
        let migratetype = request.migratetype;
        self.trace_page(|| PageEvent::Alloc { pfn, order, migratetype, request });
    }

    #[inline(always)]
    fn alloc_pages_untraced(&self, order: u8, request: AllocRequest) -> Result<Block, AllocError> {
        // One branch for every malformed request; the cold function names the error.
        let zone_allowed = request.highest_zone < ZoneType::Movable
            || (request.highest_zone == ZoneType::Movable && request.migratetype == MigrateType::Movable);
        if order > MAX_ORDER || !request.migratetype.is_mergeable() || !zone_allowed {
            self.check_request(order, &request)?;
        }
        // A CPU id outside 0..nr_cpus breaks the Platform contract; the call stays correct:
        // it takes the first node and, with no pageset for that id, the buddy.
        let cpu = self.platform.current_cpu();
        let node = match request.node {
            None => self.node_of_cpu(cpu),
            Some(home) => self.node_for_request(home, cpu)?,
        };
        let highest_zone = request.highest_zone;
        let zonelist = self.nodes[node as usize].zonelist_from(highest_zone);
        let Some(&preferred_index) = zonelist.first() else {
            return Err(AllocError::NoUsableZone { highest_zone });
        };
        let preferred = &self.zones[preferred_index as usize];
        let mut flags = AllocFlags::fast_path(&request);
        flags.nofragment = preferred.state().nofragment_when_preferred;
        let migratetype = if self.grouping_disabled { MigrateType::Unmovable } else { request.migratetype };
        let block = BlockRequest { order, migratetype, flags };
        // The walk's first step inline: the preferred zone, usually a pageset hit. The
        // request stays in registers here; the walk's `AllocCall` is built only when this
        // fails (passing its address from here spilled it on the hot path).
        if let Some(pfn) = self.try_zone(preferred, block, highest_zone, cpu, true) {
            // The head's word was just stored: this load is forwarded from the store.
            let head = preferred.mem().frame(pfn).info();
            debug_assert!(head.is_alloc_head_of_order(order));
            return Ok(Block::new(pfn, preferred.state().index, self.id, head));
        }
        let may_stall = request.may_reclaim && request.wake_kswapd;
        let preferred_node = preferred.state().node;
        let preferred_home = self.home_of(preferred_node);
        let call = AllocCall { block, highest_zone, preferred_node, preferred_home, cpu, may_stall };
        self.alloc_pages_rest(call, zonelist, &request)
    }

    /// The typed error of a malformed order, type or zone, if any (mirrors the checks
    /// __alloc_pages() and gfp_zone() make).
    #[cold]
    #[inline(never)]
    fn check_request(&self, order: u8, request: &AllocRequest) -> Result<(), AllocError> {
        if order > MAX_ORDER {
            return Err(AllocError::OrderTooLarge { order });
        }
        let (highest_zone, migratetype) = (request.highest_zone, request.migratetype);
        if !migratetype.is_mergeable() {
            return Err(AllocError::UnsupportedMigratetype { migratetype });
        }
        if highest_zone == ZoneType::Device
            || (highest_zone == ZoneType::Movable && migratetype != MigrateType::Movable)
        {
            return Err(AllocError::ZoneNotAllowed { highest_zone, migratetype });
        }
        Ok(())
    }

    /// The rest of the walk after the preferred zone failed, then the slow path.
    #[cold]
    #[inline(never)]
    fn alloc_pages_rest(&self, call: AllocCall, zonelist: &[u16], request: &AllocRequest) -> Result<Block, AllocError> {
        if let Some(block) = self.get_page_from_freelist(call, zonelist, true) {
            return Ok(block);
        }
        if self.policy.frag.beyond_linux.parked_frees && self.collect_parked_in(zonelist, call.highest_zone) {
            if let Some(block) = self.get_page_from_freelist(call, zonelist, false) {
                return Ok(block);
            }
        }
        // Slow path: wake background reclaim on every node the request may use (it runs as
        // the allocator's periodic work, not in this call), then retry at the min watermark
        // with the reserve access the request's priority allows.
        if request.wake_kswapd {
            self.wake_all_kswapds(zonelist, call.highest_zone);
        }
        let order = call.block.order;
        let mut slow_flags = AllocFlags::slow_path(request, order);
        // defrag_mode keeps NOFRAGMENT until reclaim and compaction have failed.
        slow_flags.nofragment = self.policy.frag.defrag_mode;
        let slow = AllocCall { block: BlockRequest { flags: slow_flags, ..call.block }, ..call };
        if let Some(block) = self.get_page_from_freelist(slow, zonelist, false) {
            return Ok(block);
        }
        let result = self.slow_path_reclaim(slow, zonelist, request);
        // About to fail: first the frees other arenas' CPUs handed to these zones.
        if result.is_err() && self.release_handed_over_in(zonelist, call.highest_zone) {
            if let Some(block) = self.get_page_from_freelist(slow, zonelist, false) {
                return Ok(block);
            }
        }
        if result.is_err() && slow.block.flags.nofragment {
            // Reclaim and compaction failed to prevent the fallback: fragment after all.
            let mut fragmenting = slow;
            fragmenting.block.flags.nofragment = false;
            if let Some(block) = self.get_page_from_freelist(fragmenting, zonelist, false) {
                return Ok(block);
            }
        }
        result
    }

    /// The slow path's reclaim and compaction rounds, for a caller that may reclaim.
    fn slow_path_reclaim(
        &self,
        slow: AllocCall,
        zonelist: &[u16],
        request: &AllocRequest,
    ) -> Result<Block, AllocError> {
        let (call, order) = (slow, slow.block.order);
        // A caller that may reclaim asks the reclaim client (direct reclaim) and retries
        // while it makes progress, up to MAX_RECLAIM_RETRIES rounds (mirrors
        // __alloc_pages_direct_reclaim() and should_reclaim_retry()); then it gets one more
        // try after what direct reclaim does when it frees nothing: release high-order
        // atomic reserves and drain every CPU's pagesets.
        if request.may_reclaim {
            // Costly or unmovable high-order requests compact before they reclaim (the
            // first, asynchronous __alloc_pages_direct_compact()); a __GFP_NORETRY costly
            // request gives up if compaction was deferred, or (v5.4 on) could not even start.
            let costly = order > COSTLY_ORDER;
            if order > 0 && (costly || call.block.migratetype != MigrateType::Movable) {
                let (block, result) = self.compact_then_alloc(slow, zonelist, CompactMode::Async);
                if let Some(block) = block {
                    return Ok(block);
                }
                let gives_up = match result {
                    CompactResult::Deferred => true,
                    CompactResult::Skipped => self.policy.frag.noretry_gives_up_when_skipped,
                    _ => false,
                };
                if request.no_retry && costly && gives_up {
                    return Err(AllocError::OutOfMemory { order });
                }
            }
            // Each round reclaims, then compacts whether or not reclaim freed anything (a
            // __GFP_NORETRY costly request stays asynchronous, as Linux keeps it at its
            // initial priority); the rounds end when reclaim frees nothing.
            let mode = if request.no_retry && costly { CompactMode::Async } else { CompactMode::Sync };
            for _ in 0..MAX_RECLAIM_RETRIES {
                let freed_pages = self.direct_reclaim(call.preferred_node, order, call.highest_zone);
                if freed_pages > 0 {
                    if let Some(block) = self.get_page_from_freelist(slow, zonelist, false) {
                        return Ok(block);
                    }
                }
                if order > 0 {
                    if let (Some(block), _) = self.compact_then_alloc(slow, zonelist, mode) {
                        return Ok(block);
                    }
                }
                if freed_pages == 0 || request.no_retry {
                    break;
                }
            }
            for &zone_index in zonelist.iter() {
                let zone = &self.zones[zone_index as usize];
                if zone.state().zone_type <= call.highest_zone {
                    highatomic::unreserve_pageblock(zone.buddy(&self.platform), call.block.migratetype);
                }
            }
            self.pagesets().drain_all();
            if let Some(block) = self.get_page_from_freelist(slow, zonelist, false) {
                return Ok(block);
            }
        }
        Err(AllocError::OutOfMemory { order })
    }

    /// Direct compaction, then one more attempt (mirrors __alloc_pages_direct_compact()):
    /// counts a stall unless compaction was skipped, and its success or failure.
    fn compact_then_alloc(
        &self,
        slow: AllocCall,
        zonelist: &[u16],
        mode: CompactMode,
    ) -> (Option<Block>, CompactResult) {
        let BlockRequest { order, migratetype, .. } = slow.block;
        let whole_blocks_only = slow.block.flags.nofragment;
        let result = self.direct_compact(zonelist, (order, migratetype, slow.highest_zone), (mode, whole_blocks_only));
        if result == CompactResult::Skipped {
            return (None, result);
        }
        let counters = &self.nodes[slow.preferred_node as usize].compact;
        counters.count_stall();
        let block = self.get_page_from_freelist(slow, zonelist, false);
        counters.count_outcome(block.is_some());
        if let Some(block) = &block {
            self.zones[block.zone_index() as usize].state().compact.defer_reset(order, true);
        }
        (block, result)
    }

    /// The zonelist walk from the preferred zone (`zonelist[0]`). `preferred_tried`: the
    /// caller already tried the preferred zone with these flags, so the first pass resumes
    /// after it.
    fn get_page_from_freelist(&self, mut call: AllocCall, zonelist: &[u16], preferred_tried: bool) -> Option<Block> {
        let mut start = usize::from(preferred_tried);
        // defrag_mode never drops NOFRAGMENT in the walk.
        let keep_nofragment = self.policy.frag.defrag_mode;
        let mut stalled = false;
        // At most three passes: with NOFRAGMENT, again after a stall
        // (`FragPolicy::stall_movable`), then without.
        loop {
            let mut dropped_nofragment = false;
            for &zone_index in &zonelist[start.min(zonelist.len())..] {
                let zone = &self.zones[zone_index as usize];
                if zone.state().zone_type > call.highest_zone || !zone.state().is_populated() {
                    continue;
                }
                // Local: the preferred node's zones, with per-CPU arenas every arena's of its
                // described node.
                let local = self.home_of(zone.state().node) == call.preferred_home;
                if call.block.flags.nofragment && !keep_nofragment && !local {
                    // Fragmenting a local zone beats using a remote node.
                    dropped_nofragment = true;
                    break;
                }
                if let Some(pfn) = self.try_later_zone(zone, call, local) {
                    if !local {
                        self.count_foreign(zonelist[0], call.preferred_node);
                    }
                    return Some(Block::new(pfn, zone.state().index, self.id, zone.mem().frame(pfn).info()));
                }
            }
            if keep_nofragment || !(dropped_nofragment || call.block.flags.nofragment) {
                return None;
            }
            start = 0;
            if self.policy.frag.stall_movable && !stalled && self.stall_for_kswapd(call) {
                stalled = true;
                continue;
            }
            call.block.flags.nofragment = false;
        }
    }

    /// `FragPolicy::stall_movable` (patch 5 of the 2018 fragmentation-avoidance series): a
    /// movable request about to fragment a pageblock while kswapd has a boost to reclaim
    /// waits for kswapd's pass first. The pass runs here, on the caller's CPU, standing for
    /// the wait; the walk then retries the local zones without fragmenting before it gives
    /// up NOFRAGMENT. Returns whether it stalled.
    #[cold]
    fn stall_for_kswapd(&self, call: AllocCall) -> bool {
        let node = call.preferred_node;
        let boosted = self.populated_zones(node).any(|zone| zone.state().boost_pages() > 0);
        if !call.may_stall
            || call.block.migratetype != MigrateType::Movable
            || call.block.order >= PAGEBLOCK_ORDER
            || !boosted
        {
            return false;
        }
        self.wake_kswapd_for(node, call.highest_zone);
        self.background().run_kswapd(node);
        self.nodes[node as usize].fragment_stalls.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        true
    }

    #[inline(never)]
    fn try_later_zone(&self, zone: &Zone<P>, call: AllocCall, hit: bool) -> Option<Pfn> {
        self.try_zone(zone, call.block, call.highest_zone, call.cpu, hit)
    }

    /// A miss: the preferred node's zone counts the allocation as foreign (mirrors the
    /// NUMA_FOREIGN step of zone_statistics()). The walk reached this zone, so the
    /// preferred zone's pageset is not held: the event goes to its shared counter.
    #[cold]
    #[inline(never)]
    fn count_foreign(&self, preferred_zone: u16, preferred_node: u16) {
        let zone = &self.zones[preferred_zone as usize];
        debug_assert_eq!(zone.state().node, preferred_node, "the zonelist starts on the preferred node");
        vmstat::count_unbuffered(&self.fold_target(zone), &[NumaEvent::Foreign], self.vmstat.numa_mode());
    }

    /// One zone of the zonelist walk: watermark test, then a block; `hit`: the zone is on
    /// the preferred (described) node. Inlined only into the preferred-zone step; the
    /// walk's loop calls [`Self::try_later_zone`] (inlined there, the optimizer hoisted and
    /// spilled dozens of invariants into the hot path).
    #[inline(always)]
    fn try_zone(
        &self,
        zone: &Zone<P>,
        block: BlockRequest,
        highest_zone: ZoneType,
        cpu: usize,
        hit: bool,
    ) -> Option<Pfn> {
        let has_room = || self.zone_has_room(zone, block.order, highest_zone, block.flags);
        if !(has_room() || self.collect_parked_for_room(zone) && has_room()) {
            return None;
        }
        let pfn = self.rmqueue(zone, cpu, block, hit)?;
        if block.flags.highatomic {
            highatomic::reserve_pageblock(zone.buddy(&self.platform), pfn, block.order);
        }
        Some(pfn)
    }

    /// The watermark test of the zonelist walk. With BELOW_HIGH tracking on, a zone passing
    /// its high watermark is taken at once, and one failing it is flagged BELOW_HIGH (done
    /// here rather than on the hotter free path).
    #[inline]
    fn zone_has_room(&self, zone: &Zone<P>, order: u8, highest_zone: ZoneType, flags: AllocFlags) -> bool {
        let view = zone.watermark_view();
        if self.policy.pcp.below_high && zone.state().flags() & zone_flags::BELOW_HIGH == 0 {
            let high = mark_pages(zone.state(), WatermarkLevel::High);
            if watermark_fast(view, order, high, highest_zone, flags) {
                return true;
            }
            zone.state().set_flag(zone_flags::BELOW_HIGH);
        }
        watermark_fast(view, order, mark_pages(zone.state(), flags.watermark), highest_zone, flags)
    }

    /// Takes one block from `zone` ([`Zone::rmqueue`]), then wakes kswapd outside the zone
    /// lock if the zone's watermark is boosted, whether or not the take found a block, as
    /// rmqueue() tests the mark on both of its exits.
    #[inline(always)]
    pub(super) fn rmqueue(&self, zone: &Zone<P>, cpu: usize, block: BlockRequest, hit: bool) -> Option<Pfn> {
        debug_assert!(zone.pcp.get(cpu).is_none_or(|slot| slot.remote == (self.node_of_cpu(cpu) != zone.state().node)));
        // numa_local: the zone is on the CPU's described node (an arena of it).
        let local = || self.home_of(zone.state().node) == self.home_of(self.node_of_cpu(cpu));
        debug_assert!(zone.pcp.get(cpu).is_none_or(|slot| slot.other_node != local()));
        let pcp = (&self.policy.pcp, cpu);
        let pfn = zone.rmqueue(self.zone_call(), pcp, || self.fallback_rules(), block, (hit, local));
        if zone.take_boost_wakeup(block.flags) {
            self.wake_kswapd_for(zone.state().node, zone.state().zone_type);
        }
        pfn
    }
}
