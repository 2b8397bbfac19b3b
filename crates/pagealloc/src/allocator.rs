//! The page allocator: zonelist walk, fast and slow paths, free path.
//! Mirrors __alloc_pages(), get_page_from_freelist(), rmqueue_buddy() and __free_pages().

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::block::Block;
use crate::builder::{AllocatorBuilder, BuildError};
use crate::error::{AllocError, FreeError};
use crate::events::{EventSink, ExtfragStats};
use crate::fallback::{self, FallbackEnv, RmqueueMode};
use crate::frame::{FrameInfo, FrameState};
use crate::highatomic;
use crate::pcp::{self, DrainCause, PcpCounters, PcpSlot, PerCpuPages};
use crate::platform::Platform;
use crate::policy::Policy;
use crate::request::{AllocFlags, AllocRequest};
use crate::sizing::{MachineSizing, Tunables};
use crate::types::{MigrateType, Pfn, ZoneType, MAX_NR_ZONES, MAX_ORDER, NR_MIGRATETYPES, PAGEBLOCK_PAGES};
use crate::watermark::{mark_pages, watermark_fast};
use crate::zone::{zone_flags, Zone, ZoneMem, ZoneParams};

static NEXT_ALLOCATOR_ID: AtomicU32 = AtomicU32::new(1);

/// One allocation's fixed parameters, threaded through the zonelist walk.
#[derive(Clone, Copy)]
struct AllocCall {
    order: u8,
    migratetype: MigrateType,
    highest_zone: ZoneType,
    preferred_node: u16,
    cpu: usize,
}

/// Per-node state: its CPUs, its zonelist and background-reclaim bookkeeping.
pub struct Node {
    pub(crate) cpu_count: u32,
    /// Zones to try, best first: this node's zones from the highest type down, then other
    /// nodes' by distance (node-ordered zonelist).
    pub(crate) zonelist: Box<[u16]>,
    /// Per highest usable zone type: where in `zonelist` the first zone at or below it
    /// stands (`zonelist.len()` if none), so an allocation finds its preferred zone in O(1).
    pub(crate) zonelist_start: [u16; MAX_NR_ZONES],
    pub(crate) kswapd_pending: AtomicBool,
    pub(crate) kswapd_runs: AtomicU64,
}

impl Node {
    /// The zonelist from the preferred zone for `highest_zone` on (mirrors
    /// first_zones_zonelist()); empty if no zone qualifies.
    #[inline]
    pub(crate) fn zonelist_from(&self, highest_zone: ZoneType) -> &[u16] {
        &self.zonelist[self.zonelist_start[highest_zone.index()] as usize..]
    }

    /// CPUs whose local memory this node is.
    pub fn cpu_count(&self) -> u32 {
        self.cpu_count
    }
    pub fn kswapd_runs(&self) -> u64 {
        self.kswapd_runs.load(Relaxed)
    }
}

pub struct PageAllocator<P: Platform> {
    id: u32,
    platform: P,
    zones: Box<[Zone<P>]>,
    nodes: Box<[Node]>,
    cpu_node: Box<[u16]>,
    sizing: MachineSizing,
    tunables: Tunables,
    policy: Policy,
    /// Mobility grouping off (tiny machine): every request is treated as unmovable.
    grouping_disabled: bool,
    sink: Option<Box<dyn EventSink>>,
}

impl<P: Platform> PageAllocator<P> {
    pub fn builder() -> AllocatorBuilder {
        AllocatorBuilder::new()
    }

