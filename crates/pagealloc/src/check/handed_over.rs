//! The stack of frees handed to a zone's owner (`crate::remote_frees`), walked in place:
//! every chained block is a pageset head on no other list, and the chains hold exactly the
//! pages the stack counts as pending. The caller holds every pageset of the zone (no push)
//! and its lock taken without releasing the stack (no take).

use core::sync::atomic::Ordering::Relaxed;

use super::ZoneChecker;
use crate::check::InvariantViolation;
use crate::frame::{FrameState, NIL};
use crate::platform::Platform;

impl<P: Platform> ZoneChecker<'_, P> {
    /// Pages pending on the zone's stack of handed-over frees.
    pub(super) fn check_handed_over(&mut self) -> Result<u64, InvariantViolation> {
        let mem = self.zone.mem();
        let remote = &self.zone.core.remote_frees;
        let mut index = remote.first().unwrap_or(NIL);
        let (mut pages, mut blocks) = (0u64, 0usize);
        while index != NIL {
            if index as usize >= mem.frames.len() || blocks == mem.frames.len() {
                return self.fail(None, alloc::format!("handed-over chain runs to frame {index} or loops"));
            }
            let info = mem.frames[index as usize].info();
            if info.state() != FrameState::PcpHead || !self.mark_listed(index) {
                let pfn = mem.pfn(index);
                return self.fail(Some(pfn), alloc::format!("handed over as {info:?}, or on another list too"));
            }
            pages += 1 << info.order();
            blocks += 1;
            index = mem.links[index as usize].next.load(Relaxed);
        }
        let counted = remote.pending_pages();
        if pages != u64::from(counted) {
            return self.fail(None, alloc::format!("handed-over chains hold {pages} pages, {counted} counted pending"));
        }
        Ok(pages)
    }
}
