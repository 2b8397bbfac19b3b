//! The free path: claim the block's head atomically (allocated -> interior), then put it on
//! this CPU's pageset or return it to the buddy (mirrors __free_pages() and
//! free_frozen_pages()). Anything unusual takes the checked path, which names the error.

use super::PageAllocator;
use crate::block::Block;
use crate::error::FreeError;
use crate::frame::{FrameInfo, FrameState};
use crate::pcp;
use crate::platform::Platform;
use crate::types::{Pfn, MAX_ORDER};
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
        if zone.mem.frame(pfn).info().state() == FrameState::Reserved {
            return Err(FreeError::NotManaged { pfn });
        }
        Ok(zone)
    }

    /// Returns a block to the allocator.
    #[inline]
    pub fn free_pages(&self, block: Block) -> Result<(), FreeError> {
        // Fast path: the block names its zone, so a well-formed free of an allocated head
        // costs one frame load and the claim.
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
        // Bounded: each retry means another CPU changed the frame, which ends in a state
        // this loop returns on or claims.
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
        debug_assert_eq!(zone.mem.frame(pfn).info(), FrameInfo::INTERIOR, "releasing an unclaimed block");
        if self.policy.pcp.caches_order(order) {
            if let Some(call) = self.pcp_call(zone, self.platform.current_cpu()) {
                if pcp::pcp_free(&call, pfn, order) {
                    return;
                }
            }
        }
        self.free_to_buddy(zone, pfn, order);
    }

    #[inline(never)]
    fn free_to_buddy(&self, zone: &Zone<P>, pfn: Pfn, order: u8) {
        zone.buddy(&self.platform).lock().release(pfn, order, FrameState::Interior);
    }
}
