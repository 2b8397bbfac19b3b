//! Why a description cannot be built: every malformed memory description, policy or
//! metadata placement is a typed error, and the build changes nothing.

use core::fmt;
use core::ops::Range;

use crate::sizing::SizingError;
use crate::types::{Pfn, PhysAddr, ZoneType};

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
    /// The firmware memory map given to [`AllocatorBuilder::memory_map`] was refused.
    ///
    /// [`AllocatorBuilder::memory_map`]: crate::AllocatorBuilder::memory_map
    MemoryMap(MemoryMapError),
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
            BuildError::MemoryMap(error) => write!(f, "memory map: {error}"),
            BuildError::MetadataMemoryTooSmall { needed_bytes, given_bytes } => {
                write!(f, "the metadata needs at least {needed_bytes} bytes, {given_bytes} were given")
            }
        }
    }
}

impl core::error::Error for BuildError {}

/// Why a memory map was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryMapError {
    /// A region ends before it starts.
    Inverted { start: PhysAddr, end: PhysAddr },
    /// Two regions share a byte (inside one frame too), and they name different nodes or
    /// one is movable and the other not (regions of one kind may overlap; they are merged).
    Conflict { at: PhysAddr },
    /// No region holds a whole frame.
    NoMemory,
    /// A region's frames reach past [`PFN_LIMIT`](crate::types::PFN_LIMIT), the highest frame number a block names;
    /// refused whatever zone the region would fill.
    AboveLimit { end: PhysAddr, limit: PhysAddr },
}

impl fmt::Display for MemoryMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryMapError::Inverted { start, end } => write!(f, "region {start:#x}..{end:#x} ends before it starts"),
            MemoryMapError::Conflict { at } => {
                write!(f, "regions of different nodes or kinds overlap at {at:#x}")
            }
            MemoryMapError::NoMemory => write!(f, "no region holds a whole 4 KiB frame"),
            MemoryMapError::AboveLimit { end, limit } => {
                write!(f, "a region ends at {end:#x}, past the highest frame address {limit:#x}")
            }
        }
    }
}

impl core::error::Error for MemoryMapError {}

impl From<MemoryMapError> for BuildError {
    fn from(error: MemoryMapError) -> BuildError {
        BuildError::MemoryMap(error)
    }
}
