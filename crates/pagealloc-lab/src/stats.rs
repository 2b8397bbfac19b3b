//! The lab's statistics, written once: mean, sample standard deviation, and the median with
//! its extremes.

use serde::Serialize;

/// The mean of `values`; 0 for none.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// The mean and the sample standard deviation (n - 1) of `values`; the deviation is 0 for
/// fewer than two values.
pub fn mean_and_stddev(values: &[f64]) -> (f64, f64) {
    let mean = mean(values);
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let squares: f64 = values.iter().map(|value| (value - mean).powi(2)).sum();
    (mean, (squares / (values.len() as f64 - 1.0)).sqrt())
}

/// A sample's median with its extremes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub min: f64,
    /// The middle value; the mean of the middle two for an even count.
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// Sorts `values` and reads their spread; `None` for none.
    pub fn of(values: &mut [f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let middle = values.len() / 2;
        let median = if values.len() % 2 == 1 { values[middle] } else { (values[middle - 1] + values[middle]) / 2.0 };
        Some(Spread { min: values[0], median, max: values[values.len() - 1] })
    }
}

/// The median of counts as one of them: the upper middle value for an even count; 0 for
/// none.
pub fn median_count(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_deviation() {
        let (mean, sd) = mean_and_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(mean, 5.0);
        assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_and_stddev(&[3.0]), (3.0, 0.0));
        assert_eq!(super::mean(&[]), 0.0);
    }

    #[test]
    fn spread_of_odd_and_even_counts() {
        assert_eq!(Spread::of(&mut [3.0, 1.0, 2.0]), Some(Spread { min: 1.0, median: 2.0, max: 3.0 }));
        assert_eq!(Spread::of(&mut [4.0, 1.0, 2.0, 3.0]), Some(Spread { min: 1.0, median: 2.5, max: 4.0 }));
        assert_eq!(Spread::of(&mut []), None);
        assert_eq!(median_count(vec![4, 1, 3, 2]), 3);
        assert_eq!(median_count(vec![]), 0);
    }
}
