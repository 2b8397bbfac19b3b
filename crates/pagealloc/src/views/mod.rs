//! The allocator's state in the layouts kernel developers read: /proc/buddyinfo,
//! /proc/pagetypeinfo, /proc/zoneinfo, /proc/vmstat and debugfs extfrag/{unusable,extfrag}_index.
//! Writers take `core::fmt::Write`, so they work in no_std too.

mod buddyinfo;
mod fragmentation;
mod vmstat;
mod zoneinfo;

pub use buddyinfo::{write_buddyinfo, write_pagetypeinfo};
pub use fragmentation::{
    extfrag_index_milli, unusable_index_milli, write_extfrag_index, write_unusable_index, ContigInfo,
};
pub use vmstat::write_vmstat;
pub use zoneinfo::{write_zoneinfo, PagesetLine, ZoneinfoZone};
