//! `pagelab reproduce`: the chosen experiments' presets run as parallel jobs, each
//! experiment's tables printed and files written as soon as all its presets are in.

use std::path::Path;
use std::sync::{PoisonError, RwLock};

use indicatif::{ProgressBar, ProgressStyle};

use super::experiment::{add_speedups, Experiment, Job, Row};
use super::ordered;
use super::outputs::write_outputs;
use super::registry::{find, EXPERIMENTS};
use super::table::print_tables;

/// Runs experiments (all when `names` is empty), printing tables and writing outputs. Each
/// preset of each experiment is one job; `jobs` of them run at once on host threads, and
/// tables come out in order as experiments complete. Results do not depend on `jobs`.
/// What to run: the experiments (all when empty), `--quick`, the first seed and how many.
pub struct Plan<'a> {
    pub names: &'a [String],
    pub quick: bool,
    pub seed: u64,
    pub seeds: u64,
    /// Print each job's host wall time at the end, slowest first.
    pub timings: bool,
    /// Costs every run takes instead of its seed machine's, on the experiment's own
    /// topology (`--machine`).
    pub machine: Option<crate::machine::SimMachine>,
}

pub fn reproduce(plan: &Plan<'_>, out: &Path, jobs: usize) -> Result<(), String> {
    let &Plan { names, quick, seed, seeds, timings, ref machine } = plan;
    let chosen: Vec<&Experiment> = if names.is_empty() {
        EXPERIMENTS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| find(n).ok_or_else(|| format!("unknown experiment '{n}' (see `pagelab experiments`)")))
            .collect::<Result<_, _>>()?
    };
    // (position in `chosen`, experiment, preset): an experiment named twice runs twice.
    let runs: Vec<(usize, &Experiment, &str)> = chosen
        .iter()
        .enumerate()
        .flat_map(|(position, &experiment)| {
            experiment.presets.iter().map(move |&preset| (position, experiment, preset))
        })
        .collect();
    let bar = ProgressBar::new(runs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .map_err(|e| e.to_string())?
            .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    let mut job_seconds: Vec<(f64, usize)> = Vec::new();
    // Simulations share the host; a real-thread run has it to itself, since its threads are
    // pinned one per CPU and another job beside them would be measured with them.
    let host = RwLock::new(());
    ordered::run_ordered(
        &longest_first(&runs),
        jobs,
        |index| {
            let (_, experiment, preset) = runs[index];
            // A job that panicked poisons nothing the others read.
            let real = experiment.real_threads;
            let _shared = (!real).then(|| host.read().unwrap_or_else(PoisonError::into_inner));
            let _exclusive = real.then(|| host.write().unwrap_or_else(PoisonError::into_inner));
            bar.set_message(format!("{}: {preset}", experiment.name));
            let started = std::time::Instant::now();
            let per_seed = (seed..seed + seeds.max(1))
                .map(|run_seed| {
                    let job = Job { preset, quick, seed: run_seed, machine: machine.as_ref(), bar: &bar };
                    (experiment.run)(&job)
                })
                .collect::<Result<Vec<_>, _>>()?;
            super::seeds::combine(per_seed).map(|rows| (rows, started.elapsed().as_secs_f64()))
        },
        |index, result: Result<(Vec<Row>, f64), String>| -> Result<(), String> {
            let (job_rows, seconds) = result?;
            rows.extend(job_rows);
            job_seconds.push((seconds, index));
            bar.inc(1);
            let (position, experiment, _) = runs[index];
            let last_of_experiment = runs.get(index + 1).map(|next| next.0) != Some(position);
            if last_of_experiment {
                add_speedups(experiment, &mut rows);
                bar.suspend(|| print_tables(experiment, &rows));
                write_outputs(experiment, &rows, (quick, seed, machine.as_ref()), out)?;
                rows.clear();
            }
            Ok(())
        },
    )?;
    super::report_html::write_report(&chosen, out)?;
    bar.finish_with_message(format!("done; JSON, CSV, SVG and report.html in {}", out.display()));
    if timings {
        print_timings(&mut job_seconds, |index| (runs[index].1.name, runs[index].2));
    }
    Ok(())
}

