//! How one point of a curve is measured: its unit and method, the operations that make a
//! run last [`POINT_NS`], and the median of its repeats.

use super::Effort;
use crate::machine::profile::{Curve, CurvePoint, Measurement};

/// A curve's unit and method, shared by its points.
pub struct CurveMethod {
    pub unit: &'static str,
    pub method: String,
}

impl CurveMethod {
    pub fn with_points(self, points: Vec<CurvePoint>) -> Curve {
        Curve { unit: self.unit.to_string(), method: self.method, points }
    }

    /// The curve at each count of the CPU series of `order` from `min_cpus` up, each point
    /// from the samples `point_samples(the first cpus of order)` returns.
    pub fn measure(
        self,
        order: &[usize],
        min_cpus: u32,
        mut point_samples: impl FnMut(&[usize]) -> Result<Vec<f64>, String>,
    ) -> Result<Curve, String> {
        let mut points = Vec::new();
        for cpus in Curve::cpu_series(order.len() as u32).into_iter().filter(|&cpus| cpus >= min_cpus) {
            points.push(point(cpus, point_samples(&order[..cpus as usize])?, &self));
        }
        Ok(self.with_points(points))
    }
}

/// A point's run at full effort takes about this (a tenth with `--quick`).
pub const POINT_NS: u64 = 100_000_000;

/// Operations per thread that make a run take about [`POINT_NS`] at `effort`, from a probe
/// run of `probe_ops` per thread that took `probe_ns`; one at least.
pub fn ops_for_point(effort: &Effort, probe_ops: u64, probe_ns: f64) -> u64 {
    let ns_per_op = probe_ns.max(1.0) / probe_ops.max(1) as f64;
    ((effort.times(POINT_NS) as f64 / ns_per_op) as u64).max(1)
}

/// The repeats of `run(operations per thread)` (its wall time, ns), each as wall time /
/// operations per thread, with the operations sized by a probe run of `probe_ops`.
pub fn sized_samples(
    effort: &Effort,
    probe_ops: u64,
    run: impl Fn(u64) -> Result<f64, String>,
) -> Result<Vec<f64>, String> {
    let ops = ops_for_point(effort, probe_ops, run(probe_ops)?);
    (0..effort.repeats).map(|_| run(ops).map(|wall_ns| wall_ns / ops as f64)).collect()
}

/// The point at `cpus` of `samples`: their median with its extremes.
pub fn point(cpus: u32, samples: Vec<f64>, curve: &CurveMethod) -> CurvePoint {
    CurvePoint::new(cpus, &Measurement::from_samples(samples, curve.unit, &curve.method))
}

/// Each thread's share of `total` operations over `threads` threads, one at least.
pub fn per_thread(total: u64, threads: usize) -> u64 {
    (total / threads.max(1) as u64).max(1)
}
