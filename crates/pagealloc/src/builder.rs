//! Describing physical memory (nodes, zones, holes, boot reservations) and building an
//! allocator from it. Mirrors what free_area_init() and memblock_free_all() set up at boot.

use core::fmt;
use core::ops::Range;

use crate::client::Client;
use crate::events::EventSink;
use crate::policy::Policy;
use crate::sizing::Tunables;
use crate::table::{Table, TableFull, FIXED_CPUS, FIXED_NODES, FIXED_RANGES, FIXED_ZONES};
use crate::types::{Pfn, ZoneType};

mod arenas;
mod error;
mod memory_map;
mod ranges;
mod validate;
pub(crate) use arenas::arena_layout;
pub use arenas::MIN_ARENA_PAGES;
pub use error::MemoryMapError;
pub use memory_map::MemoryRegion;
use validate::mapped_nodes;

/// Holes and reservations of one zone, clipped to it, and the managed ranges between them.
const CLIPPED_RANGES: usize = 2 * FIXED_RANGES + 1;
type Ranges = Table<Range<Pfn>, CLIPPED_RANGES>;

#[derive(Clone, Debug)]
pub(crate) struct ZoneLayout {
    pub node: u16,
    pub zone_type: ZoneType,
    pub span: Range<Pfn>,
}

impl Default for ZoneLayout {
    /// A fixed table's unused entry.
    fn default() -> Self {
        ZoneLayout { node: 0, zone_type: ZoneType::Dma, span: 0..0 }
    }
}

/// Builds a [`crate::PageAllocator`].
pub struct AllocatorBuilder {
    pub(crate) node_cpus: Table<u32, FIXED_NODES>,
    pub(crate) zones: Table<ZoneLayout, FIXED_ZONES>,
    pub(crate) holes: Table<Range<Pfn>, FIXED_RANGES>,
    pub(crate) reserved: Table<Range<Pfn>, FIXED_RANGES>,
    /// The frames holding the allocator's records ([`crate::MetadataMemory::at`]), also a
    /// reservation: present even where the description has a hole.
    pub(crate) metadata_frames: Option<Range<Pfn>>,
    pub(crate) tunables: Tunables,
    pub(crate) sink: Option<Client<dyn EventSink>>,
    pub(crate) policy: Policy,
    pub(crate) llc: Option<LastLevelCache>,
    /// Node of each CPU, when CPUs are not numbered node by node.
    pub(crate) cpu_nodes: Option<Table<u16, FIXED_CPUS>>,
    /// Per-CPU arenas: the described node each arena (a node of the build) was cut from.
    pub(crate) arena_homes: Option<Table<u16, FIXED_NODES>>,
    /// The first error met while describing (a full table without the `alloc` feature, a
    /// refused memory map), for `build` to report.
    pub(crate) deferred_error: Option<BuildError>,
}

/// The last-level cache as the PCP sees it (mirrors the per-CPU data cache slice of
/// drivers/base/cacheinfo.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastLevelCache {
    pub size_bytes: u64,
    /// CPUs sharing one instance.
    pub shared_by_cpus: u32,
}

impl LastLevelCache {
    /// Each CPU's share.
    pub fn slice_bytes(&self) -> u64 {
        self.size_bytes / self.shared_by_cpus.max(1) as u64
    }

    /// A slice larger than 3 batches lets a pageset cache a batch before a free_high drain.
    pub fn slice_holds_batches(&self, batch_pages: u64) -> bool {
        (self.slice_bytes() >> crate::types::PAGE_SHIFT) > 3 * batch_pages
    }
}

pub use error::BuildError;

impl Default for AllocatorBuilder {
    fn default() -> Self {
        AllocatorBuilder::new()
    }
}

impl AllocatorBuilder {
    pub fn new() -> AllocatorBuilder {
        AllocatorBuilder {
            node_cpus: Table::new(),
            zones: Table::new(),
            holes: Table::new(),
            reserved: Table::new(),
            metadata_frames: None,
            tunables: Tunables::default(),
            sink: None,
            policy: Policy::default(),
            llc: None,
            cpu_nodes: None,
            arena_homes: None,
            deferred_error: None,
        }
    }

    /// Keeps the first table overflow for `build` to report.
    fn note_full(&mut self, table: &'static str, pushed: Result<(), TableFull>) {
        if let Err(TableFull { capacity }) = pushed {
            self.note_error(BuildError::TableFull { table, capacity });
        }
    }

    /// Keeps the first error met while describing, for `build` to report.
    fn note_error(&mut self, error: BuildError) {
        self.deferred_error.get_or_insert(error);
    }

