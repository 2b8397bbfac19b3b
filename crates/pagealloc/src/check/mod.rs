//! The invariant checker (our CONFIG_DEBUG_VM): walks every structure of every zone and
//! reports the first inconsistency. Tests run it after every step; it takes each zone lock,
//! so call it at quiescent points.

mod frames;
mod fullness;
mod handed_over;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::Ordering::Relaxed;

use crate::allocator::PageAllocator;
use crate::frame::FrameState;
use crate::free_area::FreeArea;
use crate::pcp::{pindex, pindex_order, PerCpuPages, NR_PCP_LISTS};
use crate::platform::Platform;
use crate::policy::PcpPolicy;
use crate::types::{MigrateType, Pfn, NR_ORDERS, PAGEBLOCK_ORDER, PAGEBLOCK_PAGES};
use crate::zone::Zone;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvariantViolation {
    pub zone_index: u16,
    pub pfn: Option<Pfn>,
    pub what: String,
}

impl core::error::Error for InvariantViolation {}

impl fmt::Display for InvariantViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pfn {
            Some(pfn) => write!(f, "zone {}: pfn {pfn:#x}: {}", self.zone_index, self.what),
            None => write!(f, "zone {}: {}", self.zone_index, self.what),
        }
    }
}

/// Page accounting the checker established by walking every frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageCensus {
    pub managed_pages: u64,
    pub free_pages: u64,
    pub allocated_pages: u64,
    /// Pages cached on per-CPU lists, those handed over to a zone's owner, and those
    /// parked: every managed page out of the buddy that is not allocated.
    pub pcp_pages: u64,
    /// Of `pcp_pages`, those pending on the zones' stacks of handed-over frees
    /// (`DrainBeyondLinux::hand_remote_frees`).
    pub handed_over_pages: u64,
    /// Of `pcp_pages`, those parked in their pageblocks (`FragBeyondLinux::parked_frees`).
    pub parked_pages: u64,
}

impl core::ops::AddAssign for PageCensus {
    fn add_assign(&mut self, other: PageCensus) {
        self.managed_pages += other.managed_pages;
        self.free_pages += other.free_pages;
        self.allocated_pages += other.allocated_pages;
        self.pcp_pages += other.pcp_pages;
        self.handed_over_pages += other.handed_over_pages;
        self.parked_pages += other.parked_pages;
    }
}

struct ZoneChecker<'a, P: Platform> {
    zone: &'a Zone<P>,
    area: &'a FreeArea,
    on_free_list: Vec<u64>,
}

