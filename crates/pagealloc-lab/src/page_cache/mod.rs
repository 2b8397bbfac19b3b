//! A page cache beside the allocator for workloads that keep file pages: clean, so reclaim
//! may drop its oldest pages (the allocator's [`Reclaim`] client), and movable, so
//! compaction may move them (its [`Migrate`] client; the copy is charged as touching both
//! pages). It also holds the workload's anonymous memory that compaction may move (no
//! swap: never reclaimed). One per run, shared by the run's CPUs; registered before the
//! run starts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use pagealloc::allocator::{Migrate, MigrateSource, Reclaim, ReclaimReason, ReclaimRequest};
use pagealloc::platform::Platform;
use pagealloc::{Block, PageAllocator, Pfn};
use serde::Serialize;

mod pfn_table;

use pfn_table::PfnTable;

/// Cached blocks by head pfn, and their pfns oldest first: what a page cache reclaims from
/// and compaction moves (also torture's cache). A moved block is queued again as the
/// newest; its old pfn is skipped when it comes up, unless a block read into that pfn since
/// is there, which is as good a victim.
#[derive(Default)]
pub struct AgedBlocks {
    age: VecDeque<Pfn>,
    blocks: PfnTable<Block>,
}

impl AgedBlocks {
    /// Adds a block as the newest.
    pub fn insert(&mut self, block: Block) {
        self.age.push_back(block.pfn());
        self.blocks.insert(block.pfn(), block);
    }

    /// Takes out the oldest block.
    pub fn pop_oldest(&mut self) -> Option<Block> {
        while let Some(pfn) = self.age.pop_front() {
            if let Some(block) = self.blocks.remove(pfn) {
                return Some(block);
            }
        }
        None
    }

    /// Takes out the block compaction names, if it is this one's.
    pub fn take_source(&mut self, source: &MigrateSource) -> Option<Block> {
        self.blocks.get(source.pfn).is_some_and(|block| source.is(block)).then(|| self.blocks.remove(source.pfn))?
    }

    pub fn len(&self) -> usize {
        self.blocks.len()
    }
}

#[derive(Default)]
struct Pages {
    /// File and slab pages, oldest first.
    cache: AgedBlocks,
    /// Heads of the cached blocks that are slab pages (shrinker-owned, not movable).
    slab: PfnTable<()>,
    /// Slab pages a reclaim that might not shrink slab passed over, oldest first: older
    /// than everything left in `cache`, so the next reclaim that may takes them first.
    passed_slab: VecDeque<Block>,
    /// Anonymous blocks: movable, not reclaimable.
    anon: PfnTable<Block>,
}

/// What the cache saw.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PageCacheReport {
    pub pages_read: u64,
    pub reclaimed_kswapd: u64,
    pub reclaimed_direct: u64,
    pub migrated_pages: u64,
    pub refused_moves: u64,
}

#[derive(Default)]
pub struct PageCache {
    pages: Mutex<Pages>,
    /// Pages in `Pages::blocks`, readable without the lock.
    cached_pages: AtomicU64,
    read: AtomicU64,
    reclaimed: [AtomicU64; 2],
    migrated: AtomicU64,
    refused: AtomicU64,
}

impl PageCache {
    fn pages(&self) -> std::sync::MutexGuard<'_, Pages> {
        self.pages.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes over a page the workload read in.
    pub fn insert(&self, block: Block) {
        self.read.fetch_add(block.pages(), Relaxed);
        self.cached_pages.fetch_add(block.pages(), Relaxed);
        self.pages().cache.insert(block);
    }

    /// Takes over a slab page of reclaimable objects (inodes, dentries): dropped with the
    /// oldest files, except by a reclaim that may not shrink slab.
    pub fn insert_slab(&self, block: Block) {
        self.read.fetch_add(block.pages(), Relaxed);
        self.cached_pages.fetch_add(block.pages(), Relaxed);
        let mut pages = self.pages();
        pages.slab.insert(block.pfn(), ());
        pages.cache.insert(block);
    }

    /// Pages of file and slab cache held (anonymous memory not counted).
    pub fn len_pages(&self) -> u64 {
        self.cached_pages.load(Relaxed)
    }

    /// Takes over a block of the workload's anonymous memory: movable, never reclaimed.
    pub fn insert_anon(&self, block: Block) {
        self.pages().anon.insert(block.pfn(), block);
    }

    /// Takes out the oldest page reclaim may drop: slab pages only if `shrink_slab`.
    fn pop_oldest(&self, shrink_slab: bool) -> Option<Block> {
        let mut pages = self.pages();
        let block = loop {
            if shrink_slab {
                if let Some(block) = pages.passed_slab.pop_front() {
                    pages.slab.remove(block.pfn());
                    break block;
                }
            }
            let block = pages.cache.pop_oldest()?;
            if pages.slab.contains(block.pfn()) {
                if !shrink_slab {
                    pages.passed_slab.push_back(block);
                    continue;
                }
                pages.slab.remove(block.pfn());
            }
            break block;
        };
        drop(pages);
        self.cached_pages.fetch_sub(block.pages(), Relaxed);
        Some(block)
    }

