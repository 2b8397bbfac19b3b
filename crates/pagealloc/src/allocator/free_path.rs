//! The free path: claim the block's head atomically (allocated -> interior), then put it on
//! this CPU's pageset or return it to the buddy (mirrors __free_pages() and
//! free_frozen_pages()). Anything unusual takes the checked path, which names the error.

use super::PageAllocator;
use crate::block::Block;
use crate::error::FreeError;
use crate::frame::{FrameInfo, FrameState};
use crate::pcp;
use crate::platform::Platform;
use crate::types::{Pfn, MAX_ORDER, PAGEBLOCK_ORDER};
use crate::zone::Zone;

impl<P: Platform> PageAllocator<P> {
    fn validate_free(&self, pfn: Pfn, order: u8) -> Result<&Zone<P>, FreeError> {
        if order > MAX_ORDER {
            return Err(FreeError::OrderTooLarge { order });
        }
        if pfn & ((1 << order) - 1) != 0 {
            return Err(FreeError::Misaligned { pfn, order });
        }
        let zone = self.zone_of_pfn(pfn).ok_or(FreeError::OutOfRange { pfn })?;
        if zone.mem().frame(pfn).info().state().is_unmanaged() {
            return Err(FreeError::NotManaged { pfn });
        }
        Ok(zone)
    }

    /// Returns a block to the allocator. Every field of the block is checked; a block whose
    /// head was freed and handed out again since (a stale copy rebuilt with
    /// [`Block::from_raw`]) is [`FreeError::StaleBlock`] and frees nothing.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// let copy = unsafe { pagealloc::Block::from_raw(block.raw_parts()) };
    /// allocator.free_pages(block).unwrap();
    /// assert!(allocator.free_pages(copy).is_err()); // a double free is refused, and changes nothing
    /// ```
    #[inline]
    pub fn free_pages(&self, block: Block) -> Result<(), FreeError> {
        // Fast path: the block names its zone, so a well-formed free of an allocated head
        // costs one frame load and the claim.
        if block.allocator_id() == self.id {
            if let Some(zone) = self.zones.get(block.zone_index() as usize) {
                let (pfn, order) = (block.pfn(), block.order());
                // The block's expected head word names the order (at most MAX_ORDER, as a
                // frame's is) and the generation; an allocated head is also aligned.
                let expected = block.expected_head();
                if zone.mem().contains(pfn) && Self::try_claim(zone, pfn, |info| info.matches_allocated(expected)) {
                    self.release_claimed(zone, pfn, order);
                    return Ok(());
                }
            }
        }
        self.free_pages_checked(block)
    }

    /// Claims the head at `pfn` (allocated -> interior, one generation on) if `accept` takes
    /// the word the frame holds; the one lockless claim of both fast paths.
    #[inline(always)]
    pub(super) fn try_claim(zone: &Zone<P>, pfn: Pfn, accept: impl FnOnce(FrameInfo) -> bool) -> bool {
        let frame = zone.mem().frame(pfn);
        let info = frame.info();
        accept(info) && frame.transition(info, info.freed()).is_ok()
    }

    #[cold]
    #[inline(never)]
    fn free_pages_checked(&self, block: Block) -> Result<(), FreeError> {
        let pfn = block.pfn();
        if block.allocator_id() != self.id {
            return Err(FreeError::ForeignBlock { pfn });
        }
        let zone = self.validate_free(pfn, block.order())?;
        if zone.state().index != block.zone_index() {
            return Err(FreeError::WrongZone {
                pfn,
                claimed_zone: block.zone_index(),
                actual_zone: zone.state().index,
            });
        }
        self.free_checked(zone, pfn, block.order(), Some(block.generation()))
    }

