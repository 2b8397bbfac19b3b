//! The LRU lists of a run whose workload puts pages on them: one `pagealloc::lru::Lru` over
//! every zone of the allocator, with the map from a frame number to its LRU page id.

use pagealloc::lru::{Lru, LruCommit, LruConfig, LruList, LruPage, LruSpan, REMOVAL_LOCK_BATCH};
use pagealloc::platform::Platform;
use pagealloc::{Block, PageAllocator};
use serde::Serialize;

use crate::workload::LruSink;

pub(super) struct LruPages<'a, P: Platform> {
    pub(super) lru: Lru<P>,
    /// The allocator's platform, which the LRU's locks and lines report to.
    platform: &'a P,
    /// Per zone: its first frame, its end, and the id of its first page.
    spans: Vec<(u64, u64, u32)>,
    max_node: u16,
}

impl<'a, P: Platform> LruPages<'a, P> {
    /// The lists of a run of `workload`, if it keeps pages on them.
    pub(super) fn for_workload(
        workload: &dyn crate::workload::Workload,
        allocator: &'a PageAllocator<P>,
        config: LruConfig,
    ) -> Result<Option<LruPages<'a, P>>, String> {
        workload.uses_lru().then(|| LruPages::new(allocator, config)).transpose()
    }

    /// LRU lists covering every frame of `allocator`'s zones.
    fn new(allocator: &'a PageAllocator<P>, config: LruConfig) -> Result<LruPages<'a, P>, String> {
        let mut spans = Vec::new();
        let mut lru_spans = Vec::new();
        let mut next_id = 0u32;
        for zone in allocator.zones() {
            let pages = u32::try_from(zone.spanned_pages()).map_err(|_| "a zone too large for LRU page ids")?;
            spans.push((zone.start_pfn(), zone.start_pfn() + zone.spanned_pages(), next_id));
            lru_spans.push(LruSpan { node: zone.state().node(), zone: zone.state().index(), pages });
            next_id = next_id.checked_add(pages).ok_or("more frames than LRU page ids")?;
        }
        let lru = Lru::new(&lru_spans, allocator.platform().nr_cpus(), config).map_err(|e| e.to_string())?;
        let max_node = allocator.zones().iter().map(|zone| zone.state().node()).max().unwrap_or(0);
        Ok(LruPages { lru, platform: allocator.platform(), spans, max_node })
    }

    fn page(&self, pfn: u64) -> LruPage {
        let &(start, _, first) =
            self.spans.iter().find(|&&(start, end, _)| (start..end).contains(&pfn)).expect("a frame of the allocator");
        LruPage(first + (pfn - start) as u32)
    }

    /// After a run whose tasks released everything: every batch drains to empty lists and
    /// the LRU's invariants hold.
    pub(super) fn check_empty(&self) -> Result<(), String> {
        self.lru.drain_all(self.platform);
        self.lru.check_invariants(self.platform).map_err(|v| format!("LRU invariant violated after the run: {v}"))?;
        let left: u64 = (0..=self.max_node).flat_map(|node| LruList::ALL.map(|list| self.lru.pages(node, list))).sum();
        if left > 0 {
            return Err(format!("{left} pages left on the LRU after the run"));
        }
        Ok(())
    }

    pub(super) fn report(&self) -> LruReport {
        let locks = self.lru.lock_stats();
        let batch_locks = self.lru.batch_lock_stats();
        let stats = self.lru.stats();
        LruReport {
            commit: format!("{:?}", self.lru.config().commit),
            batch_pages: self.lru.config().batch_pages,
            lock_acquisitions: locks.acquisitions,
            lock_contended: locks.contended,
            lock_wait_ns: locks.wait_ns,
            batch_lock_acquisitions: batch_locks.acquisitions,
            batch_lock_wait_ns: batch_locks.wait_ns,
            adds: stats.adds,
            flushes: stats.flushes,
            deletes: stats.deletes,
        }
    }
}

impl<P: Platform> LruSink for LruPages<'_, P> {
    /// A faulted anonymous page goes to the active list, as
    /// lru_cache_add_active_or_unevictable() of the 2018 kernels put it; a new page-cache
    /// page to the inactive file list.
    fn add(&self, block: &Block, list: LruList) {
        self.lru.add(self.platform, self.page(block.pfn()), list).expect("a page added once");
    }

    fn release(&self, blocks: &[Block]) {
        let pages: Vec<LruPage> = blocks.iter().map(|block| self.page(block.pfn())).collect();
        self.lru.delete_batch(self.platform, &pages).expect("pages on the LRU");
    }

    /// A node-lock run, or one page's batch locks.
    fn pages_per_removal_hold(&self) -> usize {
        match self.lru.config().commit {
            LruCommit::Classic => REMOVAL_LOCK_BATCH,
            LruCommit::ScaledRemoval | LruCommit::Splice => 1,
        }
    }
}

/// The LRU's side of a run: its node locks, batch locks and operations.
#[derive(Clone, Debug, Serialize)]
pub struct LruReport {
    pub commit: String,
    pub batch_pages: u8,
    /// The node LRU locks (lru_lock).
    pub lock_acquisitions: u64,
    pub lock_contended: u64,
    pub lock_wait_ns: u64,
    /// The batch locks (scaled modes; none taken in classic).
    pub batch_lock_acquisitions: u64,
    pub batch_lock_wait_ns: u64,
    pub adds: u64,
    pub flushes: u64,
    pub deletes: u64,
}
