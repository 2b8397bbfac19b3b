//! What an allocator's metadata costs, part by part: every table [`PageAllocator::build_in`]
//! places in the memory it is given (mirrors what Linux spends in its memmap, pageblock
//! bitmap, per-CPU pagesets and pg_data_t).

use core::mem::{align_of, size_of};

use super::{Node, PageAllocator};
use crate::builder::AllocatorBuilder;
use crate::frame::{Frame, FrameLinks, FRAME_METADATA_BYTES};

/// Bytes a zone's two frame tables (state words, links) may lose to alignment.
const FRAME_TABLES_ALIGN_BYTES: u64 = (align_of::<Frame>() + align_of::<FrameLinks>()) as u64;
use crate::pcp::PcpSlot;
use crate::platform::Platform;
use crate::policy::FreePagesCount;
use crate::sizing::ZoneSizing;
use crate::types::{MAX_NR_ZONES, PAGEBLOCK_PAGES};
use crate::zone::Zone;

/// An allocator's metadata by part, in bytes; each table's alignment slack is in its part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetadataParts {
    /// Frames the zones span (holes and reservations included).
    pub spanned_frames: u64,
    /// A record per spanned frame ([`crate::FRAME_METADATA_BYTES`] each).
    pub frame_records: u64,
    /// A migratetype per pageblock.
    pub pageblock_types: u64,
    /// Fullest-first placement: per pageblock its free count, bucket links, bucket and search
    /// start.
    pub pageblock_fullness: u64,
    /// A pageset per CPU and zone.
    pub pagesets: u64,
    /// The zones themselves, with their per-CPU free-count diffs where kept.
    pub zones: u64,
    /// The nodes, their zonelists and the boot-time zone sizings.
    pub nodes: u64,
    /// Per CPU: its node, its next periodic pass and whether it is online.
    pub per_cpu: u64,
}

impl MetadataParts {
    pub fn total_bytes(&self) -> u64 {
        self.frame_records
            + self.pageblock_types
            + self.pageblock_fullness
            + self.pagesets
            + self.zones
            + self.nodes
            + self.per_cpu
    }

    /// All parts over the spanned frames.
    pub fn bytes_per_frame(&self) -> f64 {
        self.total_bytes() as f64 / self.spanned_frames.max(1) as f64
    }

    /// The parts by name, in the struct's order.
    pub fn named(&self) -> [(&'static str, u64); 7] {
        [
            ("frame records", self.frame_records),
            ("pageblock types", self.pageblock_types),
            ("pageblock fullness", self.pageblock_fullness),
            ("per-CPU pagesets", self.pagesets),
            ("zones", self.zones),
            ("nodes", self.nodes),
            ("per-CPU tables", self.per_cpu),
        ]
    }
}

impl<P: Platform> PageAllocator<P> {
    /// Bytes of metadata an allocator built from `builder` takes on this platform type with
    /// `nr_cpus` CPUs: all of [`Self::metadata_parts`]. [`Self::build_in`] places all of it
    /// in the memory it is given, this much being enough (each table's alignment included).
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType, FRAME_METADATA_BYTES};
    /// use pagealloc::platform::TestPlatform;
    /// let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18); // 1 GiB
    /// let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 4);
    /// assert!(bytes >= (1 << 18) * FRAME_METADATA_BYTES as u64); // 12 bytes a frame, and a little more
    /// ```
    pub fn metadata_bytes(builder: &AllocatorBuilder, nr_cpus: usize) -> u64 {
        Self::metadata_parts(builder, nr_cpus).total_bytes()
    }

    /// An upper bound on [`Self::metadata_bytes`] for any description whose zones span at
    /// most `spanned_frames` frames in all, on at most `nodes` nodes, with `nr_cpus` CPUs,
    /// under any policy. `const`, so that a kernel can size a static buffer for
    /// [`Self::build_in`] before anything runs.
    ///
    /// ```
    /// use pagealloc::PageAllocator;
    /// use pagealloc::platform::TestPlatform;
    /// // 1 GiB on one node of 4 CPUs.
    /// const BYTES: u64 = PageAllocator::<TestPlatform>::metadata_bytes_bound(1 << 18, 1, 4);
    /// assert!(BYTES < (1 << 18) * 13);
    /// ```
    pub const fn metadata_bytes_bound(spanned_frames: u64, nodes: usize, nr_cpus: usize) -> u64 {
        // Per-CPU arenas make up to one node per CPU, each with every zone type.
        let nodes = (if nr_cpus > nodes { nr_cpus } else { nodes }) as u64;
        let zones = nodes * MAX_NR_ZONES as u64;
        let cpus = (if nr_cpus > 0 { nr_cpus } else { 1 }) as u64;
        // A zone's pageblock tables hold its span's pageblocks and up to two partial ones.
        let pageblocks = spanned_frames / PAGEBLOCK_PAGES + 2 * zones;
        let frames = spanned_frames * FRAME_METADATA_BYTES as u64 + zones * FRAME_TABLES_ALIGN_BYTES;
        let pageblock_tables = pageblocks * (1 + FULLNESS_BYTES_PER_PAGEBLOCK) + zones * FULLNESS_ALIGN_BYTES;
        let per_zone = (align_of::<PcpSlot<P>>() + size_of::<Zone<P>>()) as u64
            + cpus * size_of::<PcpSlot<P>>() as u64
            + FREE_DIFF_BYTES * (cpus + 1);
        let per_node = (size_of::<Node>() + MAX_NR_ZONES * size_of::<ZoneSizing>()) as u64;
        let node_align = (align_of::<Node>() + align_of::<ZoneSizing>()) as u64;
        frames + pageblock_tables + zones * per_zone + nodes * per_node + node_align + per_cpu_bytes::<P>(nr_cpus)
    }

