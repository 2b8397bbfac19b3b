//! `pagelab compare A.json B.json`: each metric's mean and standard deviation over seeds
//! in both files, the change from A to B in %, and Welch's t-test p-value, in the manner of
//! mmtests' compare-kernels. `--fail-on-regression PCT` makes a significant change for the
//! worse beyond PCT% exit 1, for CI.

mod samples;
mod stats;

use std::path::PathBuf;

use clap::Args;

use samples::Sample;

/// Below this p-value a change is marked significant.
const SIGNIFICANCE: f64 = 0.05;

/// Metrics where more is better; the rest of the directed ones are better lower.
const HIGHER_IS_BETTER: [&str; 2] = ["work_per_sec", "work_units"];
const LOWER_IS_BETTER: [&str; 5] =
    ["elapsed_s", "lock_contend_pct", "zone_lock.wait_ns", "zone_lock.contended", "out_of_memory"];

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline: a sweep's results, or one run's JSON report.
    pub a: PathBuf,
    /// The candidate, of the same configurations.
    pub b: PathBuf,
    /// Exit 1 when a metric with a direction (more work per second, less time, less lock
    /// contention) changes for the worse by more than PCT %, significantly (p < 0.05).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub fail_on_regression: Option<f64>,
}

fn parse_pct(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|pct| pct.is_finite() && *pct >= 0.0)
        .ok_or_else(|| format!("`{text}` is not a percentage >= 0"))
}

pub fn compare(args: &CompareArgs) -> Result<(), String> {
    let (a, b) = (samples::read(&args.a)?, samples::read(&args.b)?);
    let mut regressions = Vec::new();
    let mut compared = 0;
    for (configuration, policies_a) in &a {
        let Some(policies_b) = b.get(configuration) else { continue };
        for (label_a, sample_a) in policies_a {
            for (label_b, sample_b) in policies_b {
                println!("{configuration}");
                println!("  A: {label_a} ({} runs)   B: {label_b} ({} runs)", sample_a.runs, sample_b.runs);
                regressions.extend(print_metrics(sample_a, sample_b, args.fail_on_regression));
                compared += 1;
            }
        }
    }
    if compared == 0 {
        return Err(format!("{} and {} share no configuration", args.a.display(), args.b.display()));
    }
    if !regressions.is_empty() {
        println!("regressions beyond {}%: {}", args.fail_on_regression.unwrap_or(0.0), regressions.join(", "));
        std::process::exit(1);
    }
    Ok(())
}

/// One line per metric both samples have; returns the metrics that regressed beyond
/// `limit_pct`, significantly.
fn print_metrics(a: &Sample, b: &Sample, limit_pct: Option<f64>) -> Vec<String> {
    println!("  {:<28} {:>16} {:>10} {:>16} {:>10} {:>9}  p", "metric", "mean A", "sd A", "mean B", "sd B", "change");
    let mut regressions = Vec::new();
    for (metric, values_a) in &a.metrics {
        let Some(values_b) = b.metrics.get(metric) else { continue };
        let ((mean_a, sd_a), (mean_b, sd_b)) =
            (crate::stats::mean_and_stddev(values_a), crate::stats::mean_and_stddev(values_b));
        let change_pct = if mean_a == 0.0 { 0.0 } else { (mean_b - mean_a) * 100.0 / mean_a.abs() };
        let p = stats::welch_p(values_a, values_b);
        let significant = p.is_some_and(|p| p < SIGNIFICANCE);
        let mark = if significant { "*" } else { " " };
        let p_text = p.map_or("n/a".to_string(), |p| format!("{p:.4}"));
        println!(
            "  {metric:<28} {mean_a:>16.4} {sd_a:>10.4} {mean_b:>16.4} {sd_b:>10.4} {change_pct:>+8.2}%{mark} {p_text}"
        );
        let worse_pct = if HIGHER_IS_BETTER.contains(&metric.as_str()) {
            -change_pct
        } else if LOWER_IS_BETTER.contains(&metric.as_str()) {
            change_pct
        } else {
            continue;
        };
        if limit_pct.is_some_and(|limit| significant && worse_pct > limit) {
            regressions.push(format!("{metric} {change_pct:+.2}%"));
        }
    }
    regressions
}
