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
#![allow(missing_debug_implementations)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod allocator;
#[cfg(feature = "std")]
pub mod background;
pub mod block;
mod buddy;
pub mod builder;
pub mod check;
pub mod error;
pub mod events;
mod fallback;
pub mod frame;
pub mod free_area;
pub mod handle;
mod highatomic;
pub mod list;
pub mod pcp;
pub mod platform;
pub mod policy;
pub mod presets;
pub mod request;
pub mod sizing;
pub mod sync;
pub mod types;
pub mod views;
pub(crate) mod watermark;
#[cfg(feature = "x86_64-frames")]
pub mod x86_64_frames;
pub mod zone;

pub use allocator::PageAllocator;
pub use block::Block;
pub use builder::{AllocatorBuilder, BuildError, LastLevelCache};
pub use check::{InvariantViolation, PageCensus};
pub use error::{AllocError, FreeError};
pub use events::{EventSink, ExtfragEvent, ExtfragStats, FallbackKind};
pub use frame::FRAME_METADATA_BYTES;
pub use handle::OwnedBlock;
pub use policy::Policy;
pub use request::AllocRequest;
pub use types::{MigrateType, Pfn, ZoneType, MAX_ORDER, PAGEBLOCK_ORDER};