    /// The metadata of an allocator built from `builder` with `nr_cpus` CPUs, part by part:
    /// per zone, a record per spanned frame, a type per pageblock (with fullest-first
    /// placement also its fullness), a pageset per CPU and the zone itself; per node its
    /// zonelist, counters and sizings; per CPU its node, its next vmstat pass and whether it is
    /// online.
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType, FRAME_METADATA_BYTES};
    /// use pagealloc::platform::TestPlatform;
    /// let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18); // 1 GiB
    /// let parts = PageAllocator::<TestPlatform>::metadata_parts(&builder, 4);
    /// assert_eq!(parts.total_bytes(), PageAllocator::<TestPlatform>::metadata_bytes(&builder, 4));
    /// assert_eq!(parts.spanned_frames, 1 << 18);
    /// assert!(parts.frame_records >= (1 << 18) * FRAME_METADATA_BYTES as u64);
    /// // Everything else is a few hundredths of a byte a frame.
    /// assert!(parts.bytes_per_frame() < FRAME_METADATA_BYTES as f64 + 0.1);
    /// ```
    pub fn metadata_parts(builder: &AllocatorBuilder, nr_cpus: usize) -> MetadataParts {
        // Per-CPU arenas (`ArenaRule::PerCpu`) are zones and nodes of their own.
        let arenas = match builder.policy.arenas {
            crate::policy::ArenaRule::PerCpu => crate::builder::arena_layout(builder, nr_cpus).ok().flatten(),
            crate::policy::ArenaRule::PerNode => None,
        };
        let zones = arenas.as_ref().map_or(&builder.zones[..], |layout| &layout.zones[..]);
        let node_count = arenas.as_ref().map_or(builder.node_count(), |layout| layout.node_count());
        let mut parts = MetadataParts::default();
        for zone in zones {
            add_zone::<P>(&mut parts, builder, zone.span.clone(), nr_cpus);
        }
        parts.nodes = (node_count * size_of::<Node>() + align_of::<Node>()) as u64
            + (node_count * MAX_NR_ZONES * size_of::<crate::sizing::ZoneSizing>()
                + align_of::<crate::sizing::ZoneSizing>()) as u64;
        parts.per_cpu = per_cpu_bytes::<P>(nr_cpus);
        parts
    }
}

/// Pageblock fullness (fullest-first placement): free and parked counts (2 x u32), bucket
/// links (2 x u32) and a bucket (u8) per pageblock, and a search start (u16) per zone's table.
const FULLNESS_BYTES_PER_PAGEBLOCK: u64 = 8 + 8 + 1 + 2;
/// Each of those tables placed aligned.
const FULLNESS_ALIGN_BYTES: u64 = 4 + 4 + 4 + 2;
/// A per-CPU free-count diff (i16), per zone per CPU and one more for alignment.
const FREE_DIFF_BYTES: u64 = 2;

/// Per CPU: its node (u16), its next vmstat pass (u64) and whether it is online (a bool),
/// each table aligned.
const fn per_cpu_bytes<P: Platform>(nr_cpus: usize) -> u64 {
    (align_of::<Zone<P>>() + nr_cpus * 2 + 2 + nr_cpus * 8 + 8 + nr_cpus + 1) as u64
}

/// One zone's frame records, pageblock tables, pagesets, the zone itself and its free-count
/// diffs.
fn add_zone<P: Platform>(
    parts: &mut MetadataParts,
    builder: &AllocatorBuilder,
    span: core::ops::Range<u64>,
    nr_cpus: usize,
) {
    let spanned = span.end.saturating_sub(span.start);
    let pageblocks = if spanned == 0 {
        0
    } else {
        ((span.end - 1) >> crate::PAGEBLOCK_ORDER) - (span.start >> crate::PAGEBLOCK_ORDER) + 1
    };
    let fullest_first = builder.policy.frag.beyond_linux.fullest_first;
    parts.spanned_frames += spanned;
    // Placed in caller memory, each table may start up to its alignment less one byte late.
    parts.frame_records += spanned * FRAME_METADATA_BYTES as u64 + FRAME_TABLES_ALIGN_BYTES;
    parts.pageblock_types += pageblocks;
    if fullest_first {
        parts.pageblock_fullness += pageblocks * FULLNESS_BYTES_PER_PAGEBLOCK + FULLNESS_ALIGN_BYTES;
    }
    parts.pagesets += align_of::<crate::pcp::PcpSlot<P>>() as u64;
    if builder.policy.pcp.enabled {
        parts.pagesets += (nr_cpus * size_of::<crate::pcp::PcpSlot<P>>()) as u64;
    }
    parts.zones += size_of::<crate::zone::Zone<P>>() as u64;
    // Per zone with per-CPU free-count diffs: an i16 per CPU.
    if builder.policy.vmstat.free_pages == FreePagesCount::PerCpuDiffs {
        parts.zones += FREE_DIFF_BYTES * (nr_cpus.max(1) as u64 + 1);
    }
}
