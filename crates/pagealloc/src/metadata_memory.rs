//! The memory a heap-free build keeps the allocator's tables in, and where it lies
//! physically, so that the build can keep those frames out of the allocator.

use core::fmt;
use core::mem::MaybeUninit;
use core::ops::Range;

use crate::types::{Pfn, PhysAddr};

/// Memory for [`crate::PageAllocator::build_in`], given for the allocator's lifetime, as a
/// kernel carves its memmap out of early memory (mirrors memblock_alloc() for the memmap,
/// which memblock then keeps reserved).
///
/// Memory carved from the RAM being described must not also be handed out as pages: with
/// [`MetadataMemory::at`] the build reserves the frames it covers itself. Memory the
/// allocator never manages (a heap, a static in a kernel image the description reserves)
/// says so with [`MetadataMemory::outside_managed_memory`].
pub struct MetadataMemory {
    pub(crate) bytes: &'static mut [MaybeUninit<u8>],
    phys: Option<PhysAddr>,
}

impl MetadataMemory {
    /// `bytes`, which start at physical address `phys`. The frames they touch are reserved
    /// in the description before the build, wherever it describes them: present and kept
    /// from the allocator, a hole there included, and never added by hot-plug.
    pub fn at(bytes: &'static mut [MaybeUninit<u8>], phys: PhysAddr) -> MetadataMemory {
        MetadataMemory { bytes, phys: Some(phys) }
    }

    /// `bytes`, with nothing reserved for them.
    ///
    /// # Safety
    /// No frame of `bytes` is one the allocator manages: it lies outside the described
    /// memory, or in a hole or a reservation of it. Otherwise the allocator could hand out
    /// the pages that hold its own records, and their new owner would overwrite them.
    pub unsafe fn outside_managed_memory(bytes: &'static mut [MaybeUninit<u8>]) -> MetadataMemory {
        MetadataMemory { bytes, phys: None }
    }

    /// Bytes given.
    pub fn len_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The frames to reserve: every frame the bytes touch, when their address is known.
    pub fn frames(&self) -> Option<Range<Pfn>> {
        let phys = self.phys?;
        Some(phys.pfn_down()..PhysAddr(phys.0.saturating_add(self.len_bytes())).pfn_up())
    }
}

impl fmt::Debug for MetadataMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataMemory").field("len_bytes", &self.len_bytes()).field("phys", &self.phys).finish()
    }
}