    /// Builds the zones, derives their parameters and frees every managed frame into the
    /// buddy in the largest aligned blocks (as memblock_free_all() does at boot).
    pub fn build(mut builder: AllocatorBuilder, platform: P) -> Result<PageAllocator<P>, BuildError> {
        builder.validate(platform.nr_cpus())?;
        let sizing = builder.sizing()?;
        let mut zones = Vec::with_capacity(builder.zones.len());
        for (index, layout) in builder.zones.iter().enumerate() {
            let zone_sizing = sizing.zone(layout.node as usize, layout.zone_type).expect("sized zone");
            let mem = ZoneMem::new(layout.span.start, layout.span.end);
            let mut zone = Zone::new(index as u16, layout.node, layout.zone_type, mem, ZoneParams::from(zone_sizing));
            zone.present_pages = (layout.span.end - layout.span.start) - builder.hole_pages(&layout.span);
            let managed_ranges = builder.managed_ranges(&layout.span);
            zone.managed_pages = managed_ranges.iter().map(|r| r.end - r.start).sum();
            seed_free_memory(&zone, &platform, &managed_ranges);
            zone.pcp = build_pagesets(&zone, &builder, platform.nr_cpus());
            zones.push(zone);
        }

        let cpu_node = builder.cpu_to_node();
        let mut nodes = Vec::new();
        for (node_id, &cpus) in builder.node_cpus.iter().enumerate() {
            let zonelist = build_zonelist(&zones, node_id as u16, builder.node_cpus.len());
            let zonelist_start = core::array::from_fn(|highest| {
                let start = zonelist.iter().position(|&index| zones[index as usize].zone_type.index() <= highest);
                start.unwrap_or(zonelist.len()) as u16
            });
            nodes.push(Node {
                cpu_count: cpus,
                zonelist,
                zonelist_start,
                kswapd_pending: AtomicBool::new(false),
                kswapd_runs: AtomicU64::new(0),
            });
        }
        // NOFRAGMENT when the preferred zone is Normal and DMA32 can take fallbacks instead;
        // on several nodes only if this node has DMA32 (mirrors alloc_flags_nofragment()).
        let single_node = builder.node_cpus.len() == 1;
        let has_dma32: Vec<bool> = (0..builder.node_cpus.len())
            .map(|node| {
                zones.iter().any(|z| z.node as usize == node && z.zone_type == ZoneType::Dma32 && z.is_populated())
            })
            .collect();
        for zone in zones.iter_mut() {
            zone.nofragment_when_preferred =
                zone.zone_type == ZoneType::Normal && (single_node || has_dma32[zone.node as usize]);
        }
        let total_managed: u64 = zones.iter().map(|z| z.managed_pages).sum();
        Ok(PageAllocator {
            id: NEXT_ALLOCATOR_ID.fetch_add(1, Relaxed),
            platform,
            zones: zones.into_boxed_slice(),
            nodes: nodes.into_boxed_slice(),
            cpu_node: cpu_node.into_boxed_slice(),
            sizing,
            tunables: builder.tunables,
            policy: builder.policy,
            grouping_disabled: total_managed < PAGEBLOCK_PAGES * NR_MIGRATETYPES as u64,
            sink: builder.sink,
        })
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn platform(&self) -> &P {
        &self.platform
    }

    pub fn zones(&self) -> &[Zone<P>] {
        &self.zones
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn sizing(&self) -> &MachineSizing {
        &self.sizing
    }

    pub fn tunables(&self) -> &Tunables {
        &self.tunables
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn grouping_disabled(&self) -> bool {
        self.grouping_disabled
    }

    /// Managed pages over all zones.
    pub fn managed_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.managed_pages).sum()
    }

    /// Free pages in the buddy over all zones.
    pub fn buddy_free_pages(&self) -> u64 {
        self.zones.iter().map(|z| z.free_pages()).sum()
    }

    /// Fallback counters summed over all zones.
    pub fn extfrag_stats(&self) -> ExtfragStats {
        let mut total = ExtfragStats::default();
        for zone in self.zones.iter() {
            total += zone.extfrag.snapshot();
        }
        total
    }

    fn node_of_cpu(&self, cpu: usize) -> u16 {
        self.cpu_node.get(cpu).copied().unwrap_or(0)
    }

    fn fallback_env(&self) -> FallbackEnv<'_> {
        FallbackEnv {
            grouping_disabled: self.grouping_disabled,
            watermark_boost_factor: self.tunables.watermark_boost_factor,
            sink: self.sink.as_deref(),
        }
    }