/// The jobs' start order: the experiments whose jobs take longest first (ties in their
/// order), so that no long job is left to run alone at the end. Results come out in job
/// order whatever the start order.
fn longest_first(runs: &[(usize, &Experiment, &str)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| runs[b].1.job_host_s.total_cmp(&runs[a].1.job_host_s));
    order
}

/// Each job's host wall time, slowest first, to stderr (it varies from run to run, so it
/// is kept out of the results).
fn print_timings(job_seconds: &mut [(f64, usize)], job: impl Fn(usize) -> (&'static str, &'static str)) {
    job_seconds.sort_by(|a, b| b.0.total_cmp(&a.0));
    let total: f64 = job_seconds.iter().map(|(seconds, _)| seconds).sum();
    eprintln!("{:>9}  {:<24} preset", "seconds", "experiment");
    for &(seconds, index) in job_seconds.iter() {
        let (experiment, preset) = job(index);
        eprintln!("{seconds:>9.2}  {experiment:<24} {preset}");
    }
    eprintln!("{total:>9.2}  (sum over jobs; they run in parallel)");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_json_byte_for_byte_however_many_jobs() {
        let base = std::env::temp_dir().join(format!("pagelab-determinism-{}", std::process::id()));
        let run = |dir: &str, jobs: usize| {
            let out = base.join(dir);
            let names = ["pcp-unix".to_string(), "highorder-netperf-tcp".to_string()];
            reproduce(
                &Plan { names: &names, quick: true, seed: 3, seeds: 1, timings: false, machine: None },
                &out,
                jobs,
            )
            .unwrap();
            ["pcp-unix.json", "highorder-netperf-tcp.json", "pcp-unix.csv", "pcp-unix.svg"]
                .map(|file| std::fs::read(out.join(file)).unwrap())
        };
        assert_eq!(run("one-job", 1), run("three-jobs", 3));
        std::fs::remove_dir_all(base).ok();
    }

    #[test]
    fn the_longest_jobs_start_first_and_every_job_starts_once() {
        let runs: Vec<(usize, &Experiment, &str)> = EXPERIMENTS
            .iter()
            .enumerate()
            .flat_map(|(position, experiment)| {
                experiment.presets.iter().map(move |&preset| (position, experiment, preset))
            })
            .collect();
        let order = longest_first(&runs);
        let costs: Vec<f64> = order.iter().map(|&index| runs[index].1.job_host_s).collect();
        assert!(costs.windows(2).all(|pair| pair[0] >= pair[1]), "{costs:?}");
        let mut started = order.clone();
        started.sort_unstable();
        assert_eq!(started, (0..runs.len()).collect::<Vec<_>>());
    }

    #[test]
    fn a_quick_experiment_writes_json_and_csv() {
        let out = std::env::temp_dir().join(format!("pagelab-test-{}", std::process::id()));
        let names = ["highorder-trunc".to_string()];
        reproduce(&Plan { names: &names, quick: true, seed: 1, seeds: 1, timings: false, machine: None }, &out, 1)
            .unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("highorder-trunc.json")).unwrap()).unwrap();
        assert_eq!(json["experiment"], "highorder-trunc");
        assert_eq!(json["rows"].as_array().unwrap().len(), 3);
        assert!(std::fs::read_to_string(out.join("highorder-trunc.csv")).unwrap().contains("published,vanilla-5.17"));
        let figure = std::fs::read_to_string(out.join("highorder-trunc.svg")).unwrap();
        assert!(
            figure.starts_with("<svg") && figure.contains("revert-highpcp") && figure.trim_end().ends_with("</svg>")
        );
        // The report holds the experiment's section: its tables, ours then the published
        // one, and the figure itself.
        let report = std::fs::read_to_string(out.join("report.html")).unwrap();
        let section = &report[report.find("<section id=\"highorder-trunc\">").expect("the experiment's section")..];
        let ours = section.find("<table class=\"ours\">").expect("our table");
        let published = section.find("<table class=\"published\">").expect("the published table");
        assert!(ours < published && section.contains("<td>revert-highpcp</td>"));
        assert!(section.contains(figure.trim_end()), "the figure inline");
        assert!(report.starts_with("<!DOCTYPE html>") && report.trim_end().ends_with("</html>"));
        std::fs::remove_dir_all(out).ok();
    }
}
