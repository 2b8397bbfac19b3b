//! `pagelab calibrate --check`: the simulator, given this host's profile, predicts the host's
//! real kernel on workloads the profile does not measure, and the real kernel is then
//! measured on them: page_fault1 at 1, 2, 4, ... every CPU of the host (processes, threads),
//! a 2-CPU AF_UNIX pair at 4 KiB and 64 KiB, and process churn on 2 CPUs. What each takes as
//! input is in docs/simulator.md ("Self-prediction"): page_fault1 at 1 task is the profile's
//! own loop, more tasks share only its workload; AF_UNIX shares its one-thread loop and the
//! CPU pair's ping-pongs; the churn shares none. A prediction more than `BAND` off fails the
//! check.

use std::path::Path;

use crate::calibrate::{huge_faults, two_cpu, CalibrateArgs};
use crate::machine::profile::{MachineProfile, Measurement};

/// The largest accepted |prediction / measurement - 1|.
pub const BAND: f64 = 0.15;

/// One workload: the simulator's prediction and the real kernel's measurement.
#[derive(Clone, Debug)]
pub struct CheckRow {
    pub workload: String,
    pub unit: &'static str,
    pub predicted: f64,
    pub measured: Measurement,
}

impl CheckRow {
    pub fn error(&self) -> f64 {
        self.predicted / self.measured.value - 1.0
    }

    pub fn within_band(&self) -> bool {
        // A hair of slack for the division: 85 against 100 is on the band, not outside it.
        self.error().abs() <= BAND + 1e-9
    }
}

/// The preset whose kernel release's fault path matches the host's: `mainline` from 6.4
/// (per-VMA locks), else `highpcp-full` (5.18: the mmap_sem per fault).
pub fn preset_for_host(release: &str) -> &'static str {
    let mut numbers = release.split(|c: char| !c.is_ascii_digit()).filter_map(|part| part.parse::<u16>().ok());
    let version = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    if version >= (6, 4) {
        "mainline"
    } else {
        "highpcp-full"
    }
}

/// The simulator's rate (work per second) for `pagelab run` with `words` under `preset`, on
/// `profile`.
fn predict(profile: &Path, preset: &str, words: &[&str]) -> Result<f64, String> {
    let profile = profile.to_str().ok_or("the profile's path is not UTF-8")?;
    let machine = ["--machine", profile, "--preset", preset];
    let all: Vec<&str> = ["run"].iter().chain(words).chain(&machine).copied().collect();
    let args = crate::run::RunArgs::try_parse_words(&all)?;
    let workload = args.workload()?;
    Ok(crate::run::run_sim(workload.as_ref(), &args)?.work_per_sec)
}

/// The two CPUs the 2-CPU workloads run on: the profile's first two.
fn two_cpus(profile: &MachineProfile) -> Result<(usize, usize), String> {
    match profile.host.cpus.as_slice() {
        [first, second, ..] => Ok((first.cpu, second.cpu)),
        _ => Err("--check needs a host with two CPUs".into()),
    }
}

/// Predicts and measures every workload of the check, `repeats` real runs each.
pub fn check(path: &Path, repeats: usize, quick: bool) -> Result<Vec<CheckRow>, String> {
    let profile = MachineProfile::read(path)?;
    let (a, b) = two_cpus(&profile)?;
    let preset = preset_for_host(&profile.host.kernel);
    println!("host kernel {}: predicting with the {preset} preset", profile.host.kernel);
    let rounds = if quick { 2 } else { 10 };
    let mut rows = Vec::new();
    let host_cpus: Vec<usize> = profile.host.cpus.iter().map(|place| place.cpu).collect();
    for (mode, tasks, threads) in [("process", "processes", false), ("thread", "threads", true)] {
        for count in crate::machine::profile::Curve::cpu_series(host_cpus.len() as u32) {
            let cpus = &host_cpus[..count as usize];
            let words = ["page_fault1", "--cpus", &count.to_string(), "--mode", mode, "--duration-ms", "500"];
            let predicted = predict(path, preset, &words)?;
            let measured = two_cpu::page_fault1_tasks(cpus, threads, rounds, repeats)?;
            let workload = format!("page_fault1, {count} {tasks}");
            rows.push(CheckRow { workload, unit: "faults/s", predicted, measured });
        }
    }
    for count in crate::machine::profile::Curve::cpu_series(host_cpus.len() as u32) {
        let cpus = &host_cpus[..count as usize];
        let words =
            ["page_fault1", "--order", "9", "--cpus", &count.to_string(), "--mode", "thread", "--duration-ms", "500"];
        match huge_faults::huge_page_fault1(cpus, rounds, repeats) {
            Ok(measured) => {
                let predicted = predict(path, preset, &words)?;
                let workload = format!("page_fault1 huge pages, {count} threads");
                rows.push(CheckRow { workload, unit: "faults/s", predicted, measured });
            }
            Err(why) => println!("page_fault1 in huge pages at {count} threads: skipped, {why}"),
        }
    }
    let messages = if quick { 20_000 } else { 200_000 };
    for bytes in [4096usize, 65_536] {
        let size = bytes.to_string();
        let predicted =
            predict(path, preset, &["unix-pairs", "--cpus", "2", "--message-bytes", &size, "--duration-ms", "100"])?;
        let measured = two_cpu::unix_pair((a, b), bytes, messages, repeats)?;
        let workload = format!("AF_UNIX pair, {} KiB messages", bytes >> 10);
        rows.push(CheckRow { workload, unit: "messages/s", predicted, measured });
    }
    if thp_always() {
        println!(
            "process churn: skipped, transparent huge pages are `always` here (dd's buffer would fault huge pages)"
        );
    } else {
        let processes = if quick { 20 } else { 100 };
        let predicted = predict_churn(path, preset, processes)?;
        let measured = two_cpu::process_churn(&[a, b], processes, repeats)?;
        rows.push(CheckRow { workload: "process churn, 2 CPUs".into(), unit: "processes/s", predicted, measured });
    }
    Ok(rows)
}