    /// Allocates 2^order contiguous frames.
    #[inline]
    pub fn alloc_pages(&self, order: u8, request: AllocRequest) -> Result<Block, AllocError> {
        if order > MAX_ORDER {
            return Err(AllocError::OrderTooLarge { order });
        }
        if !request.migratetype.is_mergeable() {
            return Err(AllocError::UnsupportedMigratetype { migratetype: request.migratetype });
        }
        let cpu = self.platform.current_cpu();
        let node = match request.node {
            Some(node) if (node as usize) < self.nodes.len() => node,
            _ => self.node_of_cpu(cpu),
        };
        let highest_zone = request.highest_zone;
        let zonelist = self.nodes[node as usize].zonelist_from(highest_zone);
        let Some(&preferred_index) = zonelist.first() else {
            return Err(AllocError::NoUsableZone { highest_zone });
        };
        let preferred = &self.zones[preferred_index as usize];
        let call = AllocCall {
            order,
            migratetype: if self.grouping_disabled { MigrateType::Unmovable } else { request.migratetype },
            highest_zone,
            preferred_node: preferred.node,
            cpu,
        };
        let mut flags = AllocFlags::fast_path(&request);
        flags.nofragment = preferred.nofragment_when_preferred;
        // The walk's first step inline: the preferred zone, usually a pageset hit.
        if let Some(pfn) = self.try_zone(preferred, &call, flags) {
            return Ok(Block::new(pfn, order, preferred.index, self.id));
        }
        self.alloc_pages_rest(&call, flags, zonelist, &request)
    }

    /// The rest of the walk after the preferred zone failed, then the slow path.
    #[cold]
    #[inline(never)]
    fn alloc_pages_rest(
        &self,
        call: &AllocCall,
        flags: AllocFlags,
        zonelist: &[u16],
        request: &AllocRequest,
    ) -> Result<Block, AllocError> {
        if let Some(block) = self.get_page_from_freelist(call, flags, zonelist, true) {
            return Ok(block);
        }

        // Slow path: background reclaim runs (kswapd), then retry at the min watermark with
        // the reserve access the request's priority allows.
        if request.wake_kswapd {
            self.wake_kswapd(call.preferred_node);
            self.run_kswapd(call.preferred_node);
        }
        let flags = AllocFlags::slow_path(request, call.order);
        if let Some(block) = self.get_page_from_freelist(call, flags, zonelist, false) {
            return Ok(block);
        }
        // A caller that may reclaim gets one more try after what direct reclaim does when
        // it frees nothing: release high-order atomic reserves and drain every CPU's
        // pagesets (mirrors the retry in __alloc_pages_direct_reclaim()).
        if request.may_reclaim {
            for &zone_index in zonelist.iter() {
                let zone = &self.zones[zone_index as usize];
                if zone.zone_type <= call.highest_zone {
                    highatomic::unreserve_pageblock(zone, &self.platform, call.migratetype);
                }
            }
            self.drain_all();
            if let Some(block) = self.get_page_from_freelist(call, flags, zonelist, false) {
                return Ok(block);
            }
        }
        Err(AllocError::OutOfMemory { order: call.order })
    }

    /// The zonelist walk from the preferred zone (`zonelist[0]`). `preferred_tried`: the
    /// caller already tried the preferred zone with these flags, so the first pass resumes
    /// after it.
    fn get_page_from_freelist(
        &self,
        call: &AllocCall,
        mut flags: AllocFlags,
        zonelist: &[u16],
        preferred_tried: bool,
    ) -> Option<Block> {
        let (highest_zone, preferred_node) = (call.highest_zone, call.preferred_node);
        let mut start = usize::from(preferred_tried);
        // At most two passes: with NOFRAGMENT, then without.
        for _pass in 0..2 {
            let mut dropped_nofragment = false;
            for &zone_index in &zonelist[start.min(zonelist.len())..] {
                let zone = &self.zones[zone_index as usize];
                if zone.zone_type > highest_zone {
                    continue;
                }
                if flags.nofragment && zone.node != preferred_node {
                    // Fragmenting a local zone beats using a remote node.
                    flags.nofragment = false;
                    dropped_nofragment = true;
                    break;
                }
                if let Some(pfn) = self.try_zone_outlined(zone, call, flags) {
                    return Some(Block::new(pfn, call.order, zone.index, self.id));
                }
            }
            if !(dropped_nofragment || flags.nofragment) {
                return None;
            }
            flags.nofragment = false;
            start = 0;
        }
        None
    }

    #[inline(never)]
    fn try_zone_outlined(&self, zone: &Zone<P>, call: &AllocCall, flags: AllocFlags) -> Option<Pfn> {
        self.try_zone(zone, call, flags)
    }

    /// One zone of the zonelist walk: watermark test, then a block. Inlined only into the
    /// preferred-zone step; the walk's loop calls it out of line (inlined there, the
    /// optimizer hoisted and spilled dozens of invariants into the hot path).
    #[inline(always)]
    fn try_zone(&self, zone: &Zone<P>, call: &AllocCall, flags: AllocFlags) -> Option<Pfn> {
        let AllocCall { order, migratetype, highest_zone, cpu, .. } = *call;
        if !self.zone_has_room(zone, order, highest_zone, flags) {
            return None;
        }
        let pfn = self.rmqueue(zone, cpu, order, migratetype, flags)?;
        if flags.highatomic {
            highatomic::reserve_pageblock(zone, &self.platform, pfn, order);
        }
        Some(pfn)
    }