    /// Frees by frame number and order, as kernel callers of `__free_pages()` do. With no
    /// [`Block`] there is no generation to check, hence `unsafe`.
    ///
    /// # Safety
    /// The caller owns the allocated block at `pfn` of `order`: it came from this allocator,
    /// its [`Block`] was given up (for example through [`Block::into_raw`]) and will not be
    /// freed, and nothing uses its frames after the call. A free that breaks this is still
    /// rejected whenever the frame shows it (double, interior, wrong order, foreign,
    /// reserved), and the allocator's state stays consistent; what no check can see is a
    /// free of a block that someone else now owns, which frees their frames.
    ///
    /// Safe code cannot free by frame number:
    /// ```compile_fail,E0133
    /// fn free_any<P: pagealloc::platform::Platform>(allocator: &pagealloc::PageAllocator<P>) {
    ///     let _ = allocator.free_pfn(0x1000, 0);
    /// }
    /// ```
    #[inline]
    pub unsafe fn free_pfn(&self, pfn: Pfn, order: u8) -> Result<(), FreeError> {
        if let Some(zone) = self.zone_of_pfn(pfn) {
            if order <= MAX_ORDER && Self::try_claim(zone, pfn, |info| info.is_alloc_head_of_order(order)) {
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
        self.free_checked(zone, pfn, order, None)
    }

    /// The checked claim: names the error of a free that the fast path refused. `generation`
    /// is the block's, when the caller has one.
    pub(super) fn free_checked(
        &self,
        zone: &Zone<P>,
        pfn: Pfn,
        order: u8,
        generation: Option<u32>,
    ) -> Result<(), FreeError> {
        let frame = zone.mem().frame(pfn);
        let mut info = frame.info();
        // Claim the head atomically, so two racing frees of one block cannot both pass.
        // Bounded: each retry means another CPU changed the frame, which ends in a state
        // this loop returns on or claims.
        loop {
            match info.state() {
                FrameState::AllocHead if generation.is_some_and(|generation| generation != info.generation()) => {
                    return Err(FreeError::StaleBlock {
                        pfn,
                        block_generation: generation.unwrap_or_default(),
                        frame_generation: info.generation(),
                    })
                }
                FrameState::AllocHead if info.order() == order => {}
                FrameState::AllocHead => {
                    return Err(FreeError::WrongOrder { pfn, allocated_order: info.order(), freed_order: order })
                }
                FrameState::FreeHead | FrameState::PcpHead | FrameState::Parked => {
                    return Err(Self::free_head_error(pfn, info, generation))
                }
                FrameState::Interior => return Err(FreeError::NotAllocated { pfn }),
                FrameState::Reserved | FrameState::Hole => return Err(FreeError::NotManaged { pfn }),
            }
            match frame.transition(info, info.freed()) {
                Ok(()) => break,
                Err(actual) => info = actual,
            }
        }
        self.release_claimed(zone, pfn, order);
        Ok(())
    }

    /// Why a free of a free head is refused. Every free of a head advances its generation,
    /// so a free head still at the generation it was handed out with (the block's, or 0 for
    /// a free by frame number) was never freed since: it was never allocated. Without
    /// generations nothing tells the two apart, and it is a double free.
    fn free_head_error(pfn: Pfn, info: FrameInfo, generation: Option<u32>) -> FreeError {
        if FrameInfo::GENERATIONS && info.generation() == generation.unwrap_or(0) {
            FreeError::NotAllocated { pfn }
        } else {
            FreeError::DoubleFree { pfn }
        }
    }

    /// Parks a block this caller has claimed in its pageblock, or puts it onto its CPU's
    /// pageset, or into the buddy.
    #[inline]
    fn release_claimed(&self, zone: &Zone<P>, pfn: Pfn, order: u8) {
        debug_assert_eq!(zone.mem().frame(pfn).info().state(), FrameState::Interior, "releasing an unclaimed block");
        zone.core.sink.page(|| crate::events::PageEvent::Free { pfn, order });
        if self.policy.frag.beyond_linux.parked_frees && order <= PAGEBLOCK_ORDER {
            return zone.park(&self.platform, pfn, order);
        }
        if self.policy.pcp.caches_order(order) {
            let cpu = self.platform.current_cpu();
            if let Some(call) = zone.pcp_call(self.zone_call(), &self.policy.pcp, cpu) {
                debug_assert_eq!(call.slot.remote, self.node_of_cpu(cpu) != zone.state().node);
                // Computed once: the atomic claim before and the trylock after make the
                // compiler reload the zone's start for each use.
                let pageblock = zone.mem().pageblock_index(pfn);
                let listed = if self.drains_to_buddy(zone, pageblock, call.slot.remote) {
                    pcp::pcp_free_buddy_bound(&call, pfn, pageblock, order)
                } else {
                    pcp::pcp_free(&call, pfn, pageblock, order)
                };
                if listed {
                    return;
                }
            }
        }
        zone.free_to_buddy(&self.platform, pfn, order);
    }

    /// Fullest-first placement: a page of a pageblock with `buddy_bound_free_pages` free
    /// goes to the buddy, where it can merge, instead of the pageset, which would hand it
    /// out again (batched through the pageset's buddy-bound list). With per-CPU arenas, so
    /// does every free into another CPU's arena (`remote`): a remote pageset would hold it
    /// until it expires (its effect on whole free 2 MiB blocks: docs/decisions.md).
    #[inline(always)]
    fn drains_to_buddy(&self, zone: &Zone<P>, pageblock: usize, remote: bool) -> bool {
        let frag = &self.policy.frag;
        (remote && self.policy.arenas == crate::policy::ArenaRule::PerCpu)
            || frag.beyond_linux.fullest_first
                && zone.mem().pageblock_free.get(pageblock) >= u64::from(frag.beyond_linux.buddy_bound_free_pages)
    }
}
