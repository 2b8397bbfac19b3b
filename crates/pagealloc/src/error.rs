//! Errors. Every rejected request leaves the allocator exactly as it was.

use core::fmt;

use crate::types::{MigrateType, Pfn, ZoneType, MAX_ORDER};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// Order above MAX_ORDER.
    OrderTooLarge { order: u8 },
    /// No populated zone at or below the request's highest zone.
    NoUsableZone { highest_zone: ZoneType },
    /// Every usable zone is below its watermark or has no block of that order.
    OutOfMemory { order: u8 },
    /// Requests are unmovable, movable or reclaimable; the other types are pageblock states.
    UnsupportedMigratetype { migratetype: MigrateType },
    /// The request names a node the machine does not have.
    NoSuchNode { node: u16, nodes: u16 },
    /// The request may not use that zone: Device memory is never allocated, and only
    /// movable requests reach Movable (gfp_zone() needs __GFP_MOVABLE for ZONE_MOVABLE).
    ZoneNotAllowed { highest_zone: ZoneType, migratetype: MigrateType },
    /// A run (exact or contiguous) of 0 pages.
    EmptyRun,
    /// An exact run of more pages than the largest block holds.
    RunTooLarge { pages: u64 },
    /// A `Layout` larger (or more aligned) than the largest block.
    LayoutTooLarge { size_bytes: usize, align_bytes: usize },
    /// No candidate range for a contiguous run could be emptied (or its alignment was not a
    /// power of two, or another range operation was running).
    ContigUnavailable { pages: u64 },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::OrderTooLarge { order } => write!(f, "order {order} exceeds the maximum order {MAX_ORDER}"),
            AllocError::NoUsableZone { highest_zone } => {
                write!(f, "no populated zone at or below {}", highest_zone.kernel_name())
            }
            AllocError::OutOfMemory { order } => write!(f, "out of memory for an order-{order} block"),
            AllocError::UnsupportedMigratetype { migratetype } => {
                write!(f, "cannot request {} memory", migratetype.kernel_name())
            }
            AllocError::NoSuchNode { node, nodes } => write!(f, "node {node} requested, the machine has {nodes}"),
            AllocError::ZoneNotAllowed { highest_zone, migratetype } => {
                write!(f, "{} requests may not use zone {}", migratetype.kernel_name(), highest_zone.kernel_name())
            }
            AllocError::EmptyRun => write!(f, "a run of 0 pages"),
            AllocError::RunTooLarge { pages } => {
                write!(f, "a run of {pages} pages: an exact run is 1 to {} pages", 1u64 << MAX_ORDER)
            }
            AllocError::LayoutTooLarge { size_bytes, align_bytes } => {
                write!(f, "a layout of {size_bytes} bytes aligned to {align_bytes} exceeds the largest block")
            }
            AllocError::ContigUnavailable { pages } => write!(f, "no contiguous run of {pages} pages could be taken"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// The block was allocated by another allocator instance.
    ForeignBlock {
        pfn: Pfn,
    },
    OrderTooLarge {
        order: u8,
    },
    /// pfn is not a multiple of 2^order.
    Misaligned {
        pfn: Pfn,
        order: u8,
    },
    /// pfn lies outside every zone of this allocator.
    OutOfRange {
        pfn: Pfn,
    },
    /// pfn is in a hole or in memory reserved at boot.
    NotManaged {
        pfn: Pfn,
    },
    /// The block claims a zone that does not contain it.
    WrongZone {
        pfn: Pfn,
        claimed_zone: u16,
        actual_zone: u16,
    },
    /// The block is already free (on a zone free list or a per-CPU list), and its head was
    /// freed since it was handed out.
    DoubleFree {
        pfn: Pfn,
    },
    /// The frame is not the head of an allocated block: inside a larger block, free as part
    /// of a merged block, or the head of a free block that was never freed since the build
    /// (or, for a [`crate::Block`], since that block was handed out).
    NotAllocated {
        pfn: Pfn,
    },
    /// The block's head was freed and handed out again since this block was: a stale copy
    /// of a block (see `Block::from_raw`). Nothing was freed.
    StaleBlock {
        pfn: Pfn,
        block_generation: u32,
        frame_generation: u32,
    },
    /// The block was allocated with another order.
    WrongOrder {
        pfn: Pfn,
        allocated_order: u8,
        freed_order: u8,
    },
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreeError::ForeignBlock { pfn } => write!(f, "pfn {pfn:#x} belongs to another allocator"),
            FreeError::OrderTooLarge { order } => write!(f, "order {order} exceeds the maximum order {MAX_ORDER}"),
            FreeError::Misaligned { pfn, order } => write!(f, "pfn {pfn:#x} is not aligned to order {order}"),
            FreeError::OutOfRange { pfn } => write!(f, "pfn {pfn:#x} is outside every zone"),
            FreeError::NotManaged { pfn } => write!(f, "pfn {pfn:#x} is a hole or reserved memory"),
            FreeError::WrongZone { pfn, claimed_zone, actual_zone } => {
                write!(f, "pfn {pfn:#x} is in zone {actual_zone}, not zone {claimed_zone}")
            }
            FreeError::DoubleFree { pfn } => write!(f, "pfn {pfn:#x} is already free"),
            FreeError::NotAllocated { pfn } => write!(f, "pfn {pfn:#x} is not the head of an allocated block"),
            FreeError::StaleBlock { pfn, block_generation, frame_generation } => write!(
                f,
                "pfn {pfn:#x} was handed out again: the block has generation {block_generation}, the frame {frame_generation}"
            ),
            FreeError::WrongOrder { pfn, allocated_order, freed_order } => {
                write!(f, "pfn {pfn:#x} was allocated at order {allocated_order}, freed at order {freed_order}")
            }
        }
    }
}

