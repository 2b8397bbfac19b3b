//! An allocated block: what `alloc_pages` returns and `free_pages` takes back.

use crate::types::{Pfn, PAGE_SHIFT};

/// A block of 2^order contiguous frames, owned by the caller until freed. Not `Clone`: the
/// type system keeps one owner; a forged or repeated free is still caught at run time.
#[derive(Debug, PartialEq, Eq, Hash)]
#[must_use = "a block that is dropped without being freed leaks its frames"]
pub struct Block {
    pfn: Pfn,
    order: u8,
    zone_index: u16,
    allocator_id: u32,
}

impl Block {
    pub(crate) fn new(pfn: Pfn, order: u8, zone_index: u16, allocator_id: u32) -> Block {
        Block { pfn, order, zone_index, allocator_id }
    }

    /// Rebuilds a block from its parts (for example after passing it through a C interface).
    /// Nothing is trusted: `free_pages` checks every field.
    pub fn from_raw_parts(pfn: Pfn, order: u8, zone_index: u16, allocator_id: u32) -> Block {
        Block { pfn, order, zone_index, allocator_id }
    }

    #[inline]
    pub fn pfn(&self) -> Pfn {
        self.pfn
    }

    #[inline]
    pub fn order(&self) -> u8 {
        self.order
    }

    /// Base pages in the block.
    #[inline]
    pub fn pages(&self) -> u64 {
        1 << self.order
    }

    #[inline]
    pub fn zone_index(&self) -> u16 {
        self.zone_index
    }

    #[inline]
    pub fn allocator_id(&self) -> u32 {
        self.allocator_id
    }

    /// Physical address of the first byte.
    #[inline]
    pub fn phys_addr(&self) -> u64 {
        self.pfn << PAGE_SHIFT
    }
}