impl<P: Platform> ZoneChecker<'_, P> {
    fn fail<T>(&self, pfn: Option<Pfn>, what: String) -> Result<T, InvariantViolation> {
        Err(InvariantViolation { zone_index: self.zone.state().index, pfn, what })
    }

    fn mark_listed(&mut self, index: u32) -> bool {
        let (word, bit) = (index as usize / 64, index % 64);
        let was = self.on_free_list[word] & (1 << bit) != 0;
        self.on_free_list[word] |= 1 << bit;
        !was
    }

    fn is_listed(&self, index: u32) -> bool {
        self.on_free_list[index as usize / 64] & (1 << (index % 64)) != 0
    }

    /// Every listed frame is a correctly typed, aligned free head, on one list only; the
    /// counts and the lockless mirrors match the lists.
    /// One block on the (order, migratetype) free list: a free head of that order and type,
    /// listed once, aligned inside the zone, in pageblocks of its list's type.
    fn check_free_block(
        &mut self,
        index: u32,
        order: usize,
        migratetype: MigrateType,
    ) -> Result<(), InvariantViolation> {
        let mem = self.zone.mem();
        let pfn = mem.pfn(index);
        let info = mem.frames[index as usize].info();
        if info.state() != FrameState::FreeHead || info.order() as usize != order {
            return self.fail(Some(pfn), alloc::format!("on the order-{order} list but is {info:?}"));
        }
        if info.migratetype() != migratetype {
            return self.fail(Some(pfn), alloc::format!("on the {migratetype:?} list but tagged {info:?}"));
        }
        if !self.mark_listed(index) {
            return self.fail(Some(pfn), String::from("on two free lists (or twice on one)"));
        }
        if pfn & ((1 << order) - 1) != 0 || pfn + (1 << order) > mem.end_pfn() {
            return self.fail(Some(pfn), alloc::format!("order-{order} block misaligned or past the zone"));
        }
        // Under the 2018 fallback design a steal moves free pages to the requester's lists
        // without re-typing their pageblock: only v6.10 bookkeeping makes lists match.
        let pageblocks =
            if self.zone.state().free_lists_match_pageblocks { (1u64 << order).div_ceil(PAGEBLOCK_PAGES) } else { 0 };
        for block in 0..pageblocks {
            let block_type = mem.pageblock_type(pfn + block * PAGEBLOCK_PAGES);
            if block_type != migratetype {
                return self
                    .fail(Some(pfn), alloc::format!("free on the {migratetype:?} list in a {block_type:?} pageblock"));
            }
        }
        Ok(())
    }

    fn check_free_lists(&mut self) -> Result<u64, InvariantViolation> {
        let mem = self.zone.mem();
        let bound = mem.frames.len();
        let mut free_pages = 0u64;
        for order in 0..NR_ORDERS {
            let mut nonempty_mask = 0u8;
            for migratetype in MigrateType::ALL {
                let list = self.area.lists[order][migratetype.index()];
                let mut blocks = 0u64;
                for index in list.iter(&mem.links, bound) {
                    self.check_free_block(index, order, migratetype)?;
                    blocks += 1;
                    free_pages += 1 << order;
                }
                if blocks != self.area.nr_free[order][migratetype.index()] {
                    return self.fail(
                        None,
                        alloc::format!(
                            "order {order} {migratetype:?}: {blocks} blocks listed, {} counted",
                            self.area.nr_free[order][migratetype.index()]
                        ),
                    );
                }
                if blocks > 0 {
                    nonempty_mask |= 1 << migratetype.index();
                }
            }
            if self.area.nonempty_types[order] != nonempty_mask
                || mem.summary.nonempty_types[order].load(Relaxed) != nonempty_mask
            {
                return self.fail(None, alloc::format!("order {order}: non-empty type mask out of date"));
            }
        }
        let free_isolated: u64 =
            (0..NR_ORDERS).map(|order| self.area.nr_free[order][MigrateType::Isolate.index()] << order).sum();
        if free_isolated != self.area.free_isolated_pages {
            return self.fail(None, alloc::format!("{free_isolated} free Isolate pages, accounting disagrees"));
        }
        // Isolated pages are free but not counted free (NR_FREE_PAGES leaves them out).
        let counted_free = free_pages - free_isolated;
        let free_highatomic: u64 =
            (0..NR_ORDERS).map(|order| self.area.nr_free[order][MigrateType::HighAtomic.index()] << order).sum();
        if free_highatomic != self.area.free_highatomic_pages
            || mem.summary.free_highatomic_pages.load(Relaxed) != free_highatomic
        {
            return self.fail(None, alloc::format!("{free_highatomic} free HighAtomic pages, accounting disagrees"));
        }
        // With per-CPU diffs the published count lags by their sum: the published count
        // (signed, as stored) plus the unfolded diffs is the true count.
        let unpublished: i64 = self.area.free_diff.iter().map(|&diff| i64::from(diff)).sum();
        let published = mem.free_pages_signed();
        if counted_free != self.area.free_pages
            || published + unpublished != counted_free as i64
            || self.area.free_pages_accounted != self.area.free_pages && !self.area.free_diff.is_empty()
        {
            return self.fail(
                None,
                alloc::format!(
                    "{counted_free} free pages listed, {} counted, {published} published + {unpublished} in per-CPU diffs",
                    self.area.free_pages,
                ),
            );
        }
        Ok(free_pages)
    }

    /// Every pageset list holds PCP heads of its order and type, on no other list; counts
    /// match; high lies within its bounds (above high_max only as the periodic decay of an
    /// auto-tuned high leaves it).
    fn check_pageset(&mut self, cpu: usize, pcp: &PerCpuPages, policy: &PcpPolicy) -> Result<u64, InvariantViolation> {
        let thp_lists = policy.thp_lists;
        let mem = self.zone.mem();
        let (mut pages, mut thp_pages) = (0u64, 0u64);
        for list_index in 0..NR_PCP_LISTS {
            let order = pindex_order(list_index);
            for index in pcp.lists[list_index].iter(&mem.links, mem.links.len()) {
                let pfn = mem.pfn(index);
                let info = mem.frames[index as usize].info();
                let expected_list = pindex(order, info.migratetype(), thp_lists.max(1));
                if info.state() != FrameState::PcpHead || info.order() != order || expected_list != list_index {
                    return self.fail(Some(pfn), alloc::format!("cpu {cpu} pageset list {list_index} holds {info:?}"));
                }
                if !self.mark_listed(index) {
                    return self.fail(Some(pfn), alloc::format!("cpu {cpu}: on a pageset list and another list"));
                }
                pages += 1 << order;
                if order >= PAGEBLOCK_ORDER {
                    thp_pages += 1 << order;
                }
            }
        }
        if thp_pages != u64::from(pcp.thp_pages) {
            return self.fail(
                None,
                alloc::format!("cpu {cpu}: pageblock-order lists hold {thp_pages} pages, count {}", pcp.thp_pages),
            );
        }
        if pages != pcp.count_pages as u64 {
            return self
                .fail(None, alloc::format!("cpu {cpu}: pageset lists hold {pages} pages, count {}", pcp.count_pages));
        }
        let mut bound_pages = 0u64;
        for index in pcp.buddy_bound.iter(&mem.links, mem.links.len()) {
            let info = mem.frames[index as usize].info();
            if info.state() != FrameState::PcpHead || !self.mark_listed(index) {
                return self.fail(Some(mem.pfn(index)), alloc::format!("cpu {cpu}: buddy-bound list holds {info:?}"));
            }
            bound_pages += 1 << info.order();
        }
        if bound_pages != u64::from(pcp.buddy_bound_pages) || bound_pages >= u64::from(pcp.batch_pages.max(1)) {
            return self.fail(
                None,
                alloc::format!(
                    "cpu {cpu}: buddy-bound list holds {bound_pages} pages, count {}",
                    pcp.buddy_bound_pages
                ),
            );
        }
        let pages = pages + bound_pages;
        // Between the bounds; on a tiny zone high_min may exceed high_max: the kernel's
        // clamp() then gives high_max, and the decay and the free_high shrink floor high at
        // high_min until its next use clamps it again. decay_pcp_high() may also set high
        // above high_max (count - batch << scale_max, with a pageblock-order block on the
        // pageset); every use clamps it again.
        let (low_bound, high_bound) =
            (pcp.high_min_pages.min(pcp.high_max_pages), pcp.high_min_pages.max(pcp.high_max_pages));
        let decayed_above = policy.autotune_high && pcp.high_pages > high_bound;
        if pcp.high_pages < low_bound || (pcp.high_pages > high_bound && !decayed_above) {
            return self.fail(
                None,
                alloc::format!(
                    "cpu {cpu}: high {} outside [{}, {}]",
                    pcp.high_pages,
                    pcp.high_min_pages,
                    pcp.high_max_pages
                ),
            );
        }
        Ok(pages)
    }

    fn check_pageblocks(&self) -> Result<(), InvariantViolation> {
        let counts = self.zone.pageblock_counts();
        if counts.iter().sum::<u64>() != self.zone.mem().pageblock_count() as u64 {
            return self.fail(None, String::from("pageblock counts do not add up"));
        }
        let highatomic_pages = counts[MigrateType::HighAtomic.index()] * PAGEBLOCK_PAGES;
        if highatomic_pages != self.zone.state().reserved_highatomic_pages() {
            return self.fail(
                None,
                alloc::format!(
                    "{highatomic_pages} pages in HighAtomic pageblocks, {} accounted",
                    self.zone.state().reserved_highatomic_pages()
                ),
            );
        }
        Ok(())
    }
}

