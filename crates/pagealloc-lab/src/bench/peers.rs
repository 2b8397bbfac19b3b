//! The allocators `pagelab bench` compares, behind one small interface.

use std::sync::Mutex;

use pagealloc::platform::StdPlatform;
use pagealloc::types::PAGEBLOCK_ORDER;
use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, Policy, ZoneType};

/// What a benchmark thread needs from an allocator.
pub trait FrameSource: Sync {
    fn name(&self) -> &'static str;
    /// One block of 2^order frames; its first frame number.
    fn get(&self, order: u8) -> Option<u64>;
    fn put(&self, frame: u64, order: u8);
    /// The blocks at `frames`, all of `order`, freed in order: one by one unless the
    /// allocator has a bulk free.
    fn put_many(&self, frames: &[u64], order: u8) {
        for &frame in frames {
            self.put(frame, order);
        }
    }
    /// Share of managed memory free as whole, aligned 2 MiB blocks, in percent.
    fn free_huge_pct(&self) -> f64;
    /// Metadata bytes per frame, when the allocator has a fixed per-frame cost.
    fn metadata_bytes_per_frame(&self) -> Option<usize>;
}

/// pagealloc over one Normal zone, with a policy (PCP on or off).
pub struct Pagealloc {
    allocator: PageAllocator<StdPlatform>,
    name: &'static str,
}

impl Pagealloc {
    pub fn new(frames: u64, policy: Policy, name: &'static str) -> Result<Pagealloc, pagealloc::BuildError> {
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, frames).policy(policy);
        let allocator = PageAllocator::build(builder, StdPlatform::new())?;
        Ok(Pagealloc { allocator, name })
    }
}

impl FrameSource for Pagealloc {
    fn name(&self) -> &'static str {
        self.name
    }

    #[inline]
    fn get(&self, order: u8) -> Option<u64> {
        // Movable user memory: the bench's frames are like anonymous pages.
        self.allocator.alloc_pages(order, AllocRequest::USER_MOVABLE).ok().map(|block| block.pfn())
    }

    #[inline]
    fn put(&self, frame: u64, order: u8) {
        // SAFETY: the bench puts each frame it got from `get` exactly once, at the order it
        // asked for, and `get` gave up the block for its frame number.
        unsafe { self.allocator.free_pfn(frame, order) }.expect("bench frees what it allocated");
    }

    fn put_many(&self, frames: &[u64], order: u8) {
        // SAFETY: as in `put`, for every frame of the slice.
        unsafe { self.allocator.free_pfns_bulk(frames, order) }.expect("bench frees what it allocated");
    }

    fn free_huge_pct(&self) -> f64 {
        crate::run::free_huge_pct(&self.allocator)
    }

    fn metadata_bytes_per_frame(&self) -> Option<usize> {
        Some(pagealloc::FRAME_METADATA_BYTES)
    }
}

/// buddy_system_allocator's FrameAllocator (a BTreeSet per order) behind one std Mutex.
pub struct BuddySystem {
    inner: Mutex<buddy_system_allocator::FrameAllocator<33>>,
    frames: u64,
}

impl BuddySystem {
    pub fn new(frames: u64) -> BuddySystem {
        let mut inner = buddy_system_allocator::FrameAllocator::<33>::new();
        inner.add_frame(0, frames as usize);
        BuddySystem { inner: Mutex::new(inner), frames }
    }
}

impl FrameSource for BuddySystem {
    fn name(&self) -> &'static str {
        "buddy-system"
    }

    #[inline]
    fn get(&self, order: u8) -> Option<u64> {
        self.inner.lock().expect("unpoisoned").alloc(1 << order).map(|frame| frame as u64)
    }

    #[inline]
    fn put(&self, frame: u64, order: u8) {
        self.inner.lock().expect("unpoisoned").dealloc(frame as usize, 1 << order);
    }

    fn free_huge_pct(&self) -> f64 {
        // Its free lists are private: probe by allocating every free 2 MiB block, then
        // return them. Exact, as the buddy merges fully.
        let mut inner = self.inner.lock().expect("unpoisoned");
        let mut huge = Vec::new();
        while let Some(frame) = inner.alloc(1 << PAGEBLOCK_ORDER) {
            huge.push(frame);
        }
        for &frame in &huge {
            inner.dealloc(frame, 1 << PAGEBLOCK_ORDER);
        }
        (huge.len() as u64 * (1 << PAGEBLOCK_ORDER)) as f64 * 100.0 / self.frames as f64
    }

    fn metadata_bytes_per_frame(&self) -> Option<usize> {
        None
    }
}
