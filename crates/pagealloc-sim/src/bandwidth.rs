//! A socket's memory bandwidth, shared by the CPUs that stream from it at once: the per-CPU
//! cost of a page from memory as a function of how many CPUs of the socket have a memory
//! transfer under way, relative to one CPU alone.
//!
//! The points come from a machine's measured curve (`pagelab calibrate`: N CPUs zeroing pages
//! at once) or from a seed machine's cited single-core and socket bandwidths. Between points
//! the factor is interpolated linearly in the CPU count; past the last point the last
//! segment's slope continues (a curve that flattened into a saturated socket keeps dividing
//! the socket among more CPUs; one that rose by a few percent per CPU keeps rising so).

use serde::Serialize;

/// One point: at `cpus` CPUs streaming at once, each pays `per_mille` thousandths of what
/// one CPU alone pays per page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SharingPoint {
    pub cpus: u32,
    pub per_mille: u32,
}

/// A socket's bandwidth sharing curve: points ascending by CPU count, the first at 1 CPU
/// and 1000 per mille, never falling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BandwidthCurve {
    pub points: &'static [SharingPoint],
}

/// Why a curve's points were refused.
#[derive(Clone, Debug, PartialEq)]
pub enum CurveError {
    Empty,
    /// The first point is not one CPU.
    NotFromOneCpu,
    /// CPU counts must rise from point to point.
    NotAscending {
        cpus: u32,
    },
    /// A cost per page must be positive and finite.
    BadCost {
        cpus: u32,
    },
}

impl BandwidthCurve {
    /// No sharing: every CPU pays what one alone does, however many stream at once.
    pub const UNSHARED: BandwidthCurve = BandwidthCurve { points: &[SharingPoint { cpus: 1, per_mille: 1000 }] };

    /// The curve of per-CPU costs per page `(cpus, ns)` as measured or cited, normalised to
    /// the first (one CPU). A point below one CPU's cost (measurement noise) is taken as
    /// one CPU's, and a point below the one before as that one: more CPUs never make a page
    /// cheaper.
    pub fn from_per_cpu_ns(points_ns: &[(u32, f64)]) -> Result<BandwidthCurve, CurveError> {
        let &(first_cpus, first_ns) = points_ns.first().ok_or(CurveError::Empty)?;
        if first_cpus != 1 {
            return Err(CurveError::NotFromOneCpu);
        }
        let mut points = Vec::with_capacity(points_ns.len());
        let mut previous = SharingPoint { cpus: 0, per_mille: 1000 };
        for &(cpus, ns) in points_ns {
            if !(ns.is_finite() && ns > 0.0 && first_ns > 0.0) {
                return Err(CurveError::BadCost { cpus });
            }
            if cpus <= previous.cpus {
                return Err(CurveError::NotAscending { cpus });
            }
            let per_mille = ((ns / first_ns * 1000.0).round() as u32).max(previous.per_mille);
            previous = SharingPoint { cpus, per_mille };
            points.push(previous);
        }
        Ok(BandwidthCurve { points: Box::leak(points.into_boxed_slice()) })
    }

    /// A curve from two cited figures: one CPU streams `single_cpu_gb_per_s`, the socket at
    /// most `socket_gb_per_s`; `cpus` CPUs each get the single-CPU rate until together they
    /// would exceed the socket's, then an equal share of it. Points at every CPU count up to
    /// `socket_cpus`, so the slope past them is the saturated one.
    pub fn from_socket_bandwidth(single_cpu_gb_per_s: f64, socket_gb_per_s: f64, socket_cpus: u32) -> BandwidthCurve {
        assert!(single_cpu_gb_per_s > 0.0 && socket_gb_per_s >= single_cpu_gb_per_s, "bandwidths");
        let points: Vec<(u32, f64)> = (1..=socket_cpus.max(2))
            .map(|cpus| (cpus, (f64::from(cpus) / socket_gb_per_s).max(1.0 / single_cpu_gb_per_s)))
            .collect();
        Self::from_per_cpu_ns(&points).expect("ascending, positive")
    }

    /// Thousandths of one CPU's cost that each of `cpus` streaming CPUs pays (1000 at one).
    pub fn per_mille(&self, cpus: u32) -> u64 {
        let points = self.points;
        debug_assert!(!points.is_empty() && points[0] == SharingPoint { cpus: 1, per_mille: 1000 });
        let cpus = cpus.max(1);
        let after = points.iter().position(|point| point.cpus >= cpus);
        let (low, high) = match after {
            Some(0) => return u64::from(points[0].per_mille),
            Some(index) => (points[index - 1], points[index]),
            None if points.len() == 1 => return u64::from(points[0].per_mille),
            None => (points[points.len() - 2], points[points.len() - 1]),
        };
        // Linear through (low, high), evaluated at `cpus` (past `high` when extrapolating).
        let span = i64::from(high.cpus - low.cpus);
        let rise = i64::from(high.per_mille) - i64::from(low.per_mille);
        let offset = i64::from(cpus) - i64::from(low.cpus);
        let value = i64::from(low.per_mille) + (rise * offset + span / 2) / span;
        value.max(1000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_curve_is_normalised_interpolated_and_extended_by_its_last_slope() {
        let curve = BandwidthCurve::from_per_cpu_ns(&[(1, 150.0), (2, 156.0), (4, 180.0)]).unwrap();
        assert_eq!(curve.per_mille(1), 1000);
        assert_eq!(curve.per_mille(2), 1040);
        assert_eq!(curve.per_mille(3), 1120, "halfway between 1040 and 1200");
        assert_eq!(curve.per_mille(4), 1200);
        assert_eq!(curve.per_mille(8), 1520, "80 per mille a CPU past 4, as from 2 to 4");
        assert_eq!(BandwidthCurve::UNSHARED.per_mille(768), 1000);
    }

    #[test]
    fn noise_never_makes_more_cpus_cheaper_and_bad_points_are_refused() {
        let curve = BandwidthCurve::from_per_cpu_ns(&[(1, 150.0), (2, 140.0), (4, 160.0)]).unwrap();
        assert_eq!((curve.per_mille(2), curve.per_mille(4)), (1000, 1067));
        assert_eq!(BandwidthCurve::from_per_cpu_ns(&[]), Err(CurveError::Empty));
        assert_eq!(BandwidthCurve::from_per_cpu_ns(&[(2, 1.0)]), Err(CurveError::NotFromOneCpu));
        assert_eq!(BandwidthCurve::from_per_cpu_ns(&[(1, 1.0), (1, 2.0)]), Err(CurveError::NotAscending { cpus: 1 }));
        assert_eq!(BandwidthCurve::from_per_cpu_ns(&[(1, 1.0), (2, f64::NAN)]), Err(CurveError::BadCost { cpus: 2 }));
        assert_eq!(BandwidthCurve::from_per_cpu_ns(&[(1, 0.0)]), Err(CurveError::BadCost { cpus: 1 }));
    }

    #[test]
    fn a_cited_socket_saturates_where_its_cpus_outrun_it() {
        // 10 GB/s a CPU, 40 GB/s a socket of 16: four CPUs fill it.
        let curve = BandwidthCurve::from_socket_bandwidth(10.0, 40.0, 16);
        assert_eq!((curve.per_mille(1), curve.per_mille(4)), (1000, 1000));
        assert_eq!((curve.per_mille(8), curve.per_mille(16)), (2000, 4000));
        assert_eq!(curve.per_mille(32), 8000, "past the socket's CPUs the share keeps dividing");
    }
}