impl<P: Platform> ZoneChecker<'_, P> {
    /// The frame records and pageblock tables cover the span exactly, grown or not.
    fn check_tables_cover_span(&self) -> Result<(), InvariantViolation> {
        let mem = self.zone.mem();
        let spanned = mem.end_pfn() - mem.start_pfn;
        let slots = crate::zone_mem::pageblock_slots(mem.start_pfn, mem.end_pfn());
        if mem.frames.len() as u64 != spanned || mem.pageblock_count() != slots {
            let (frames, types) = (mem.frames.len(), mem.pageblock_count());
            return self.fail(None, alloc::format!("{frames} frames, {types} pageblocks for a span of {spanned}"));
        }
        Ok(())
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Checks every invariant of every zone; returns the page census on success.
    pub fn check_invariants(&self) -> Result<PageCensus, InvariantViolation> {
        let mut total = PageCensus::default();
        for zone in self.zones() {
            // Lock order as on the free path: pagesets, then the zone.
            let pagesets: Vec<_> = zone.pcp.iter().map(|slot| slot.pageset.lock(self.platform())).collect();
            // The stack of handed-over frees stays as it is: the checker counts it in place.
            let locked = zone.buddy(self.platform()).lock_leaving_handed_over();
            let mut checker = ZoneChecker {
                zone,
                area: &locked.area,
                on_free_list: vec![0u64; zone.mem().frames.len().div_ceil(64)],
            };
            checker.check_tables_cover_span()?;
            let listed_free = checker.check_free_lists()?;
            let handed_over_pages = checker.check_handed_over()?;
            let mut listed_pcp = handed_over_pages;
            for (cpu, pageset) in pagesets.iter().enumerate() {
                listed_pcp += checker.check_pageset(cpu, pageset, &self.policy().pcp)?;
            }
            let census = PageCensus { handed_over_pages, ..checker.check_frames()? };
            // Parked pages are on no list: the fullness check counts them per pageblock.
            if census.pcp_pages != listed_pcp + census.parked_pages {
                return checker.fail(None, String::from("pageset heads and listed pageset blocks disagree"));
            }
            checker.check_pageblocks()?;
            checker.check_fullness()?;
            if census.free_pages != listed_free {
                return checker.fail(None, String::from("free heads and listed blocks disagree"));
            }
            if census.managed_pages != zone.state().managed_pages() {
                return checker.fail(
                    None,
                    alloc::format!(
                        "blocks cover {} pages, {} managed",
                        census.managed_pages,
                        zone.state().managed_pages()
                    ),
                );
            }
            total += census;
        }
        if let Err((node, what)) = self.check_background_cpus() {
            // Reported against the node's own highest zone, the first of its zonelist.
            let zone_index = self.nodes()[usize::from(node)].zonelist.first();
            return Err(InvariantViolation { zone_index: zone_index.copied().unwrap_or(0), pfn: None, what });
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests;