    /// Drops up to `pages` of the oldest pages (slab pages too if `shrink_slab`); returns
    /// the pages freed.
    pub fn evict<P: Platform>(&self, allocator: &PageAllocator<P>, pages: u64, shrink_slab: bool) -> u64 {
        let mut freed = 0;
        while freed < pages {
            let Some(block) = self.pop_oldest(shrink_slab) else { break };
            freed += block.pages();
            allocator.free_pages(block).expect("the cache frees what it holds");
        }
        freed
    }

    /// Frees the anonymous memory, as its processes' exit does; returns the pages freed.
    /// In pfn order, so that the run stays deterministic.
    pub fn free_anon<P: Platform>(&self, allocator: &PageAllocator<P>) -> u64 {
        let anon: Vec<Block> = self.pages().anon.drain_in_pfn_order();
        let pages = anon.iter().map(Block::pages).sum();
        for block in anon {
            allocator.free_pages(block).expect("the cache frees what it holds");
        }
        pages
    }

    /// Frees everything (the run's end).
    pub fn free_all<P: Platform>(&self, allocator: &PageAllocator<P>) {
        self.evict(allocator, u64::MAX, true);
        self.free_anon(allocator);
    }

    pub fn report(&self) -> PageCacheReport {
        PageCacheReport {
            pages_read: self.read.load(Relaxed),
            reclaimed_kswapd: self.reclaimed[0].load(Relaxed),
            reclaimed_direct: self.reclaimed[1].load(Relaxed),
            migrated_pages: self.migrated.load(Relaxed),
            refused_moves: self.refused.load(Relaxed),
        }
    }
}

impl<P: Platform> Reclaim<P> for PageCache {
    fn reclaim(&self, allocator: &PageAllocator<P>, request: ReclaimRequest) -> u64 {
        let freed = self.evict(allocator, request.pages, request.shrink_slab);
        self.reclaimed[usize::from(request.reason == ReclaimReason::Direct)].fetch_add(freed, Relaxed);
        freed
    }
}

impl<P: Platform> Migrate<P> for PageCache {
    fn migrate(&self, allocator: &PageAllocator<P>, source: MigrateSource, target: Block) -> Result<Block, Block> {
        let mut pages = self.pages();
        let (old, file) = match pages.cache.take_source(&source) {
            Some(old) => (old, true),
            None if pages.anon.get(source.pfn).is_some_and(|block| source.is(block)) => {
                (pages.anon.remove(source.pfn).expect("checked above"), false)
            }
            None => {
                self.refused.fetch_add(1, Relaxed);
                return Err(target);
            }
        };
        // The copy: read the old page, write the new one.
        allocator.platform().touch_pages(old.pfn(), old.pages());
        allocator.platform().touch_pages(target.pfn(), target.pages());
        self.migrated.fetch_add(target.pages(), Relaxed);
        if file {
            pages.cache.insert(target);
        } else {
            pages.anon.insert(target.pfn(), target);
        }
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagealloc::platform::TestPlatform;
    use pagealloc::{AllocRequest, AllocatorBuilder, ZoneType};

    /// Reclaim that may not shrink slab passes slab pages over, keeping them for the next
    /// reclaim that may, which takes them first (they are the oldest); nothing is lost.
    #[test]
    fn slab_pages_wait_for_a_reclaim_that_may_shrink_slab() {
        let allocator =
            PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(1)).unwrap();
        let cache = PageCache::default();
        let mut order = Vec::new();
        for i in 0..12 {
            let slab = i % 3 == 0;
            let request = if slab { AllocRequest::RECLAIMABLE } else { AllocRequest::USER_MOVABLE };
            let block = allocator.alloc_pages(0, request).unwrap();
            order.push((block.pfn(), slab));
            if slab {
                cache.insert_slab(block);
            } else {
                cache.insert(block);
            }
        }
        let free_before = allocator.zone_free_pages_snapshot(0) + allocator.counters().pcp_pages();
        // Four file pages, skipping the two oldest slab pages among them.
        assert_eq!(cache.evict(&allocator, 4, false), 4);
        assert_eq!(cache.len_pages(), 8);
        let file_left: Vec<_> = order.iter().filter(|(_, slab)| !slab).skip(4).collect();
        assert_eq!(file_left.len(), 4);
        // The next reclaim that may shrink slab takes the passed-over slab pages first.
        assert_eq!(cache.evict(&allocator, 2, true), 2);
        let pages = cache.pages();
        assert!(pages.passed_slab.is_empty());
        assert_eq!(pages.slab.len(), 2, "the two younger slab pages are still cached");
        drop(pages);
        assert_eq!(allocator.zone_free_pages_snapshot(0) + allocator.counters().pcp_pages(), free_before + 6);
        cache.free_all(&allocator);
        assert_eq!(cache.len_pages(), 0);
        allocator.check_invariants().unwrap();
    }
}
