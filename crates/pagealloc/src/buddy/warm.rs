//! Warming a flush's merges before the zone lock (beyond Linux; `DrainBeyondLinux::warm_merges`,
//! the `pagealloc` preset). A random free's merge misses the cache on each buddy's record
//! and on the two free-list neighbours its unlink writes; taken under the zone lock, those
//! misses are hold time that other CPUs queue behind. Linux's prefetch_buddy() (before
//! 2022) touched the one order-0 buddy; this walks the whole merge.

use core::sync::atomic::Ordering::Relaxed;

use crate::list::RecordCost;
use crate::types::{Pfn, MAX_ORDER};
use crate::zone_mem::ZoneMem;

/// Reads, without the zone lock, the records the merge loop of a free of `order` at `pfn`
/// would touch: each free buddy and its free-list neighbours, up to the first buddy that
/// is not free. Other CPUs may be changing them: the values only choose what to read next,
/// every index is bounds-checked, and nothing is written. Cost: one load per buddy and per
/// neighbour, which the merge under the lock then finds cached.
pub(crate) fn warm_merge(mem: &ZoneMem, records: &impl RecordCost, mut pfn: Pfn, mut order: u8) {
    let (frames, links) = (mem.frames.view(), mem.links.view());
    while order < MAX_ORDER {
        let buddy_pfn = pfn ^ (1 << order);
        if !mem.contains(buddy_pfn) {
            return;
        }
        let index = mem.index(buddy_pfn);
        records.touch(index, false);
        if !frames[index as usize].info().is_free_head_of_order(order) {
            return;
        }
        let buddy = &links[index as usize];
        for link in [buddy.next.load(Relaxed), buddy.prev.load(Relaxed)] {
            if (link as usize) < links.len() {
                records.touch(link, false);
                core::hint::black_box(links[link as usize].next.load(Relaxed));
            }
        }
        pfn &= buddy_pfn;
        order += 1;
    }
}
