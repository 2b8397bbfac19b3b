//! Welch's t-test: whether two samples' means differ, without assuming equal variances.

use crate::stats::mean_and_stddev;

/// The two-sided p-value of Welch's t-test between `a` and `b`; `None` with fewer than two
/// values on either side.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((mean_a, sd_a), (mean_b, sd_b)) = (mean_and_stddev(a), mean_and_stddev(b));
    let (share_a, share_b) = (sd_a * sd_a / a.len() as f64, sd_b * sd_b / b.len() as f64);
    let spread = share_a + share_b;
    if spread == 0.0 {
        return Some(if mean_a == mean_b { 1.0 } else { 0.0 });
    }
    let t = (mean_b - mean_a) / spread.sqrt();
    // Welch-Satterthwaite degrees of freedom.
    let df =
        spread * spread / (share_a * share_a / (a.len() as f64 - 1.0) + share_b * share_b / (b.len() as f64 - 1.0));
    Some(student_t_two_sided(t, df))
}

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom: the regularized incomplete
/// beta function at df / (df + t^2), with parameters df/2 and 1/2.
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    regularized_incomplete_beta(df / (df + t * t), df / 2.0, 0.5)
}

/// I_x(a, b), by its continued fraction (modified Lentz), on the side where it converges
/// fast.
fn regularized_incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let log_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        log_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - log_front.exp() * beta_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of the incomplete beta function, evaluated by Lentz's method.
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let clamp = |value: f64| if value.abs() < TINY { TINY } else { value };
    let mut c = 1.0;
    let mut d = 1.0 / clamp(1.0 - (a + b) * x / (a + 1.0));
    let mut fraction = d;
    for m in 1..=300 {
        let m = m as f64;
        // Even step, then odd step, of the fraction's terms.
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / clamp(1.0 + even * d);
        c = clamp(1.0 + even / c);
        fraction *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / clamp(1.0 + odd * d);
        c = clamp(1.0 + odd / c);
        let step = d * c;
        fraction *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    fraction
}

/// ln Γ(x) for x > 0: Lanczos' approximation (g = 7, nine terms), with the reflection
/// formula below 1/2.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, coefficient) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += coefficient / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, within: f64) -> bool {
        (a - b).abs() <= within
    }

    /// Against closed forms: one degree of freedom is Cauchy's distribution, two have
    /// P(|T| >= t) = 1 - t / sqrt(2 + t^2), and many approach the normal's 5% at 1.96.
    #[test]
    fn the_t_distribution_matches_its_closed_forms() {
        for t in [0.0, 0.3, 1.0, 2.5, 10.0] {
            let cauchy = 1.0 - 2.0 * f64::atan(t) / std::f64::consts::PI;
            assert!(close(student_t_two_sided(t, 1.0), cauchy, 1e-9), "df 1, t {t}");
            let two = 1.0 - t / (2.0 + t * t).sqrt();
            assert!(close(student_t_two_sided(t, 2.0), two, 1e-9), "df 2, t {t}");
        }
        assert!(close(student_t_two_sided(1.959_964, 1e7), 0.05, 1e-5));
        assert!(close(ln_gamma(5.0), (24.0f64).ln(), 1e-12));
        assert!(close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-12));
    }

    /// 1..=5 against 2..=6: t = 1 on 8 degrees of freedom, p = 0.3466 (two-sided).
    #[test]
    fn welch_on_shifted_samples() {
        let p = welch_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert!(close(p, 0.346_594, 1e-5), "{p}");
        assert_eq!(welch_p(&[1.0], &[2.0, 3.0]), None);
        assert_eq!(welch_p(&[2.0, 2.0], &[2.0, 2.0]), Some(1.0));
        assert_eq!(welch_p(&[2.0, 2.0], &[3.0, 3.0]), Some(0.0));
        let (mean, sd) = mean_and_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!(close(mean, 5.0, 1e-12) && close(sd, 2.138_089_935, 1e-8));
    }
}