/// A bulk free refused some of its blocks (`PageAllocator::free_bulk`,
/// `free_pfns_bulk`): each refused block was left as it was, and every other one was freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkFreeError {
    pub freed_blocks: usize,
    pub failed_blocks: usize,
    /// Why the first refused block was refused.
    pub first_error: FreeError,
}

impl fmt::Display for BulkFreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} blocks refused, the first because {}",
            self.failed_blocks,
            self.freed_blocks + self.failed_blocks,
            self.first_error
        )
    }
}

impl core::error::Error for AllocError {}
impl core::error::Error for FreeError {}
impl core::error::Error for BulkFreeError {}

/// Why a range operation (memory online, offline, add, or a contiguous allocation's
/// isolation) was refused. The range is left exactly as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeError {
    /// The range is empty or its ends are not multiples of a pageblock.
    Misaligned { start: Pfn, end: Pfn },
    /// The range is not inside one zone's span (or the zone is not of the type named).
    OutsideZone { pfn: Pfn },
    /// A frame of the range is a hole or offline, where online memory was needed.
    NotOnline { pfn: Pfn },
    /// A frame of the range is online, where a hole or offline memory was needed.
    NotOffline { pfn: Pfn },
    /// A pageblock of the range is a reserve (HIGHATOMIC, CMA) or isolated by another
    /// range operation.
    ReservedPageblock { pfn: Pfn },
    /// An allocated block of the range is not movable.
    Unmovable { pfn: Pfn },
    /// An allocated block of the range is movable, but no migration client is set
    /// ([`crate::PageAllocator::set_migrate`]) to move it.
    NoMigrationClient { pfn: Pfn },
    /// The migration client refused to move a block, or no target could be allocated.
    MigrationFailed { pfn: Pfn },
    /// Blocks kept appearing in the range (frees racing with the isolation) through every
    /// pass.
    Busy { pfn: Pfn },
    /// Another range operation is running on this allocator.
    Concurrent,
    /// The memory given for the range's records lies inside the range, whose pages would
    /// then be handed out over them.
    MetadataInRange { pfn: Pfn },
    /// A frame of the range is present but reserved (at boot, or holding the allocator's
    /// records): hot-plug adds, takes offline and brings online only memory it manages,
    /// and a reservation stays one (Linux refuses to add memory that is already present).
    ReservedFrame { pfn: Pfn },
    /// The memory given for the records holds free pages of a zone, which would be handed
    /// out over them: memory for records is taken from the allocator first, or lies in a
    /// hole or a reservation.
    MetadataInFreeMemory { pfn: Pfn },
    /// The range lies past every zone's span of the type, and no zone could grow to take it.
    Grow { pfn: Pfn, reason: GrowError },
}

