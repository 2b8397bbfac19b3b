//! `pagelab run kbuild`'s workload parameters. Each defaults to the workload's own value
//! (`Kbuild::default()`, docs/experiments/pcp-kbuild.md says where each comes from), so that
//! any of them can be swept: `pagelab sweep kbuild --param file-fault-pct=10,30,50`.

use crate::workload::Kbuild;

#[derive(clap::Args, Clone, Debug, Default)]
pub struct KbuildArgs {
    /// kbuild: processes each CPU runs (default 40).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub processes_per_cpu: Option<u64>,
    /// kbuild: fewest page faults of a process (default 200).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub min_faults: Option<u64>,
    /// kbuild: most page faults of a process (default 2,000); each process draws uniformly
    /// between the two.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_faults: Option<u64>,
    /// kbuild: compile work between faults, ns (default 28,000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    pub compute_per_fault_ns: Option<u64>,
    /// kbuild: faults that are page cache, percent (default 30).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub file_fault_pct: Option<u64>,
    /// kbuild: page cache a CPU keeps before its oldest pages go (default 4,096).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1 << 32))]
    pub page_cache_pages_per_cpu: Option<u64>,
    /// kbuild: processes that exit on another CPU, percent (default 20).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub migrate_pct: Option<u64>,
}

impl KbuildArgs {
    /// The workload with every parameter given here in place of `base`'s; fewest faults
    /// above most is an error.
    pub fn apply(&self, base: Kbuild) -> Result<Kbuild, String> {
        let workload = Kbuild {
            processes_per_cpu: self.processes_per_cpu.unwrap_or(base.processes_per_cpu),
            min_faults: self.min_faults.unwrap_or(base.min_faults),
            max_faults: self.max_faults.unwrap_or(base.max_faults),
            compute_per_fault_ns: self.compute_per_fault_ns.unwrap_or(base.compute_per_fault_ns),
            file_fault_pct: self.file_fault_pct.unwrap_or(base.file_fault_pct),
            page_cache_pages_per_cpu: self.page_cache_pages_per_cpu.unwrap_or(base.page_cache_pages_per_cpu),
            migrate_pct: self.migrate_pct.unwrap_or(base.migrate_pct),
            ..base
        };
        if workload.min_faults > workload.max_faults {
            return Err(format!("--min-faults {} is above --max-faults {}", workload.min_faults, workload.max_faults));
        }
        Ok(workload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_parameters_keep_the_workloads_and_crossed_fault_bounds_are_refused() {
        let defaults = Kbuild::default();
        let kept = KbuildArgs::default().apply(Kbuild::default()).unwrap();
        assert_eq!((kept.min_faults, kept.max_faults, kept.file_fault_pct), (200, 2_000, defaults.file_fault_pct));
        let set = KbuildArgs { file_fault_pct: Some(50), migrate_pct: Some(0), ..KbuildArgs::default() };
        let changed = set.apply(Kbuild::default()).unwrap();
        assert_eq!((changed.file_fault_pct, changed.migrate_pct), (50, 0));
        let crossed = KbuildArgs { min_faults: Some(3_000), ..KbuildArgs::default() };
        assert!(crossed.apply(Kbuild::default()).unwrap_err().contains("above --max-faults 2000"));
    }
}