    /// The watermark test of the zonelist walk. With BELOW_HIGH tracking on, a zone passing
    /// its high watermark is taken at once, and one failing it is flagged BELOW_HIGH (done
    /// here rather than on the hotter free path).
    #[inline]
    fn zone_has_room(&self, zone: &Zone<P>, order: u8, highest_zone: ZoneType, flags: AllocFlags) -> bool {
        if self.policy.pcp.below_high && zone.flags() & zone_flags::BELOW_HIGH == 0 {
            let high = mark_pages(zone, crate::request::WatermarkLevel::High);
            if watermark_fast(zone, order, high, highest_zone, flags) {
                return true;
            }
            zone.set_flag(zone_flags::BELOW_HIGH);
        }
        watermark_fast(zone, order, mark_pages(zone, flags.watermark), highest_zone, flags)
    }

    /// Takes one block: from this CPU's pageset when the order is cached there, else from
    /// the buddy (mirrors rmqueue()).
    #[inline]
    fn rmqueue(
        &self,
        zone: &Zone<P>,
        cpu: usize,
        order: u8,
        migratetype: MigrateType,
        flags: AllocFlags,
    ) -> Option<Pfn> {
        if self.policy.pcp.caches_order(order) {
            let call = self.pcp_call(zone, cpu);
            let pfn = pcp::pcp_alloc(&call, || self.fallback_env(), pcp::BlockRequest { order, migratetype, flags });
            if let Some(pfn) = pfn {
                self.after_zone_take(zone, flags);
                return Some(pfn);
            }
        }
        self.rmqueue_buddy(zone, order, migratetype, flags)
    }

    /// The calling CPU's pageset of `zone`.
    #[inline]
    fn pcp_call<'a>(&'a self, zone: &'a Zone<P>, cpu: usize) -> pcp::PcpCall<'a, P> {
        pcp::PcpCall {
            zone,
            platform: &self.platform,
            policy: &self.policy.pcp,
            cpu,
            remote: self.node_of_cpu(cpu) != zone.node,
        }
    }

    /// A fallback may have boosted the watermark: wake kswapd outside the zone lock.
    #[inline]
    fn after_zone_take(&self, zone: &Zone<P>, flags: AllocFlags) {
        if flags.kswapd
            && zone.flags() & zone_flags::BOOSTED_WATERMARK != 0
            && zone.clear_flag(zone_flags::BOOSTED_WATERMARK)
        {
            self.wake_kswapd(zone.node);
        }
    }

    /// Takes one block from the zone under its lock (mirrors rmqueue_buddy()).
    #[inline(never)]
    fn rmqueue_buddy(&self, zone: &Zone<P>, order: u8, migratetype: MigrateType, flags: AllocFlags) -> Option<Pfn> {
        let env = self.fallback_env();
        let pfn = {
            let mut area = zone.free.lock(&self.platform);
            let mut ctx = zone.buddy(&mut area, &self.platform);
            let mut pfn = None;
            if flags.highatomic {
                pfn = ctx.take_smallest(order, MigrateType::HighAtomic);
            }
            if pfn.is_none() {
                let mut mode = RmqueueMode::Normal;
                pfn = fallback::rmqueue(zone, &mut ctx, &env, order, migratetype, flags, &mut mode);
                // Failing now is worse than failing a future high-order atomic request.
                if pfn.is_none() && flags.non_block {
                    pfn = ctx.take_smallest(order, MigrateType::HighAtomic);
                }
            }
            let pfn = pfn?;
            zone.mem.frame(pfn).set_info(FrameInfo::new(FrameState::AllocHead, order, migratetype));
            ctx.area.counters.alloc_zone_pages += 1 << order;
            pfn
        };
        self.after_zone_take(zone, flags);
        Some(pfn)
    }

    /// Asks background reclaim to balance `node` (mirrors wakeup_kswapd()).
    pub fn wake_kswapd(&self, node: u16) {
        self.nodes[node as usize].kswapd_pending.store(true, Relaxed);
    }