/// Why no zone's span could grow to take a range ([`Hotplug::add_memory`] past the
/// spans built).
///
/// [`Hotplug::add_memory`]: crate::Hotplug::add_memory
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowError {
    /// Built without the `memory-growth` feature.
    Disabled,
    /// No zone of the type starts at or below the range.
    NoZone,
    /// Another zone's span lies between the zone's end and the range's end.
    Overlap { other_start: Pfn },
    /// The range ends above the zone type's address limit (16 MiB for DMA, 4 GiB for DMA32).
    AboveLimit { limit_pfn: Pfn },
    /// The span would need more frames than 32-bit indices name.
    IndexSpace,
    /// The zone grew [`MAX_GROWTHS`](crate::growable::MAX_GROWTHS) times already.
    Exhausted,
    /// No room for the new records: the heap is absent, or the memory given is too small.
    Metadata(crate::meta::MetaArenaFull),
}

impl From<crate::meta::MetaArenaFull> for GrowError {
    fn from(full: crate::meta::MetaArenaFull) -> GrowError {
        GrowError::Metadata(full)
    }
}

impl fmt::Display for GrowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrowError::Disabled => write!(f, "built without the memory-growth feature"),
            GrowError::NoZone => write!(f, "no zone of the type starts below the range"),
            GrowError::Overlap { other_start } => write!(f, "the zone at {other_start:#x} is in the way"),
            GrowError::AboveLimit { limit_pfn } => write!(f, "the zone type ends at pfn {limit_pfn:#x}"),
            GrowError::IndexSpace => write!(f, "the span would exceed 32-bit frame indices"),
            GrowError::Exhausted => write!(f, "the zone grew {} times already", crate::growable::MAX_GROWTHS),
            GrowError::Metadata(full) => {
                write!(f, "the new records need {} bytes, {} given", full.needed_bytes, full.given_bytes)
            }
        }
    }
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RangeError::Misaligned { start, end } => write!(
                f,
                "range {start:#x}..{end:#x} is empty or not aligned to {} pages",
                crate::types::PAGEBLOCK_PAGES
            ),
            RangeError::OutsideZone { pfn } => write!(f, "pfn {pfn:#x} is outside the zone's span"),
            RangeError::NotOnline { pfn } => write!(f, "pfn {pfn:#x} is a hole or offline"),
            RangeError::NotOffline { pfn } => write!(f, "pfn {pfn:#x} is online"),
            RangeError::ReservedPageblock { pfn } => {
                write!(f, "the pageblock at {pfn:#x} is a reserve or isolated by another operation")
            }
            RangeError::Unmovable { pfn } => write!(f, "the block at {pfn:#x} cannot be moved"),
            RangeError::MetadataInRange { pfn } => {
                write!(f, "the records' memory at pfn {pfn:#x} lies inside the range being added")
            }
            RangeError::ReservedFrame { pfn } => write!(f, "pfn {pfn:#x} is reserved memory"),
            RangeError::MetadataInFreeMemory { pfn } => {
                write!(f, "the records' memory at pfn {pfn:#x} is free memory of the allocator")
            }
            RangeError::NoMigrationClient { pfn } => {
                write!(f, "the movable block at {pfn:#x} needs a migration client to move it (set_migrate)")
            }
            RangeError::MigrationFailed { pfn } => write!(f, "the block at {pfn:#x} could not be moved"),
            RangeError::Busy { pfn } => write!(f, "the range stayed busy at {pfn:#x}"),
            RangeError::Concurrent => write!(f, "another range operation is running"),
            RangeError::Grow { pfn, reason } => write!(f, "no zone could grow to pfn {pfn:#x}: {reason}"),
        }
    }
}

impl core::error::Error for RangeError {}
impl core::error::Error for GrowError {}
