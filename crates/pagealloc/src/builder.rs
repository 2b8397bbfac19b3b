//! Describing physical memory (nodes, zones, holes, boot reservations) and building an
//! allocator from it. Mirrors what free_area_init() and memblock_free_all() set up at boot.

use core::fmt;
use core::ops::Range;

use crate::client::Client;
use crate::events::EventSink;
use crate::policy::Policy;
use crate::sizing::{LinuxVersion, MachineSpec, NodeSpec, SizingError, Tunables};
use crate::table::{Table, TableFull, FIXED_CPUS, FIXED_NODES, FIXED_RANGES, FIXED_ZONES};
use crate::types::{Pfn, ZoneType, MAX_NR_ZONES};

mod arenas;
pub(crate) use arenas::arena_layout;
pub use arenas::MIN_ARENA_PAGES;

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
    pub(crate) tunables: Tunables,
    pub(crate) sink: Option<Client<dyn EventSink>>,
    pub(crate) policy: Policy,
    pub(crate) llc: Option<LastLevelCache>,
    /// Node of each CPU, when CPUs are not numbered node by node.
    pub(crate) cpu_nodes: Option<Table<u16, FIXED_CPUS>>,
    /// The first description table that was full (without the `alloc` feature).
    pub(crate) overflow: Option<BuildError>,
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    NoZones,
    /// A zone names a node that was not declared.
    UnknownNode {
        node: u16,
    },
    /// Two zones of one type on one node.
    DuplicateZone {
        node: u16,
        zone_type: ZoneType,
    },
    Overlap {
        first: Range<Pfn>,
        second: Range<Pfn>,
    },
    EmptySpan {
        zone_type: ZoneType,
    },
    /// ZONE_DEVICE memory is not managed by the page allocator.
    DeviceZone,
    /// A zone spans more frames than 32-bit links can address.
    ZoneTooLarge {
        zone_type: ZoneType,
        spanned_pages: u64,
    },
    /// The nodes' CPUs do not add up to the platform's CPUs.
    CpuMismatch {
        node_cpus: u32,
        platform_cpus: usize,
    },
    /// A hole or reservation whose start lies above its end (an empty one is ignored).
    InvertedRange {
        kind: &'static str,
        range: Range<Pfn>,
    },
    /// A DMA zone above 16 MiB, a DMA32 zone above 4 GiB, or any zone ending above
    /// [`crate::types::PFN_LIMIT`].
    ZoneAboveLimit {
        zone_type: ZoneType,
        end_pfn: Pfn,
        limit_pfn: Pfn,
    },
    /// A policy switch outside what the pagesets support.
    InvalidPolicy(&'static str),
    Sizing(SizingError),
    /// More entries than a description table holds without the `alloc` feature (`table`
    /// names it: "nodes", "zones", "holes", "reservations" or "CPU-to-node map").
    TableFull {
        table: &'static str,
        capacity: usize,
    },
    /// The memory given for the metadata ([`crate::PageAllocator::build_in`]) is too small.
    MetadataMemoryTooSmall {
        needed_bytes: u64,
        given_bytes: u64,
    },
}