/// Whether anonymous memory gets transparent huge pages without asking.
fn thp_always() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").is_ok_and(|text| text.contains("[always]"))
}

/// The simulator's processes per second for [`two_cpu::process_churn`]: kbuild's process
/// model with `processes` a CPU, each spawning (`process_spawn_ns`, from `/bin/true`),
/// faulting its 4 MiB buffer in (the fault path from page_fault1 at 1 task, a page zeroed,
/// then written again by the read from the L2), and exiting. No input is measured on this
/// workload: its inputs come from other loops.
fn predict_churn(profile: &Path, preset: &str, processes: usize) -> Result<f64, String> {
    let profile = profile.to_str().ok_or("the profile's path is not UTF-8")?;
    let words = ["run", "kbuild", "--cpus", "2", "--duration-ms", "60000", "--machine", profile, "--preset", preset];
    let args = crate::run::RunArgs::try_parse_words(&words)?;
    let machine = args.sim_machine();
    let workload = crate::workload::Kbuild {
        processes_per_cpu: processes as u64,
        min_faults: two_cpu::CHURN_PAGES,
        max_faults: two_cpu::CHURN_PAGES,
        compute_per_fault_ns: machine.kernel.fault_ns + machine.calibration.page_l2_hit_ns,
        file_fault_pct: 0,
        page_cache_pages_per_cpu: 0,
        migrate_pct: 0,
        ..crate::workload::Kbuild::default()
    }
    .with_costs(&machine.kernel);
    Ok(crate::run::run_sim(&workload, &args)?.work_per_sec)
}

/// The table `--check` prints.
pub fn table(rows: &[CheckRow]) -> String {
    let mut text = format!(
        "{:<34} {:>12} {:>12} {:>8} {:>7}  {}\n",
        "workload", "predicted", "measured", "error", "spread", "unit"
    );
    for row in rows {
        text += &format!(
            "{:<34} {:>12.0} {:>12.0} {:>+7.1}% {:>6.0}%  {}{}\n",
            row.workload,
            row.predicted,
            row.measured.value,
            row.error() * 100.0,
            row.measured.spread() * 100.0,
            row.unit,
            if row.within_band() { "" } else { "  OUTSIDE THE BAND" }
        );
    }
    text
}

/// `pagelab calibrate --check`: predicts from the profile, measures, prints both; exits 1 when
/// a prediction falls outside the band.
pub fn run(args: &CalibrateArgs) -> Result<(), String> {
    let rows = check(&args.out, args.repeats, args.quick)?;
    print!("{}", table(&rows));
    // The host may have moved since its profile: measured after the workloads, not used.
    let profile = MachineProfile::read(&args.out)?;
    let drifts = crate::calibrate::drift::measure(&profile, two_cpus(&profile)?, args.repeats, args.quick)?;
    print!("{}", crate::calibrate::drift::table(&drifts));
    std::io::Write::flush(&mut std::io::stdout()).map_err(|error| error.to_string())?;
    let outside = rows.iter().filter(|row| !row.within_band()).count();
    if outside > 0 {
        // Exit 1, as a failed check; 2 stays for errors.
        eprintln!("pagelab: {outside} of {} predictions outside +-{:.0}%", rows.len(), BAND * 100.0);
        std::process::exit(1);
    }
    println!("every prediction within +-{:.0}%", BAND * 100.0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(predicted: f64, measured: f64) -> CheckRow {
        let measured = Measurement::from_samples(vec![measured], "faults/s", "test");
        CheckRow { workload: "w".into(), unit: "faults/s", predicted, measured }
    }

    #[test]
    fn the_host_kernel_picks_the_fault_path_model() {
        assert_eq!(preset_for_host("6.18.44-fc-v657"), "mainline");
        assert_eq!(preset_for_host("6.4.0"), "mainline");
        assert_eq!(preset_for_host("6.1.90-generic"), "highpcp-full");
        assert_eq!(preset_for_host("4.18.0-553.el8"), "highpcp-full");
        assert_eq!(preset_for_host("unknown"), "highpcp-full");
    }

    #[test]
    fn the_band_is_fifteen_percent_either_way() {
        assert!(row(115.0, 100.0).within_band());
        assert!(row(85.0, 100.0).within_band());
        assert!(!row(116.0, 100.0).within_band());
        assert!(!row(84.0, 100.0).within_band());
        assert!(table(&[row(200.0, 100.0)]).contains("OUTSIDE THE BAND"));
    }
}
