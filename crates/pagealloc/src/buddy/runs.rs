//! Coalescing drains (beyond Linux; `DrainBeyondLinux::coalesce_runs`, the `pagealloc` preset).
//! Sequential frees come back out of a pageset as address-contiguous blocks in a row: in the
//! order they were freed (a drain takes list tails) or its reverse (a buddy-bound flush takes
//! heads). Released one page at a time, a run of n pages costs n merges, each an unlink and
//! a list insert; released as its largest aligned blocks it costs about log2(n). The buddy
//! ends in the same blocks either way, since merging does not depend on the order of frees;
//! only the order within the free lists differs.

use super::LockedZone;
use crate::frame::{FrameInfo, FrameState};
use crate::platform::Platform;
use crate::types::{Pfn, MAX_ORDER, PAGEBLOCK_ORDER};

/// Pages released into a drain but not yet given to the buddy: `[start, start + pages)`,
/// their heads already interior. Without coalescing (`enabled` off, Linux) it stays empty
/// and every block goes to the buddy as it comes.
#[derive(Debug)]
pub(crate) struct PendingRun {
    start: Pfn,
    pages: u64,
    enabled: bool,
}

impl PendingRun {
    /// An empty run for one drain; `coalesce` is `DrainBeyondLinux::coalesce_runs`.
    pub(crate) const fn new(coalesce: bool) -> PendingRun {
        PendingRun { start: 0, pages: 0, enabled: coalesce }
    }
}

impl<P: Platform> LockedZone<'_, P> {
    /// Releases the block of `order` at `pfn`, in state `from`, into `run`: it extends the run
    /// at either end, or the run goes to the buddy and the block starts the next one; without
    /// coalescing, the block goes to the buddy at once (`release`). The caller ends with
    /// [`Self::release_run`]. Cost per block: the state change and two compares.
    #[inline(always)]
    pub(crate) fn release_into_run(&mut self, run: &mut PendingRun, pfn: Pfn, order: u8, from: FrameState) {
        if !run.enabled {
            return self.release(pfn, order, from);
        }
        debug_assert!(matches!(from, FrameState::PcpHead | FrameState::Parked | FrameState::Interior));
        let pages = 1u64 << order;
        debug_assert!(order <= MAX_ORDER && pfn & (pages - 1) == 0, "releasing a misaligned block");
        if from != FrameState::Interior {
            self.mem.frame(pfn).change(&[from], FrameInfo::INTERIOR);
        }
        if run.pages != 0 {
            debug_assert!(pfn + pages <= run.start || pfn >= run.start + run.pages, "block released twice");
            if pfn == run.start + run.pages {
                run.pages += pages;
                return;
            }
            if pfn + pages == run.start {
                run.start = pfn;
                run.pages += pages;
                return;
            }
            self.release_run(run);
        }
        (run.start, run.pages) = (pfn, pages);
    }

    /// A pageset block leaves for the buddy (a drain, a buddy-bound flush, a handed-over
    /// free): its `mm_page_pcpu_drain`, then [`Self::release_into_run`] from the PCP head state.
    #[inline(always)]
    pub(crate) fn drain_into_run(&mut self, run: &mut PendingRun, pfn: Pfn, order: u8) {
        self.trace_pcpu_drain(pfn, order);
        self.release_into_run(run, pfn, order, FrameState::PcpHead);
    }

    /// `mm_page_pcpu_drain` for one block: one load and a predicted branch without a subscriber.
    #[inline(always)]
    pub(crate) fn trace_pcpu_drain(&self, pfn: Pfn, order: u8) {
        let mem = self.mem;
        self.sink.page(|| crate::events::PageEvent::PcpuDrain { pfn, order, migratetype: mem.pageblock_type(pfn) });
    }

    /// Gives `run` to the buddy as its largest aligned blocks, and empties it. A block larger
    /// than a pageblock is released whole only if its pageblocks share one type (`release`
    /// lists it under its first pageblock's). A run of one block (the usual case when frees
    /// are random) is released as it is, inline, as a drain without runs would release it.
    #[inline(always)]
    pub(crate) fn release_run(&mut self, run: &mut PendingRun) {
        let (start, pages) = (run.start, run.pages);
        run.pages = 0;
        if pages == 0 {
            return;
        }
        // One aligned block no larger than a pageblock: a power of two, aligned to itself.
        if (start & (pages - 1)) | (pages & (pages - 1)) == 0 && pages <= 1 << PAGEBLOCK_ORDER {
            return self.release(start, pages.trailing_zeros() as u8, FrameState::Interior);
        }
        self.release_blocks(start, start + pages);
    }

    /// Releases `[pfn, end)` as its largest aligned blocks (a block over pageblocks of
    /// several types is freed a pageblock at a time by `release`).
    #[inline(never)]
    fn release_blocks(&mut self, mut pfn: Pfn, end: Pfn) {
        while pfn < end {
            let order = pfn.trailing_zeros().min(MAX_ORDER as u32).min((end - pfn).ilog2()) as u8;
            self.release(pfn, order, FrameState::Interior);
            pfn += 1 << order;
        }
        debug_assert_eq!(pfn, end, "aligned blocks tile the run exactly");
    }
}