impl From<crate::meta::MetaArenaFull> for BuildError {
    fn from(full: crate::meta::MetaArenaFull) -> Self {
        BuildError::MetadataMemoryTooSmall { needed_bytes: full.needed_bytes, given_bytes: full.given_bytes }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::NoZones => write!(f, "no zones were described"),
            BuildError::UnknownNode { node } => write!(f, "zone on undeclared node {node}"),
            BuildError::DuplicateZone { node, zone_type } => {
                write!(f, "node {node} has two {} zones", zone_type.kernel_name())
            }
            BuildError::Overlap { first, second } => {
                write!(
                    f,
                    "zones overlap: {:#x}..{:#x} and {:#x}..{:#x}",
                    first.start, first.end, second.start, second.end
                )
            }
            BuildError::EmptySpan { zone_type } => write!(f, "{} zone spans no frames", zone_type.kernel_name()),
            BuildError::DeviceZone => write!(f, "the Device zone cannot be managed"),
            BuildError::ZoneTooLarge { zone_type, spanned_pages } => {
                write!(f, "{} zone spans {spanned_pages} frames, more than 2^32 - 1", zone_type.kernel_name())
            }
            BuildError::CpuMismatch { node_cpus, platform_cpus } => {
                write!(f, "nodes declare {node_cpus} CPUs but the platform has {platform_cpus}")
            }
            BuildError::InvertedRange { kind, range } => {
                write!(f, "{kind} range {:#x}..{:#x} ends before it starts", range.start, range.end)
            }
            BuildError::ZoneAboveLimit { zone_type, end_pfn, limit_pfn } => {
                write!(f, "{} zone ends at pfn {end_pfn:#x}, above its limit {limit_pfn:#x}", zone_type.kernel_name())
            }
            BuildError::Sizing(error) => write!(f, "{error}"),
            BuildError::InvalidPolicy(what) => write!(f, "invalid policy: {what}"),
            BuildError::TableFull { table, capacity } => {
                write!(f, "more {table} than the {capacity} a table holds without the alloc feature")
            }
            BuildError::MetadataMemoryTooSmall { needed_bytes, given_bytes } => {
                write!(f, "the metadata needs at least {needed_bytes} bytes, {given_bytes} were given")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BuildError {}

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
            tunables: Tunables::default(),
            sink: None,
            policy: Policy::default(),
            llc: None,
            cpu_nodes: None,
            overflow: None,
        }
    }

