//! Where a simulated bench's time went, per allocator call, from the run's report.

use serde::Serialize;

/// Where a simulated run's time went, per allocator call of the whole run (its untimed
/// set-up calls too): what grows with the thread count shows here.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SimCosts {
    /// Zone-lock wait, and the share of acquisitions that found the lock held.
    pub zone_lock_wait_ns: f64,
    pub zone_lock_contended_pct: f64,
    /// Time inside zone locks.
    pub zone_lock_hold_ns: f64,
    /// Shared lines (frame records, free-list heads, counters, stacks) another CPU held,
    /// and their cost.
    pub line_transfers: f64,
    pub line_transfer_ns: f64,
    /// Shared lines served by memory.
    pub line_misses: f64,
}

impl SimCosts {
    pub(super) fn of(report: &crate::run::RunReport) -> SimCosts {
        let calls = report.allocator_calls.max(1) as f64;
        let stats = report.sim.clone().unwrap_or_default();
        let lock = &report.zone_lock;
        SimCosts {
            zone_lock_wait_ns: lock.wait_ns as f64 / calls,
            zone_lock_contended_pct: lock.contended as f64 * 100.0 / lock.acquisitions.max(1) as f64,
            zone_lock_hold_ns: stats.zone_lock.hold_ns as f64 / calls,
            line_transfers: stats.line_transfers as f64 / calls,
            line_transfer_ns: stats.line_transfer_ns as f64 / calls,
            line_misses: stats.line_misses as f64 / calls,
        }
    }

    /// The mean of `costs`, field by field.
    pub(in crate::bench) fn mean(costs: &[SimCosts]) -> Option<SimCosts> {
        let n = costs.len() as f64;
        let sum = |pick: fn(&SimCosts) -> f64| costs.iter().map(pick).sum::<f64>() / n;
        (!costs.is_empty()).then(|| SimCosts {
            zone_lock_wait_ns: sum(|c| c.zone_lock_wait_ns),
            zone_lock_contended_pct: sum(|c| c.zone_lock_contended_pct),
            zone_lock_hold_ns: sum(|c| c.zone_lock_hold_ns),
            line_transfers: sum(|c| c.line_transfers),
            line_transfer_ns: sum(|c| c.line_transfer_ns),
            line_misses: sum(|c| c.line_misses),
        })
    }
}
