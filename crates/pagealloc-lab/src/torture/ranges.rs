//! Range operations racing the workers: a random span of pageblocks taken offline (kept
//! offline until a later `online` from any worker, or the run's end) and contiguous runs
//! beyond MAX_ORDER, held briefly. Refusals are normal (a range holds blocks its page
//! cache client cannot move, or another range operation is running); anything else the
//! allocator returns is a violation. A run's frames are tagged in the shadow like any block.

use std::ops::Range;

use pagealloc::types::PAGEBLOCK_PAGES;
use pagealloc::{AllocError, AllocRequest, Pfn, RangeError};

use super::tally::Op;
use super::worker::Worker;

/// Most pageblocks one offline takes; most pages of a contiguous run.
const OFFLINE_MAX_PAGEBLOCKS: u64 = 4;
const CONTIG_MAX_PAGES: u64 = 3 * PAGEBLOCK_PAGES;
/// Most pageblocks one growth skips (left as holes) and adds past the highest zone's end.
const GROWTH_MAX_GAP_PAGEBLOCKS: u64 = 2;
const GROWTH_MAX_PAGEBLOCKS: u64 = 4;
/// Pages past the highest zone's built end that growths can reach (the shadow covers them).
pub const GROWTH_ROOM_PAGES: u64 =
    pagealloc::growable::MAX_GROWTHS as u64 * (GROWTH_MAX_GAP_PAGEBLOCKS + GROWTH_MAX_PAGEBLOCKS + 1) * PAGEBLOCK_PAGES;

impl Worker<'_> {
    /// Offlines 1 to OFFLINE_MAX_PAGEBLOCKS pageblocks of a random zone.
    pub(super) fn offline_range(&mut self) {
        self.tally.count(Op::Offline);
        let allocator = self.shared.allocator;
        let zone = &allocator.zones()[self.rng.below(allocator.zones().len() as u64) as usize];
        let first = zone.start_pfn().next_multiple_of(PAGEBLOCK_PAGES);
        let end = zone.start_pfn() + zone.spanned_pages();
        let blocks_in_zone = end.saturating_sub(first) / PAGEBLOCK_PAGES;
        if blocks_in_zone == 0 {
            return;
        }
        let blocks = (1 + self.rng.below(OFFLINE_MAX_PAGEBLOCKS)).min(blocks_in_zone);
        let start = first + self.rng.below(blocks_in_zone - blocks + 1) * PAGEBLOCK_PAGES;
        let range = start..start + blocks * PAGEBLOCK_PAGES;
        match allocator.hotplug().offline(range.clone()) {
            Ok(pages) => {
                self.tally.offlined_pages += pages;
                self.shared.offline.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(range);
            }
            Err(error) if refusal(&error) => self.tally.range_refusals += 1,
            Err(error) => self.report_range("offline", &range, &error.to_string()),
        }
    }

    /// Brings back the range offline the longest, if any.
    pub(super) fn online_range(&mut self) {
        self.tally.count(Op::Online);
        let range = {
            let mut offline = self.shared.offline.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if offline.is_empty() {
                return;
            }
            offline.remove(0)
        };
        match self.shared.allocator.hotplug().online(range.clone()) {
            Ok(_) => {}
            Err(RangeError::Concurrent) => {
                self.tally.range_refusals += 1;
                self.shared.offline.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(range);
            }
            Err(error) => self.report_range("online", &range, &error.to_string()),
        }
    }

    /// A contiguous run of 1 to CONTIG_MAX_PAGES pages, aligned to a random power of two
    /// up to a pageblock; its frames tagged, then checked and freed at once.
    pub(super) fn alloc_contig(&mut self) {
        self.tally.count(Op::Contig);
        let pages = 1 + self.rng.below(CONTIG_MAX_PAGES);
        let align = 1u64 << self.rng.below(pagealloc::PAGEBLOCK_ORDER as u64 + 1);
        let run = match self.shared.allocator.alloc_contig(pages, align, AllocRequest::KERNEL) {
            Ok(run) => run,
            Err(AllocError::ContigUnavailable { .. }) => {
                self.tally.range_refusals += 1;
                return;
            }
            Err(error) => return self.report_range("alloc_contig", &(0..pages), &error.to_string()),
        };
        let (pfn, owner) = (run.pfn(), self.owner);
        if !run.pfn().is_multiple_of(align) {
            self.report_range("alloc_contig", &(pfn..pfn + pages), "misaligned run");
        }
        if let Err(violation) = self.shared.shadow.claim(pfn, pages, owner) {
            self.report_range("alloc_contig", &(pfn..pfn + pages), &violation.to_string());
            self.shared.violations.quarantine(pages);
            return;
        }
        self.tally.contig_pages += pages;
        if let Err(violation) = self.shared.shadow.release(pfn, pages, owner) {
            self.report_range("free_contig", &(pfn..pfn + pages), &violation.to_string());
        }
        if let Err(error) = self.shared.allocator.free_contig(run) {
            self.report_range("free_contig", &(pfn..pfn + pages), &error.to_string());
        }
    }

    /// Adds 1 to GROWTH_MAX_PAGEBLOCKS pageblocks past the highest zone's end, after a gap
    /// of up to GROWTH_MAX_GAP_PAGEBLOCKS; refused once the zone has grown its most.
    #[cfg(feature = "memory-growth")]
    pub(super) fn grow_memory(&mut self) {
        self.tally.count(Op::Grow);
        let allocator = self.shared.allocator;
        let Some(zone) = allocator.zones().iter().max_by_key(|zone| zone.start_pfn()) else { return };
        let end = (zone.start_pfn() + zone.spanned_pages()).next_multiple_of(PAGEBLOCK_PAGES);
        let start = end + self.rng.below(GROWTH_MAX_GAP_PAGEBLOCKS + 1) * PAGEBLOCK_PAGES;
        let range = start..start + (1 + self.rng.below(GROWTH_MAX_PAGEBLOCKS)) * PAGEBLOCK_PAGES;
        match allocator.hotplug().add_memory(range.clone(), zone.state().zone_type()) {
            Ok(pages) => self.tally.grown_pages += pages,
            // Another worker's growth since the end was read may have added this range.
            Err(
                RangeError::Grow { reason: pagealloc::GrowError::Exhausted, .. }
                | RangeError::Concurrent
                | RangeError::NotOffline { .. },
            ) => self.tally.range_refusals += 1,
            Err(error) => self.report_range("add_memory", &range, &error.to_string()),
        }
    }

    fn report_range(&self, what: &str, range: &Range<Pfn>, problem: &str) {
        let context = format!("worker {}: {what} {:#x}..{:#x}: {problem}", self.owner, range.start, range.end);
        self.shared.violations.report(context);
    }
}

/// The errors a range operation may meet in a busy machine.
fn refusal(error: &RangeError) -> bool {
    matches!(
        error,
        RangeError::NotOnline { .. }
            | RangeError::ReservedFrame { .. }
            | RangeError::ReservedPageblock { .. }
            | RangeError::Unmovable { .. }
            | RangeError::NoMigrationClient { .. }
            | RangeError::MigrationFailed { .. }
            | RangeError::Busy { .. }
            | RangeError::Concurrent
    )
}
