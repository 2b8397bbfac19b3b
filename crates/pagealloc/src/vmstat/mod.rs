//! vmstat counters (issue 14, in progress): each counter is a shared exact value plus one
//! small signed diff per CPU, folded into the shared value when it passes the zone's
//! `stat_threshold` (formulas in [`crate::sizing::stat_threshold`]), so that most updates
//! touch only a CPU-local line. This first step is the per-CPU arithmetic; the counters,
//! their fold in the periodic work and the /proc/vmstat dump come next.

mod diff;

pub use diff::{dec_diff, fold_diff, inc_diff, mod_diff};