    /// One kswapd pass for `node` if it was woken. This allocator has no reclaimable pages
    /// yet (no LRU), so a boosted pass reclaims nothing, and kswapd then drops the boosts
    /// as the kernel does after a boost-only pass. Returns whether it ran.
    pub fn run_kswapd(&self, node: u16) -> bool {
        let state = &self.nodes[node as usize];
        if !state.kswapd_pending.swap(false, Relaxed) {
            return false;
        }
        state.kswapd_runs.fetch_add(1, Relaxed);
        for zone in self.zones.iter().filter(|zone| zone.node == node) {
            zone.boost_pages.store(0, Relaxed);
        }
        true
    }

    /// Zone holding `pfn`.
    pub fn zone_of_pfn(&self, pfn: Pfn) -> Option<&Zone<P>> {
        self.zones.iter().find(|zone| zone.mem.contains(pfn))
    }

    fn validate_free(&self, pfn: Pfn, order: u8) -> Result<&Zone<P>, FreeError> {
        if order > MAX_ORDER {
            return Err(FreeError::OrderTooLarge { order });
        }
        if pfn & ((1 << order) - 1) != 0 {
            return Err(FreeError::Misaligned { pfn, order });
        }
        let zone = self.zone_of_pfn(pfn).ok_or(FreeError::OutOfRange { pfn })?;
        if zone.mem.frame(pfn).info().state() == FrameState::Reserved {
            return Err(FreeError::NotManaged { pfn });
        }
        Ok(zone)
    }

    /// Returns a block to the allocator.
    #[inline]
    pub fn free_pages(&self, block: Block) -> Result<(), FreeError> {
        // Fast path: the block names its zone, so a well-formed free of an allocated head
        // costs one frame load and the claim. Anything unusual takes the checked path,
        // which re-reads everything and names the error.
        if block.allocator_id() == self.id {
            if let Some(zone) = self.zones.get(block.zone_index() as usize) {
                let (pfn, order) = (block.pfn(), block.order());
                if zone.mem.contains(pfn) && Self::try_claim_allocated(zone, pfn, order) {
                    self.release_claimed(zone, pfn, order);
                    return Ok(());
                }
            }
        }
        self.free_pages_checked(block)
    }

    /// Claims the head of an allocated block of `order` (allocated -> interior), if that is
    /// what the frame holds. Also rejects a misaligned `pfn`: an allocated head is aligned.
    #[inline]
    fn try_claim_allocated(zone: &Zone<P>, pfn: Pfn, order: u8) -> bool {
        if order > MAX_ORDER {
            return false;
        }
        let frame = zone.mem.frame(pfn);
        let info = frame.info();
        info.is_alloc_head_of_order(order) && frame.transition(info, FrameInfo::INTERIOR).is_ok()
    }

    #[cold]
    #[inline(never)]
    fn free_pages_checked(&self, block: Block) -> Result<(), FreeError> {
        let pfn = block.pfn();
        if block.allocator_id() != self.id {
            return Err(FreeError::ForeignBlock { pfn });
        }
        let zone = self.validate_free(pfn, block.order())?;
        if zone.index != block.zone_index() {
            return Err(FreeError::WrongZone { pfn, claimed_zone: block.zone_index(), actual_zone: zone.index });
        }
        self.free_checked(zone, pfn, block.order())
    }

    /// Frees by frame number and order, as kernel callers of `__free_pages()` do.
    #[inline]
    pub fn free_pfn(&self, pfn: Pfn, order: u8) -> Result<(), FreeError> {
        if let Some(zone) = self.zone_of_pfn(pfn) {
            if Self::try_claim_allocated(zone, pfn, order) {
                self.release_claimed(zone, pfn, order);
                return Ok(());
            }
        }
        self.free_pfn_checked(pfn, order)
    }

    #[cold]
    #[inline(never)]
    fn free_pfn_checked(&self, pfn: Pfn, order: u8) -> Result<(), FreeError> {
        let zone = self.validate_free(pfn, order)?;
        self.free_checked(zone, pfn, order)
    }

