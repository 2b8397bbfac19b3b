//! Basic vocabulary shared by every module: page geometry, orders, migratetypes, zone types.

/// log2 of the base page size (4 KiB pages, as on x86-64).
pub const PAGE_SHIFT: u32 = 12;
/// Base page size in bytes.
pub const PAGE_SIZE_BYTES: u64 = 1 << PAGE_SHIFT;
/// Largest block order the buddy hands out (Linux `MAX_PAGE_ORDER`, 4 MiB blocks).
pub const MAX_ORDER: u8 = 10;
/// Zones end at or below this frame number (2^60 bytes, far past any CPU's physical
/// address width), so a [`crate::Block`] keeps its zone beside its pfn in one word. No zone
/// holds this frame itself: a block that names it is rejected.
pub const PFN_LIMIT: u64 = (1 << 48) - 1;
/// Number of buddy orders, 0..=MAX_ORDER (Linux `NR_PAGE_ORDERS`).
pub const NR_ORDERS: usize = MAX_ORDER as usize + 1;
/// Pageblock order: the granule of migratetype ownership (x86-64: 2 MiB).
pub const PAGEBLOCK_ORDER: u8 = 9;
/// Base pages per pageblock.
pub const PAGEBLOCK_PAGES: u64 = 1 << PAGEBLOCK_ORDER;
/// Orders above this are "costly" and never cached per CPU (Linux `PAGE_ALLOC_COSTLY_ORDER`).
pub const COSTLY_ORDER: u8 = 3;

/// Physical frame number: physical address >> PAGE_SHIFT. Every `u64` the allocator's
/// interfaces take or give for memory is a frame number; a byte address is a [`PhysAddr`].
pub type Pfn = u64;

/// A physical byte address, as firmware memory maps and page tables give them. Kept apart
/// from frame numbers by its type: `pfn_down`, `pfn_up` and `of_pfn` convert.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct PhysAddr(pub u64);

impl PhysAddr {
    /// The frame holding this address.
    #[inline]
    pub const fn pfn_down(self) -> Pfn {
        self.0 >> PAGE_SHIFT
    }

    /// The first frame starting at or above this address (a region's first whole frame).
    #[inline]
    pub const fn pfn_up(self) -> Pfn {
        self.0.div_ceil(PAGE_SIZE_BYTES)
    }

    /// The address frame `pfn` starts at.
    #[inline]
    pub const fn of_pfn(pfn: Pfn) -> PhysAddr {
        PhysAddr(pfn << PAGE_SHIFT)
    }

    /// Whether the address is the start of a frame.
    #[inline]
    pub const fn is_page_aligned(self) -> bool {
        self.0.is_multiple_of(PAGE_SIZE_BYTES)
    }
}

impl core::fmt::LowerHex for PhysAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::LowerHex::fmt(&self.0, f)
    }
}

/// Mobility class of a pageblock or request (Linux `enum migratetype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum MigrateType {
    Unmovable = 0,
    Movable = 1,
    Reclaimable = 2,
    /// Reserve for high-order atomic allocations.
    HighAtomic = 3,
    /// Contiguous memory allocator area (movable data only).
    Cma = 4,
    /// Pageblocks being isolated; never allocated from.
    Isolate = 5,
}

/// Number of migratetypes (with CMA configured, as in distro kernels).
pub const NR_MIGRATETYPES: usize = 6;
/// Types with per-CPU lists: unmovable, movable, reclaimable (Linux `MIGRATE_PCPTYPES`).
pub const NR_PCP_TYPES: usize = 3;

impl MigrateType {
    pub const ALL: [MigrateType; NR_MIGRATETYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
        MigrateType::Cma,
        MigrateType::Isolate,
    ];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Inverse of `index`; indices >= NR_MIGRATETYPES map to `Isolate`.
    #[inline]
    pub const fn from_index(index: usize) -> MigrateType {
        match index {
            0 => MigrateType::Unmovable,
            1 => MigrateType::Movable,
            2 => MigrateType::Reclaimable,
            3 => MigrateType::HighAtomic,
            4 => MigrateType::Cma,
            _ => MigrateType::Isolate,
        }
    }

    /// The kernel's name, as printed in /proc/pagetypeinfo.
    pub const fn kernel_name(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "Unmovable",
            MigrateType::Movable => "Movable",
            MigrateType::Reclaimable => "Reclaimable",
            MigrateType::HighAtomic => "HighAtomic",
            MigrateType::Cma => "CMA",
            MigrateType::Isolate => "Isolate",
        }
    }

    /// Types whose free blocks may merge across pageblock boundaries (the PCP types).
    #[inline]
    pub const fn is_mergeable(self) -> bool {
        (self as usize) < NR_PCP_TYPES
    }

    /// Fallback order when this type's free lists are empty (Linux `fallbacks[]`).
    #[inline]
    pub const fn fallbacks(self) -> &'static [MigrateType] {
        match self {
            MigrateType::Unmovable => &[MigrateType::Reclaimable, MigrateType::Movable],
            MigrateType::Movable => &[MigrateType::Reclaimable, MigrateType::Unmovable],
            MigrateType::Reclaimable => &[MigrateType::Unmovable, MigrateType::Movable],
            _ => &[],
        }
    }
}

/// Zone types in address order (Linux `enum zone_type` on x86-64 with ZONE_DEVICE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ZoneType {
    /// Below 16 MiB (ISA DMA).
    Dma = 0,
    /// Below 4 GiB (32-bit DMA).
    Dma32 = 1,
    Normal = 2,
    /// Movable-only memory (kernelcore= / movable_node).
    Movable = 3,
    /// Device memory (never managed by the buddy; printed for /proc/zoneinfo fidelity).
    Device = 4,
}

/// Number of zone types, hence entries in a zone's `protection:` line (Linux `MAX_NR_ZONES`).
pub const MAX_NR_ZONES: usize = 5;

impl ZoneType {
    pub const ALL: [ZoneType; MAX_NR_ZONES] =
        [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal, ZoneType::Movable, ZoneType::Device];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn from_index(index: usize) -> Option<ZoneType> {
        match index {
            0 => Some(ZoneType::Dma),
            1 => Some(ZoneType::Dma32),
            2 => Some(ZoneType::Normal),
            3 => Some(ZoneType::Movable),
            4 => Some(ZoneType::Device),
            _ => None,
        }
    }

    /// The kernel's zone name.
    pub const fn kernel_name(self) -> &'static str {
        match self {
            ZoneType::Dma => "DMA",
            ZoneType::Dma32 => "DMA32",
            ZoneType::Normal => "Normal",
            ZoneType::Movable => "Movable",
            ZoneType::Device => "Device",
        }
    }

    /// The zone's suffix in /proc/vmstat lines (`pgalloc_dma32`).
    pub const fn vmstat_name(self) -> &'static str {
        match self {
            ZoneType::Dma => "dma",
            ZoneType::Dma32 => "dma32",
            ZoneType::Normal => "normal",
            ZoneType::Movable => "movable",
            ZoneType::Device => "device",
        }
    }

    /// Parses a kernel zone name (case-insensitive).
    pub fn parse(name: &str) -> Option<ZoneType> {
        ZoneType::ALL.into_iter().find(|zone_type| zone_type.kernel_name().eq_ignore_ascii_case(name))
    }

    /// Lowmem zones count toward min_free_kbytes sharing (not Movable, not Device; x86-64 has no HighMem).
    #[inline]
    pub const fn is_lowmem(self) -> bool {
        (self as usize) <= ZoneType::Normal as usize
    }
}
