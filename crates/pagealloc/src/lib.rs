//! # pagealloc
//!
//! The Linux physical page allocator as an embeddable Rust library: a zoned buddy allocator
//! with migratetypes, pageblocks, watermarks and lowmem reserves, mobility-grouping
//! fallbacks with extfrag events, and the kernel's derived parameters (min_free_kbytes,
//! watermarks, protection, per-CPU pageset bounds, vmstat thresholds) computed with the
//! kernel's integer arithmetic.
//!
//! `no_std` + `alloc`; the `std` feature adds the real-thread platform. The allocator is
//! generic over a [`platform::Platform`] (current CPU, lock type, clock, cost hooks), so the
//! same code runs on real threads and inside the many-CPU simulator of `pagealloc-sim`.
//!
//! ```
//! use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, platform::TestPlatform};
//!
//! let allocator = PageAllocator::build(AllocatorBuilder::pc_layout(256), TestPlatform::new(2)).unwrap();
//! let block = allocator.alloc_pages(3, AllocRequest::KERNEL).unwrap();
//! assert_eq!(block.pages(), 8);
//! allocator.free_pages(block).unwrap();
//! allocator.check_invariants().unwrap();
//! ```
//!
//! Each module names the Linux function it mirrors, so kernel readers can map it.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_debug_implementations)]

#[cfg(any(feature = "alloc", test))]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// Layers, bottom up; a file uses items only of its own module or of modules in its layer
// or below, and no chain of files leads back to where it started. `tests/layers.rs` reads
// this list as the one layer table and checks every file against it.
// 0. Primitives: numbers and types, the platform and its locks, tables.
pub mod growable;
pub mod meta;
pub mod platform;
mod prefetch;
pub mod sync;
pub mod table;
#[cfg(test)]
mod test_rng;
pub mod types;
// 1. Descriptions: requests, policies and presets, derived sizing, the machine and its
//    builder, clients, events, errors, vmstat counters.
pub mod builder;
pub mod client;
pub mod error;
pub mod events;
pub mod metadata_memory;
pub mod policy;
pub mod presets;
pub mod request;
pub mod sizing;
pub mod vmstat;
// 2. Data: frame records, the index lists linking them, the block handle; the clients' LRU
//    lists (they need only the platform and locks).
pub mod block;
pub mod frame;
pub mod list;
#[cfg(any(feature = "alloc", test))]
pub mod lru;
// 3. A zone's data: memory, free area, state; no locks taken here.
pub mod free_area;
pub mod fullness;
pub mod remote_frees;
pub mod zone_mem;
pub mod zone_state;
// 4. Buddy operations under the zone lock.
pub mod buddy;
// 5. Policies over the buddy: fallback, watermarks, the high-order atomic reserve,
//    compaction's scanners and indices.
pub mod compaction;
mod fallback;
mod highatomic;
pub(crate) mod watermark;
// 6. The one zone-take path.
mod take;
// 7. Per-CPU pagesets, over the buddy's narrow view.
pub mod pcp;
// 8. A zone composes the above.
pub mod zone;
// 9. The allocator composes zones.
pub mod allocator;
// 10. Around the allocator: checker, views, handles, background thread, trait adapters.
#[cfg(feature = "std")]
pub mod background;
#[cfg(any(feature = "alloc", test))]
pub mod check;
pub mod global_alloc;
pub mod handle;
pub mod views;
#[cfg(feature = "x86_64-frames")]
pub mod x86_64_frames;
/// The `x86_64` crate the frame-allocator adapter implements, re-exported so that its
/// types (`PhysFrame`, `OffsetPageTable`) match the adapter's without a second dependency line.
#[cfg(feature = "x86_64-frames")]
pub use x86_64;

#[cfg(feature = "arceos")]
pub mod arceos_pages;

pub use allocator::FREE_LOOKAHEAD_BLOCKS;
pub use allocator::{AllocatorStats, Background, Counters, Hotplug, PageAllocator, Pagesets, ZoneStats};
pub use block::{Block, RawBlock};
pub use builder::{AllocatorBuilder, BuildError, LastLevelCache};
#[cfg(any(feature = "alloc", test))]
pub use check::{InvariantViolation, PageCensus};
pub use error::{AllocError, BulkFreeError, FreeError, GrowError, RangeError};
pub use events::{EventSink, ExtfragEvent, ExtfragStats, FallbackKind, PageEvent};
pub use frame::FRAME_METADATA_BYTES;
pub use handle::OwnedBlock;
/// The lock traits a [`platform::Platform`] names its locks by, re-exported so an embedder
/// implements them against the same version.
pub use lock_api;
pub use metadata_memory::MetadataMemory;
pub use policy::Policy;
pub use request::AllocRequest;
pub use types::{MigrateType, Pfn, PhysAddr, ZoneType, MAX_ORDER, PAGEBLOCK_ORDER};

/// The README's Rust snippets, each compiled and run as a doctest (they use the std
/// platform).
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../../../README.md")]
struct ReadmeSnippets;

/// docs/using.md's snippets, each compiled and run as a doctest (they use the std platform).
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../../../docs/using.md")]
struct UsingSnippets;

/// docs/platform.md's snippets, which need the `memory-growth` and `arceos` features.
#[cfg(all(doctest, feature = "arceos", feature = "std"))]
#[doc = include_str!("../../../docs/platform.md")]
struct PlatformSnippets;