    fn free_checked(&self, zone: &Zone<P>, pfn: Pfn, order: u8) -> Result<(), FreeError> {
        let frame = zone.mem.frame(pfn);
        let mut info = frame.info();
        // Claim the head atomically, so two racing frees of one block cannot both pass.
        loop {
            match info.state() {
                FrameState::AllocHead if info.order() == order => {}
                FrameState::AllocHead => {
                    return Err(FreeError::WrongOrder { pfn, allocated_order: info.order(), freed_order: order })
                }
                FrameState::FreeHead | FrameState::PcpHead => return Err(FreeError::DoubleFree { pfn }),
                FrameState::Interior => return Err(FreeError::NotAllocated { pfn }),
                FrameState::Reserved => return Err(FreeError::NotManaged { pfn }),
            }
            match frame.transition(info, FrameInfo::INTERIOR) {
                Ok(()) => break,
                Err(actual) => info = actual,
            }
        }
        self.release_claimed(zone, pfn, order);
        Ok(())
    }

    /// Puts a block this caller has claimed onto its CPU's pageset, or into the buddy.
    #[inline]
    fn release_claimed(&self, zone: &Zone<P>, pfn: Pfn, order: u8) {
        if self.policy.pcp.caches_order(order)
            && pcp::pcp_free(&self.pcp_call(zone, self.platform.current_cpu()), pfn, order)
        {
            return;
        }
        self.free_to_buddy(zone, pfn, order);
    }

    #[inline(never)]
    fn free_to_buddy(&self, zone: &Zone<P>, pfn: Pfn, order: u8) {
        let mut area = zone.free.lock(&self.platform);
        // Read under the lock: a concurrent claim may be re-typing this pageblock.
        let migratetype = zone.mem.pageblock_type(pfn);
        let mut ctx = zone.buddy(&mut area, &self.platform);
        ctx.free_one(pfn, order, migratetype);
        ctx.area.counters.freed_to_zone_pages += 1 << order;
    }

    /// Empties `cpu`'s pagesets in every zone; returns pages drained.
    fn drain_cpu_pagesets(&self, cpu: usize, cause: DrainCause) -> u64 {
        self.zones
            .iter()
            .filter_map(|zone| zone.pcp.get(cpu).map(|slot| (zone, slot)))
            .map(|(zone, slot)| pcp::drain_pcp(zone, &self.platform, slot, &self.policy.pcp, cause) as u64)
            .sum()
    }

    /// Drains the calling CPU's pagesets (mirrors drain_local_pages()).
    pub fn drain_local(&self) -> u64 {
        self.drain_cpu_pagesets(self.platform.current_cpu(), DrainCause::Explicit)
    }

    /// Drains every CPU's pagesets that hold pages (mirrors drain_all_pages()).
    pub fn drain_all(&self) -> u64 {
        (0..self.platform.nr_cpus()).map(|cpu| self.drain_cpu_pagesets(cpu, DrainCause::Explicit)).sum()
    }

    /// A CPU went offline: return its cached pages (mirrors page_alloc_cpu_dead()).
    pub fn cpu_offline(&self, cpu: usize) -> u64 {
        self.drain_cpu_pagesets(cpu, DrainCause::CpuOffline)
    }

    /// The periodic vmstat work of `cpu` (every second in Linux): decay auto-tuned high
    /// and drain the excess; drain remote-node pagesets idle for 3 ticks. Returns pages
    /// drained. Call it from a timer, a background thread, or the simulator's clock.
    pub fn vmstat_tick(&self, cpu: usize) -> u64 {
        let policy = &self.policy.pcp;
        let cpu_node = self.node_of_cpu(cpu);
        let mut drained = 0u64;
        for zone in self.zones.iter() {
            let Some(slot) = zone.pcp.get(cpu) else { continue };
            let mut pageset = slot.pageset.lock(&self.platform);
            let mut excess = pcp::decay_high(&mut pageset, policy);
            // Mainline frees the excess in batch-sized chunks, each under its own hold of
            // the pageset lock; earlier kernels in one hold.
            while excess > 0 {
                let chunk = if policy.drain.chunked { excess.min(pageset.batch.max(1)) } else { excess };
                let freed =
                    pcp::free_pcppages_bulk(zone, &self.platform, &mut pageset, chunk, 0, policy, DrainCause::Decay);
                drained += freed as u64;
                excess = excess.saturating_sub(freed);
                if freed == 0 || excess == 0 {
                    break;
                }
                drop(pageset);
                pageset = slot.pageset.lock(&self.platform);
            }
            if zone.node == cpu_node || pageset.expire == 0 || pageset.count == 0 {
                pageset.expire = 0;
                continue;
            }
            pageset.expire -= 1;
            if pageset.expire == 0 {
                let batch = pageset.batch;
                drained += pcp::free_pcppages_bulk(
                    zone,
                    &self.platform,
                    &mut pageset,
                    batch,
                    0,
                    policy,
                    DrainCause::RemoteExpire,
                ) as u64;
            }
        }
        drained
    }

