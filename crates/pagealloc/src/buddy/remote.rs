//! Releasing frees other CPUs handed over (`crate::remote_frees`): under the zone lock,
//! whoever holds it next.

use core::sync::atomic::AtomicU32;
use core::sync::atomic::Ordering::Relaxed;

use super::{LockedZone, PendingRun};
use crate::frame::NIL;
use crate::list::RecordCost;
use crate::platform::Platform;
use crate::remote_frees::RemoteFrees;

impl<P: Platform> LockedZone<'_, P> {
    /// Releases every chain pushed to `remote` into the buddy, contiguous runs coalesced
    /// (each block a `mm_page_pcpu_drain`, as its flush would have made it). Each block
    /// is a pageset head the pushing CPU claimed and listed; its links are reset here.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_remote_frees(&mut self, remote: &RemoteFrees<AtomicU32>) {
        let Some(mut index) = remote.take() else { return };
        let records = self.mem.records(self.platform);
        let mut run = PendingRun::new(true);
        let mut pages = 0u32;
        while index != NIL {
            records.touch(index, true);
            let links = &self.mem.links[index as usize];
            let next = links.next.load(Relaxed);
            links.next.store(NIL, Relaxed);
            links.prev.store(NIL, Relaxed);
            let (pfn, order) = (self.mem.pfn(index), self.mem.frames[index as usize].info().order());
            self.drain_into_run(&mut run, pfn, order);
            pages += 1 << order;
            // The chains hold distinct blocks of this zone: more pages than it has is a cycle.
            debug_assert!(pages as usize <= self.mem.frames.len(), "remote chain longer than the zone");
            index = next;
        }
        self.release_run(&mut run);
        remote.released(pages);
    }
}
