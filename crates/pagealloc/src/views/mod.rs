//! The allocator's state in the layouts kernel developers read: /proc/buddyinfo,
//! /proc/pagetypeinfo, /proc/zoneinfo, /proc/vmstat and debugfs extfrag/{unusable,extfrag}_index.
//! Writers of a live allocator take `(out, &allocator)`, `out` any `core::fmt::Write`, and
//! need no heap; writing a description's zones (`write_zoneinfo_zones`) needs `alloc`.

mod buddyinfo;
mod fragmentation;
mod vmstat;
mod zoneinfo;

pub use buddyinfo::{write_buddyinfo, write_pagetypeinfo};
pub use fragmentation::{
    extfrag_index_milli, unusable_index_milli, write_extfrag_index, write_unusable_index, ContigInfo,
};
pub use vmstat::write_vmstat;
pub use zoneinfo::{write_zoneinfo, PagesetLine};
#[cfg(feature = "alloc")]
pub use zoneinfo::{write_zoneinfo_zones, ZoneinfoZone};