    /// Keeps the first table overflow for `build` to report.
    fn note_full(&mut self, table: &'static str, pushed: Result<(), TableFull>) {
        if let (Err(TableFull { capacity }), None) = (pushed, &self.overflow) {
            self.overflow = Some(BuildError::TableFull { table, capacity });
        }
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
    /// assert_eq!(allocator.managed_pages(), 4096 - 256 - 16);
    /// ```
    pub fn hole(mut self, range: Range<Pfn>) -> Self {
        let pushed = self.holes.push(range);
        self.note_full("holes", pushed);
        self
    }

    /// Frames that exist but are kept from the allocator (firmware, kernel image); see
    /// [`Self::hole`] for overlapping and out-of-zone ranges.
    pub fn reserve(mut self, range: Range<Pfn>) -> Self {
        let pushed = self.reserved.push(range);
        self.note_full("reservations", pushed);
        self
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
    /// assert!(allocator.policy().frag.fullest_first);
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
    /// let types: Vec<ZoneType> = allocator.zones().iter().map(|zone| zone.zone_type()).collect();
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

    pub(crate) fn validate(&mut self, platform_cpus: usize) -> Result<(), BuildError> {
        if let Some(overflow) = self.overflow.take() {
            return Err(overflow);
        }
        if self.zones.is_empty() {
            return Err(BuildError::NoZones);
        }
        if let Some(map) = &self.cpu_nodes {
            if map.len() != platform_cpus {
                return Err(BuildError::CpuMismatch { node_cpus: map.len() as u32, platform_cpus });
            }
            self.node_cpus = cpus_per_node(map)?;
        }
        if self.node_cpus.is_empty() {
            self.node_cpus.push(platform_cpus as u32).expect("room for one node");
        }
        let node_cpus: u32 = self.node_cpus.iter().sum();
        if node_cpus as usize != platform_cpus {
            return Err(BuildError::CpuMismatch { node_cpus, platform_cpus });
        }
        if self.tunables.compaction_proactiveness > 100 || self.tunables.extfrag_threshold > 1000 {
            return Err(BuildError::InvalidPolicy("compaction_proactiveness is 0..=100, extfrag_threshold 0..=1000"));
        }
        let pcp = &self.policy.pcp;
        if pcp.max_cached_order > crate::types::COSTLY_ORDER {
            return Err(BuildError::InvalidPolicy("max_cached_order above PAGE_ALLOC_COSTLY_ORDER (3)"));
        }
        if pcp.thp_lists > 2 {
            return Err(BuildError::InvalidPolicy("thp_lists is 0, 1 or 2"));
        }
        if pcp.batch_scale_max.is_some_and(|scale| scale > crate::policy::PcpPolicy::MAX_BATCH_SCALE) {
            return Err(BuildError::InvalidPolicy("batch_scale_max above 6 (PCP_BATCH_SCALE_MAX range 0..6)"));
        }
        // 2^24 keeps `batch << PCP_BATCH_SCALE_MAX` (and high's arithmetic) inside 32 bits.
        let too_large = |pages: u32| pages > 1 << 24;
        if pcp.batch_override.is_some_and(|batch| batch == 0 || too_large(batch))
            || pcp.high_override.is_some_and(too_large)
        {
            return Err(BuildError::InvalidPolicy("batch override must be 1..=2^24, high override at most 2^24"));
        }
        if pcp.thp_batch_shift > 8 || pcp.high_max == crate::policy::HighMaxRule::ZoneShare(0) {
            return Err(BuildError::InvalidPolicy("thp_batch_shift is 0..=8, a high_max zone share at least 1"));
        }
        match self.policy.vmstat.numa {
            crate::policy::NumaStats::ZoneStat { threshold: Some(threshold) }
                if !crate::policy::NumaStats::ZONE_STAT_THRESHOLDS.contains(&threshold) =>
            {
                return Err(BuildError::InvalidPolicy("a fixed zone-stat threshold is 32..=32765"));
            }
            crate::policy::NumaStats::SeparateClass { threshold }
                if threshold == 0 || threshold > crate::policy::NumaStats::SEPARATE_CLASS_THRESHOLD =>
            {
                return Err(BuildError::InvalidPolicy("the separate NUMA class's threshold is 1..=65533"));
            }
            _ => {}
        }
        for (kind, ranges) in [("hole", &self.holes), ("reserve", &self.reserved)] {
            if let Some(range) = ranges.iter().find(|range| range.start > range.end) {
                return Err(BuildError::InvertedRange { kind, range: range.clone() });
            }
        }
        sort_stable_by_key(&mut self.zones, |zone| (zone.node, zone.zone_type));
        for (i, zone) in self.zones.iter().enumerate() {
            if zone.node as usize >= self.node_cpus.len() {
                return Err(BuildError::UnknownNode { node: zone.node });
            }
            if zone.zone_type == ZoneType::Device {
                return Err(BuildError::DeviceZone);
            }
            if zone.span.start >= zone.span.end {
                return Err(BuildError::EmptySpan { zone_type: zone.zone_type });
            }
            let limit_pfn = zone_type_limit_pfn(zone.zone_type);
            if zone.span.end > limit_pfn {
                return Err(BuildError::ZoneAboveLimit {
                    zone_type: zone.zone_type,
                    end_pfn: zone.span.end,
                    limit_pfn,
                });
            }
            let spanned_pages = zone.span.end - zone.span.start;
            if spanned_pages >= u32::MAX as u64 {
                return Err(BuildError::ZoneTooLarge { zone_type: zone.zone_type, spanned_pages });
            }
            if i > 0 && self.zones[i - 1].node == zone.node && self.zones[i - 1].zone_type == zone.zone_type {
                return Err(BuildError::DuplicateZone { node: zone.node, zone_type: zone.zone_type });
            }
            for other in &self.zones[..i] {
                if other.span.start < zone.span.end && zone.span.start < other.span.end {
                    return Err(BuildError::Overlap { first: other.span.clone(), second: zone.span.clone() });
                }
            }
        }
        self.cut_into_arenas(platform_cpus)
    }

    /// Replaces a valid single-node description by its per-CPU arenas when the policy asks
    /// for them (`ArenaRule::PerCpu`): sub-spans of valid zones, one node per arena.
    fn cut_into_arenas(&mut self, platform_cpus: usize) -> Result<(), BuildError> {
        if self.policy.arenas != crate::policy::ArenaRule::PerCpu {
            return Ok(());
        }
        let layout = arena_layout(self, platform_cpus)
            .map_err(|TableFull { capacity }| BuildError::TableFull { table: "arena zones", capacity })?;
        let Some(layout) = layout else { return Ok(()) };
        self.zones = layout.zones;
        sort_stable_by_key(&mut self.zones, |zone| (zone.node, zone.zone_type));
        self.node_cpus = cpus_per_node(&layout.cpu_nodes)?;
        self.cpu_nodes = Some(layout.cpu_nodes);
        Ok(())
    }

    /// Nodes the build makes: the CPU map's, else the declared ones, else one.
    pub(crate) fn node_count(&self) -> usize {
        self.cpu_nodes.as_deref().map_or(self.node_cpus.len(), mapped_nodes).max(1)
    }

    /// Node of `cpu` (validated): the map if given, else CPUs numbered node by node.
    pub(crate) fn node_of_cpu(&self, cpu: usize) -> u16 {
        match &self.cpu_nodes {
            Some(map) => map[cpu],
            None => {
                let mut first_cpu = 0;
                let node = self.node_cpus.iter().position(|&cpus| {
                    first_cpu += cpus as usize;
                    cpu < first_cpu
                });
                node.expect("a validated CPU") as u16
            }
        }
    }

    /// Managed sub-ranges of `span`: the span minus holes and reservations. Between k
    /// excluded ranges lie at most k + 1 managed ones, so the table never overflows.
    pub(crate) fn managed_ranges(&self, span: &Range<Pfn>) -> Ranges {
        let excluded = clipped_sorted(self.holes.iter().chain(self.reserved.iter()), span);
        let mut ranges = Ranges::new();
        let mut cursor = span.start;
        for range in excluded.iter() {
            if range.start > cursor {
                ranges.push(cursor..range.start).expect("k + 1 managed ranges");
            }
            cursor = cursor.max(range.end);
        }
        if cursor < span.end {
            ranges.push(cursor..span.end).expect("k + 1 managed ranges");
        }
        ranges
    }

    /// Frames of `span` that are holes.
    pub(crate) fn hole_pages(&self, span: &Range<Pfn>) -> u64 {
        let holes = clipped_sorted(self.holes.iter(), span);
        let mut pages = 0;
        let mut cursor = span.start;
        for hole in holes.iter() {
            let start = hole.start.max(cursor);
            if hole.end > start {
                pages += hole.end - start;
                cursor = hole.end;
            }
        }
        pages
    }

    /// The described machine as the sizing sees it: CPUs and managed pages per node and zone.
    pub(crate) fn machine_spec(&self) -> MachineSpec {
        let mut nodes: Table<NodeSpec, FIXED_NODES> =
            Table::from_fn(self.node_cpus.len(), |node| NodeSpec::new(self.node_cpus[node], [0; MAX_NR_ZONES]))
                .expect("as many as the builder's nodes");
        for zone in &self.zones {
            let managed: u64 = self.managed_ranges(&zone.span).iter().map(|r| r.end - r.start).sum();
            let node = &mut nodes[zone.node as usize];
            node.managed_pages[zone.zone_type.index()] = managed;
            node.boot_managed_pages[zone.zone_type.index()] = managed;
        }
        MachineSpec { nodes, tunables: self.tunables.clone(), kernel: LinuxVersion::MAINLINE }
    }
}

/// CPUs per node of a CPU-to-node map.
fn cpus_per_node(map: &[u16]) -> Result<Table<u32, FIXED_NODES>, BuildError> {
    Table::from_fn(mapped_nodes(map), |node| map.iter().filter(|&&n| n as usize == node).count() as u32)
        .map_err(|TableFull { capacity }| BuildError::TableFull { table: "nodes", capacity })
}

/// Nodes a CPU-to-node map names: 0..=its largest node id.
fn mapped_nodes(map: &[u16]) -> usize {
    map.iter().copied().max().map_or(0, |max| max as usize + 1)
}

/// The non-empty parts of `ranges` (holes and reservations) inside `span`, by start (they
/// may still overlap).
fn clipped_sorted<'a>(ranges: impl Iterator<Item = &'a Range<Pfn>>, span: &Range<Pfn>) -> Ranges {
    let mut clipped = Ranges::new();
    for range in ranges.filter(|r| r.start < r.end && r.start < span.end && span.start < r.end) {
        clipped.push(range.start.max(span.start)..range.end.min(span.end)).expect("holes and reservations fit");
    }
    sort_stable_by_key(&mut clipped, |r| r.start);
    clipped
}

/// A stable sort of a description table: the slice's own with `alloc`, else an insertion
/// sort (tables of at most a few hundred entries, sorted once at build), same order.
fn sort_stable_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    #[cfg(feature = "alloc")]
    items.sort_by_key(key);
    #[cfg(not(feature = "alloc"))]
    for sorted in 1..items.len() {
        let mut at = sorted;
        while at > 0 && key(&items[at - 1]) > key(&items[at]) {
            items.swap(at - 1, at);
            at -= 1;
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