    /// Pages held in pagesets now, over all zones and CPUs.
    pub fn pcp_pages(&self) -> u64 {
        self.zones
            .iter()
            .flat_map(|zone| zone.pcp.iter())
            .map(|slot| slot.inspect(&self.platform, |p| p.count_pages() as u64))
            .sum()
    }

    /// Pageset counters summed over all zones and CPUs.
    pub fn pcp_counters(&self) -> PcpCounters {
        let mut total = PcpCounters::default();
        for slot in self.zones.iter().flat_map(|zone| zone.pcp.iter()) {
            total += slot.inspect(&self.platform, |p| p.counters());
        }
        total
    }

    /// Zone-lock counters summed over zones.
    pub fn zone_counters(&self) -> crate::free_area::ZoneCounters {
        let mut total = crate::free_area::ZoneCounters::default();
        for zone in self.zones.iter() {
            total += zone.with_free_area(&self.platform, |area| area.counters());
        }
        total
    }

    /// Zone-lock statistics summed over zones.
    pub fn zone_lock_stats(&self) -> crate::sync::LockStats {
        let mut total = crate::sync::LockStats::default();
        for zone in self.zones.iter() {
            total += zone.free.stats();
        }
        total
    }
}

/// One pageset per CPU with the zone's batch and high bounds (policy overrides applied).
/// Before auto-tuning, high is fixed at the low-watermark share (high_min).
fn build_pagesets<P: Platform>(zone: &Zone<P>, builder: &AllocatorBuilder, nr_cpus: usize) -> Box<[PcpSlot<P>]> {
    let policy = &builder.policy.pcp;
    if !policy.enabled || !zone.is_populated() {
        return Box::new([]);
    }
    let bounds = zone.params.pcp;
    let batch = policy.batch_override.map_or(bounds.batch_pages as u32, |b| b.max(1));
    let (high_min, high_max) = match policy.high_override {
        Some(high) => (high, high),
        None if policy.autotune_high => (bounds.high_min_pages as u32, bounds.high_max_pages as u32),
        None => (bounds.high_min_pages as u32, bounds.high_min_pages as u32),
    };
    let free_high_batch = builder.llc.is_some_and(|llc| llc.slice_holds_batches(batch as u64));
    (0..nr_cpus)
        .map(|cpu| PcpSlot::new(zone.index, cpu as u32, PerCpuPages::new(batch, high_min, high_max, free_high_batch)))
        .collect()
}

/// Frees each managed range into the buddy in maximal naturally aligned blocks.
fn seed_free_memory<P: Platform>(zone: &Zone<P>, platform: &P, ranges: &[core::ops::Range<Pfn>]) {
    let mut area = zone.free.lock(platform);
    let mut ctx = zone.buddy(&mut area, platform);
    for range in ranges {
        for pfn in range.clone() {
            zone.mem.frame(pfn).set_info(FrameInfo::INTERIOR);
        }
        let mut pfn = range.start;
        while pfn < range.end {
            let align_order = pfn.trailing_zeros().min(MAX_ORDER as u32);
            let fit_order = 63 - (range.end - pfn).leading_zeros();
            let order = align_order.min(fit_order) as u8;
            ctx.free_one(pfn, order, zone.mem.pageblock_type(pfn));
            pfn += 1 << order;
        }
    }
}

/// Node-ordered zonelist: local zones highest type first, then other nodes by distance
/// (|a - b|, ties to the lower id), skipping unpopulated zones.
fn build_zonelist<P: Platform>(zones: &[Zone<P>], node: u16, node_count: usize) -> Box<[u16]> {
    let mut node_order: Vec<u16> = (0..node_count as u16).collect();
    node_order.sort_by_key(|&other| (other.abs_diff(node), other));
    let mut zonelist = Vec::new();
    for other in node_order {
        let mut local: Vec<&Zone<P>> = zones.iter().filter(|zone| zone.node == other && zone.is_populated()).collect();
        local.sort_by_key(|zone| core::cmp::Reverse(zone.zone_type));
        zonelist.extend(local.iter().map(|zone| zone.index));
    }
    zonelist.into_boxed_slice()
}
