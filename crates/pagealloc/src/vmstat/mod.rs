//! vmstat counters: each counter is a shared exact value plus one small per-CPU part, folded
//! into the shared value past the zone's `stat_threshold` (formulas in
//! [`crate::sizing::normal_stat_threshold`]) or by the periodic work, so that most updates
//! touch only a CPU-local line (mirrors mm/vmstat.c).
//!
//! - `diff`: the per-CPU arithmetic (mod, inc and dec with overstep, fold);
//! - `items`: the NUMA events and where an allocation landed;
//! - `shared`: the zone and global atomics, each fold an atomic add on a shared line;
//! - `cpu`: one CPU's counters for one zone, kept in its pageset.
//!
//! The allocator sums them for exact reads; `views::vmstat` prints them as /proc/vmstat.

mod cpu;
mod diff;
mod items;
mod shared;

pub use cpu::{count_unbuffered, CpuZoneStats};
pub use diff::{dec_diff, fold_diff, inc_diff, inc_event_diff, mod_diff};
pub use items::{NumaEvent, NumaPlacement};
pub use shared::{CounterClass, FoldTarget, GlobalVmstat, ZoneVmstat};
