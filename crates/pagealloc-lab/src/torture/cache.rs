//! A reclaimable page cache for the torture run, registered as the allocator's reclaim
//! and migration client: workers read order-0 movable pages into it, tagged in the shadow
//! with the cache's own owner, and reclaim (kswapd passes from the periodic work, direct
//! reclaim inside any worker's allocation) drops its oldest pages, verifying and clearing
//! their tags before each free, so the frees reclaim makes are checked as the workers' are.
//! Compaction (direct, kcompactd, proactive, or a worker's explicit run) moves cached
//! pages: each move claims the target's tags and releases the source's, so a target
//! someone else holds, or a source the cache does not, is a violation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pagealloc::allocator::{Migrate, MigrateSource, Reclaim, ReclaimReason, ReclaimRequest};
use pagealloc::platform::StdPlatform;
use pagealloc::{Block, PageAllocator};

use super::shadow::{FrameShadow, Owner};
use super::violations::Violations;
use crate::page_cache::AgedBlocks;

/// The cache's owner tag (workers are 1..=1024).
pub const CACHE_OWNER: Owner = Owner::MAX;

pub struct PageCache {
    pages: Mutex<AgedBlocks>,
    shadow: Arc<FrameShadow>,
    violations: Arc<Violations>,
    /// Pages reclaim dropped, by reason (background, direct).
    reclaimed: [AtomicU64; 2],
    /// Pages compaction moved, and moves refused (the block was no longer cached).
    migrated: AtomicU64,
    refused: AtomicU64,
}

impl PageCache {
    pub fn new(shadow: Arc<FrameShadow>, violations: Arc<Violations>) -> PageCache {
        PageCache {
            pages: Mutex::new(AgedBlocks::default()),
            shadow,
            violations,
            reclaimed: Default::default(),
            migrated: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    fn pages(&self) -> std::sync::MutexGuard<'_, AgedBlocks> {
        self.pages.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn len_pages(&self) -> u64 {
        self.pages().len() as u64
    }

    /// Takes over `block`, already tagged with [`CACHE_OWNER`].
    pub fn insert(&self, block: Block) {
        self.pages().insert(block);
    }

    /// Pages compaction moved, and moves the cache refused.
    pub fn migrations(&self) -> (u64, u64) {
        (self.migrated.load(Ordering::Relaxed), self.refused.load(Ordering::Relaxed))
    }

    /// The oldest cached block, out of the cache.
    fn pop_oldest(&self) -> Option<Block> {
        self.pages().pop_oldest()
    }

    /// Pages reclaim dropped: (background, direct).
    pub fn reclaimed(&self) -> (u64, u64) {
        (self.reclaimed[0].load(Ordering::Relaxed), self.reclaimed[1].load(Ordering::Relaxed))
    }

    /// Drops up to `pages` of the oldest pages; returns how many went back.
    pub fn evict(&self, allocator: &PageAllocator<StdPlatform>, pages: u64) -> u64 {
        let mut freed = 0;
        while freed < pages {
            // Popped under the lock, freed outside it.
            let Some(block) = self.pop_oldest() else { break };
            freed += self.free(allocator, block);
        }
        freed
    }

    /// Frees one cached block after clearing its tags; 0 when the shadow refuses it (the
    /// block is set aside, a violation reported).
    fn free(&self, allocator: &PageAllocator<StdPlatform>, block: Block) -> u64 {
        let (pfn, pages) = (block.pfn(), block.pages());
        if let Err(violation) = self.shadow.release(pfn, pages, CACHE_OWNER) {
            self.violations.report(format!("page cache: reclaim: {violation}"));
            self.violations.quarantine(pages);
            return 0;
        }
        if let Err(error) = allocator.free_pages(block) {
            self.violations.report(format!("page cache: free of pfn {pfn:#x}: {error}"));
        }
        pages
    }
}

impl Reclaim<StdPlatform> for PageCache {
    fn reclaim(&self, allocator: &PageAllocator<StdPlatform>, request: ReclaimRequest) -> u64 {
        let freed = self.evict(allocator, request.pages);
        let reason = usize::from(request.reason == ReclaimReason::Direct);
        self.reclaimed[reason].fetch_add(freed, Ordering::Relaxed);
        freed
    }
}

impl Migrate<StdPlatform> for PageCache {
    fn migrate(&self, _: &PageAllocator<StdPlatform>, source: MigrateSource, target: Block) -> Result<Block, Block> {
        let mut pages = self.pages();
        let Some(old) = pages.take_source(&source) else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(target);
        };
        let (from, to, count) = (source.pfn, target.pfn(), target.pages());
        if let Err(violation) = self.shadow.claim(to, count, CACHE_OWNER) {
            // Compaction handed out a page someone holds: reported, and the move refused
            // (the source stays cached).
            self.violations.report(format!("page cache: migration target: {violation}"));
            pages.insert(old);
            return Err(target);
        }
        if let Err(violation) = self.shadow.release(from, count, CACHE_OWNER) {
            self.violations.report(format!("page cache: migration source: {violation}"));
        }
        pages.insert(target);
        self.migrated.fetch_add(count, Ordering::Relaxed);
        Ok(old)
    }
}