    /// Declares the next node (ids count from 0) with `cpus` CPUs; CPU ids are assigned to
    /// nodes in declaration order. Without any declaration, node 0 gets every CPU.
    pub fn node(mut self, cpus: u32) -> Self {
        let pushed = self.node_cpus.push(cpus);
        self.note_full("nodes", pushed);
        self
    }

    /// Assigns CPU i to node `map[i]`, for machines that do not number CPUs node by node
    /// (Linux on 2-socket Intel servers interleaves SMT siblings: socket = (cpu % cores) /
    /// cores_per_socket). Replaces `node()` declarations: nodes are 0..=max(map), each with the
    /// CPUs mapped to it.
    pub fn cpu_node_map(mut self, map: impl IntoIterator<Item = u16>) -> Self {
        let mut table = Table::new();
        let pushed = map.into_iter().try_for_each(|node| table.push(node));
        self.note_full("CPU-to-node map", pushed);
        self.cpu_nodes = Some(table);
        self
    }

    /// Adds a zone spanning `span` on `node`.
    pub fn zone(mut self, node: u16, zone_type: ZoneType, span: Range<Pfn>) -> Self {
        let pushed = self.zones.push(ZoneLayout { node, zone_type, span });
        self.note_full("zones", pushed);
        self
    }

    /// The zones' spans in the order they were added, which is their index in the allocator.
    pub fn zone_spans(&self) -> impl Iterator<Item = Range<Pfn>> + '_ {
        self.zones.iter().map(|layout| layout.span.clone())
    }

    /// Frames that do not exist (not present, not managed). Holes and reservations may
    /// overlap each other (their union counts, as memblock merges regions) and may extend
    /// past the zones (each zone sees its part); a range that ends before it starts is a
    /// [`BuildError::InvertedRange`].
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// // 16 MiB of Normal with a 1 MiB hole and 64 KiB of firmware kept out.
    /// let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, 0x10_0000..0x10_1000).hole(0x10_0400..0x10_0500).reserve(0x10_0000..0x10_0010);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(1)).unwrap();
    /// assert_eq!(allocator.counters().managed_pages(), 4096 - 256 - 16);
    /// ```
    pub fn hole(mut self, range: Range<Pfn>) -> Self {
        let pushed = self.holes.push(range);
        self.note_full("holes", pushed);
        self
    }

    /// Frames that exist but are kept from the allocator (firmware, kernel image); see
    /// [`Self::hole`] for overlapping and out-of-zone ranges.
    pub fn reserve(mut self, range: Range<Pfn>) -> Self {
        self.add_reservation(range);
        self
    }

    /// [`Self::reserve`] in place: the builder is not moved, which on a boot stack would
    /// copy its tables.
    pub(crate) fn add_reservation(&mut self, range: Range<Pfn>) {
        let pushed = self.reserved.push(range);
        self.note_full("reservations", pushed);
    }

    pub fn tunables(mut self, tunables: Tunables) -> Self {
        self.tunables = tunables;
        self
    }

    /// Behaviour switches (see `presets`); mainline by default.
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let fullest_first = pagealloc::presets::find("mainline+fullest-first").unwrap().policy;
    /// let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4096).policy(fullest_first);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// assert!(allocator.policy().frag.beyond_linux.fullest_first);
    /// ```
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// The last-level cache, for the free_high batch decision.
    pub fn last_level_cache(mut self, llc: LastLevelCache) -> Self {
        self.llc = Some(llc);
        self
    }

    /// Receives extfrag events (called under the zone lock; keep it cheap).
    #[cfg(feature = "alloc")]
    pub fn event_sink(mut self, sink: alloc::boxed::Box<dyn EventSink>) -> Self {
        self.sink = Some(Client::Shared(sink.into()));
        self
    }

    /// [`Self::event_sink`] for a sink that lives as long as the allocator (no `alloc`
    /// feature needed).
    ///
    /// ```
    /// use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
    /// use pagealloc::{AllocRequest, AllocatorBuilder, EventSink, ExtfragEvent, PageAllocator, PageEvent, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// struct Counter(AtomicU64);
    /// impl EventSink for Counter {
    ///     fn extfrag(&self, _: &ExtfragEvent) {}
    ///     fn page(&self, _: &PageEvent) {
    ///         self.0.fetch_add(1, Relaxed);
    ///     }
    /// }
    /// static EVENTS: Counter = Counter(AtomicU64::new(0));
    /// let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4096).event_sink_static(&EVENTS);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap();
    /// assert!(EVENTS.0.load(Relaxed) >= 2); // the allocation and the free, at least
    /// ```
    pub fn event_sink_static(mut self, sink: &'static dyn EventSink) -> Self {
        self.sink = Some(Client::Static(sink));
        self
    }

    /// One zone of `pages` frames at the zone type's usual physical base.
    pub fn single_zone(zone_type: ZoneType, pages: u64) -> Self {
        let base = match zone_type {
            ZoneType::Dma => 0,
            ZoneType::Dma32 => DMA32_START_PFN,
            _ => NORMAL_START_PFN,
        };
        // Saturating: an absurd size becomes a zone `build` rejects, not a wrapped span.
        AllocatorBuilder::new().zone(0, zone_type, base..base.saturating_add(pages))
    }

    /// A PC-like single-node layout of `total_mib` of RAM: DMA below 16 MiB (pfn 0 and the
    /// 640 KiB-1 MiB legacy hole reserved), DMA32 up to 3 GiB (the PCI hole 3-4 GiB absent),
    /// Normal for the rest, from 4 GiB.
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// // 8 GiB: DMA, DMA32 up to the PCI hole at 3 GiB, Normal from 4 GiB.
    /// let allocator = PageAllocator::build(AllocatorBuilder::pc_layout(8192), TestPlatform::new(1)).unwrap();
    /// let types: Vec<ZoneType> = allocator.zones().iter().map(|zone| zone.state().zone_type()).collect();
    /// assert_eq!(types, [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]);
    /// ```
    pub fn pc_layout(total_mib: u64) -> Self {
        const PAGES_PER_MIB: u64 = 256;
        const PCI_HOLE_START_PFN: Pfn = 3 << 18; // 3 GiB
                                                 // Saturating: an absurd size becomes a zone `build` rejects, not a wrapped span.
        let total_pages = total_mib.saturating_mul(PAGES_PER_MIB);
        let mut builder = AllocatorBuilder::new().reserve(0..1).reserve(0xa0..0x100);
        let dma_end = total_pages.min(DMA32_START_PFN);
        builder = builder.zone(0, ZoneType::Dma, 0..dma_end);
        if total_pages > DMA32_START_PFN {
            let low_end = total_pages.min(PCI_HOLE_START_PFN);
            builder = builder.zone(0, ZoneType::Dma32, DMA32_START_PFN..low_end);
        }
        if total_pages > PCI_HOLE_START_PFN {
            let high_pages = total_pages - PCI_HOLE_START_PFN;
            builder = builder.zone(0, ZoneType::Normal, NORMAL_START_PFN..NORMAL_START_PFN.saturating_add(high_pages));
        }
        builder
    }

    /// Nodes the build makes: the declared ones and those the CPU map names, at least one.
    pub(crate) fn node_count(&self) -> usize {
        self.cpu_nodes.as_deref().map_or(0, mapped_nodes).max(self.node_cpus.len()).max(1)
    }

    /// Node of `cpu` (validated): the map if given, else CPUs numbered node by node.
    pub(crate) fn node_of_cpu(&self, cpu: usize) -> u16 {
        self.described_node_of_cpu(cpu).expect("a validated CPU")
    }

    /// Node of `cpu` as described; `None` for a CPU a description not yet validated does not
    /// cover.
    pub(crate) fn described_node_of_cpu(&self, cpu: usize) -> Option<u16> {
        match &self.cpu_nodes {
            Some(map) => map.get(cpu).copied(),
            None => {
                let mut first_cpu = 0;
                let node = self.node_cpus.iter().position(|&cpus| {
                    first_cpu += cpus as usize;
                    cpu < first_cpu
                });
                node.map(|node| node as u16)
            }
        }
    }
}

