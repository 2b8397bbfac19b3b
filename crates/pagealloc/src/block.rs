//! An allocated block: what `alloc_pages` returns and `free_pages` takes back.

use crate::frame::{FrameInfo, FrameState};
use crate::types::{Pfn, PhysAddr, MAX_ORDER, PFN_LIMIT};

/// A block of 2^order contiguous frames, owned by the caller until freed. Not `Clone` or
/// `Copy`, and only `unsafe` code can make one from parts, so safe code frees each block it
/// was given once, and nothing else. `free_pages` still checks every field, and the
/// generation catches a stale copy made through [`Block::from_raw`] (freed, then handed out
/// again) before it frees the new owner's pages.
///
/// 16 bytes, so it travels in two registers: `pfn_zone` is the pfn (below
/// [`PFN_LIMIT`]) with the zone index in the top 16 bits; `tag` is the allocator id in the
/// top 32 bits over the head frame's word as the free expects it (allocated, the order,
/// the generation; the type bits zero), so the free's check is one xor and mask.
#[derive(PartialEq, Eq, Hash)]
#[must_use = "a block that is dropped without being freed leaks its frames"]
pub struct Block {
    pfn_zone: u64,
    tag: u64,
}

/// The block's parts by name, the pfn in hex as /proc files print frames.
impl core::fmt::Debug for Block {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Block {{ pfn: {:#x}, order: {}, zone: {}, generation: {} }}",
            self.pfn(),
            self.order(),
            self.zone_index(),
            self.generation()
        )
    }
}

const ZONE_SHIFT: u32 = 48;
const ID_SHIFT: u32 = 32;
const _: () = assert!(PFN_LIMIT == (1 << ZONE_SHIFT) - 1);

/// A block's parts, for passing through an interface that cannot hold a [`Block`] (C,
/// a page-table entry, an index). `Copy`: holding one owns nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct RawBlock {
    pub pfn: Pfn,
    pub allocator_id: u32,
    /// The head frame's generation when the block was handed out.
    pub generation: u32,
    pub zone_index: u16,
    pub order: u8,
}

impl Block {
    /// `head` is the head frame's word as handed out; its type bits are dropped.
    #[inline]
    pub(crate) fn new(pfn: Pfn, zone_index: u16, allocator_id: u32, head: FrameInfo) -> Block {
        debug_assert!(pfn <= PFN_LIMIT && head.state() == FrameState::AllocHead);
        Block {
            pfn_zone: pfn | (zone_index as u64) << ZONE_SHIFT,
            tag: (allocator_id as u64) << ID_SHIFT | head.without_type().bits() as u64,
        }
    }

    /// The head frame's word a free of this block expects, type bits zero.
    #[inline]
    pub(crate) fn expected_head(&self) -> FrameInfo {
        FrameInfo::from_bits(self.tag as u32)
    }

    /// Gives up the block as its parts; [`Block::from_raw`] takes them back.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// let raw = block.into_raw(); // e.g. across a C interface
    /// // SAFETY: `raw` came from `into_raw` and is turned back into a block once.
    /// let block = unsafe { pagealloc::Block::from_raw(raw) };
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn into_raw(self) -> RawBlock {
        self.raw_parts()
    }

    /// The block's parts, without giving it up.
    pub fn raw_parts(&self) -> RawBlock {
        RawBlock {
            pfn: self.pfn(),
            allocator_id: self.allocator_id(),
            generation: self.generation(),
            zone_index: self.zone_index(),
            order: self.order(),
        }
    }

    /// Rebuilds a block from its parts (for example after a C interface).
    ///
    /// # Safety
    /// The parts come from [`Block::into_raw`] (or [`Block::raw_parts`] of a block that is
    /// not freed any other way), and this is the only block rebuilt from them: the caller
    /// owns the block. Breaking this cannot corrupt the allocator, whose free checks every
    /// field, but a free of a block that another owner still uses frees their frames.
    ///
    /// Safe code cannot rebuild a block:
    /// ```compile_fail,E0133
    /// fn forge(raw: pagealloc::RawBlock) -> pagealloc::Block {
    ///     pagealloc::Block::from_raw(raw)
    /// }
    /// ```
    ///
    /// Parts no block can have (a pfn above [`PFN_LIMIT`], an order above [`MAX_ORDER`], a
    /// generation at or above [`FrameInfo::GENERATION_LIMIT`]) make a block whose free is
    /// rejected: it names pfn [`PFN_LIMIT`], which no zone holds
    /// ([`crate::FreeError::OutOfRange`]).
    pub unsafe fn from_raw(raw: RawBlock) -> Block {
        let valid = raw.pfn <= PFN_LIMIT && raw.order <= MAX_ORDER && raw.generation < FrameInfo::GENERATION_LIMIT;
        let (pfn, order, generation) = if valid { (raw.pfn, raw.order, raw.generation) } else { (PFN_LIMIT, 0, 0) };
        Block::new(pfn, raw.zone_index, raw.allocator_id, FrameInfo::allocated_head(order, generation))
    }

    #[inline]
    pub fn pfn(&self) -> Pfn {
        self.pfn_zone & PFN_LIMIT
    }

    #[inline]
    pub fn order(&self) -> u8 {
        self.expected_head().order()
    }

    /// Base pages in the block.
    #[inline]
    pub fn pages(&self) -> u64 {
        1 << self.order()
    }

    #[inline]
    pub fn zone_index(&self) -> u16 {
        (self.pfn_zone >> ZONE_SHIFT) as u16
    }

    #[inline]
    pub fn allocator_id(&self) -> u32 {
        (self.tag >> ID_SHIFT) as u32
    }

    /// The head frame's generation when the block was handed out; a free checks it.
    #[inline]
    pub fn generation(&self) -> u32 {
        self.expected_head().generation()
    }

    /// Physical address of the first byte.
    #[inline]
    pub fn phys_addr(&self) -> PhysAddr {
        PhysAddr::of_pfn(self.pfn())
    }
}