/// First frame above 16 MiB.
pub const DMA32_START_PFN: Pfn = 1 << 12;

/// The first pfn above a zone type's addresses (Linux's MAX_DMA_PFN, MAX_DMA32_PFN).
pub fn zone_type_limit_pfn(zone_type: ZoneType) -> Pfn {
    match zone_type {
        ZoneType::Dma => DMA32_START_PFN,
        ZoneType::Dma32 => NORMAL_START_PFN,
        _ => crate::types::PFN_LIMIT,
    }
}
/// First frame above 4 GiB.
pub const NORMAL_START_PFN: Pfn = 1 << 20;

/// The zone type Linux gives memory at `pfn` on x86-64 when it is not hot-pluggable: DMA
/// below 16 MiB, DMA32 below 4 GiB, Normal above.
pub const fn zone_type_of_pfn(pfn: Pfn) -> ZoneType {
    if pfn < DMA32_START_PFN {
        ZoneType::Dma
    } else if pfn < NORMAL_START_PFN {
        ZoneType::Dma32
    } else {
        ZoneType::Normal
    }
}

impl fmt::Debug for AllocatorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AllocatorBuilder")
            .field("zones", &self.zones.len())
            .field("node_cpus", &self.node_cpus)
            .field("tunables", &self.tunables)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}
