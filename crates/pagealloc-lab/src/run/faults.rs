//! `pagelab run --faults`: seeded faults injected through the simulated platform (trylocks
//! refused as if contended, tasks migrating to another CPU between allocator calls) while an
//! observer runs the allocator's invariant checker every few simulated milliseconds. Faults
//! push the allocator down paths a clean run rarely takes (buddy fallbacks when a pageset is
//! busy, frees into another CPU's pageset), and the checker catches any state those paths
//! leave broken close to when they break it. Off by default; off, the run is exactly the
//! run it always was.

use clap::Args;
use serde::Serialize;

use pagealloc::PageAllocator;
use pagealloc_sim::platform::SimHandle;
use pagealloc_sim::{FaultConfig, FaultStats, SimPlatform};

/// Defaults: rare enough that the workload keeps its shape, frequent enough that a
/// millisecond of a run sees hundreds of faults.
pub const DEFAULT_TRYLOCK_PPM: u32 = 20_000;
pub const DEFAULT_MIGRATE_PPM: u32 = 10_000;
pub const DEFAULT_CHECK_EVERY_MS: u64 = 1;

/// Violations kept and printed: the first show the cause; the rest are only counted.
const KEPT_VIOLATIONS: usize = 5;

#[derive(Args, Clone, Copy, Debug)]
pub struct FaultArgs {
    /// Simulator: inject seeded faults (trylock refusals, task migrations between allocator
    /// calls) and check the allocator's invariants every --check-every-ms of simulated
    /// time; exit non-zero on any violation.
    #[arg(long, conflicts_with = "real")]
    pub faults: bool,
    /// With --faults: trylocks of a free lock refused, per million.
    #[arg(long, requires = "faults", default_value_t = DEFAULT_TRYLOCK_PPM,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub fault_trylock_ppm: u32,
    /// With --faults: allocator calls before which the task migrates to another of the
    /// run's CPUs, per million.
    #[arg(long, requires = "faults", default_value_t = DEFAULT_MIGRATE_PPM,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub fault_migrate_ppm: u32,
    /// With --faults: simulated milliseconds between invariant checks.
    #[arg(long, requires = "faults", default_value_t = DEFAULT_CHECK_EVERY_MS,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub check_every_ms: u64,
}

impl Default for FaultArgs {
    /// Faults off, knobs at their command-line defaults.
    fn default() -> Self {
        FaultArgs {
            faults: false,
            fault_trylock_ppm: DEFAULT_TRYLOCK_PPM,
            fault_migrate_ppm: DEFAULT_MIGRATE_PPM,
            check_every_ms: DEFAULT_CHECK_EVERY_MS,
        }
    }
}

impl FaultArgs {
    /// The platform's fault configuration for a run of `cpus` CPUs, if faults are on.
    pub fn config(&self, seed: u64, cpus: usize) -> Option<FaultConfig> {
        self.faults.then_some(FaultConfig {
            seed,
            trylock_refusal_ppm: self.fault_trylock_ppm,
            migration_ppm: self.fault_migrate_ppm,
            migration_cpus: cpus,
        })
    }
}

/// What `--faults` injected and found.
#[derive(Clone, Debug, Serialize)]
pub struct FaultReport {
    pub trylock_ppm: u32,
    pub migrate_ppm: u32,
    pub check_every_ms: u64,
    pub trylock_refusals: u64,
    pub migrations: u64,
    /// Invariant checks run (periodic, plus one at the end of the run and one after idling).
    pub checks: u64,
    pub violations: u64,
    /// The first violations, with the simulated time they were found at.
    pub first_violations: Vec<String>,
}

impl FaultReport {
    pub fn print_table(&self) {
        println!(
            "  faults: {} trylock refusals ({} ppm), {} migrations ({} ppm); {} invariant checks (every {} ms), {} violations",
            self.trylock_refusals,
            self.trylock_ppm,
            self.migrations,
            self.migrate_ppm,
            self.checks,
            self.check_every_ms,
            self.violations
        );
        for violation in &self.first_violations {
            println!("    violation {violation}");
        }
    }

    /// Any violation fails the run (after its report is printed).
    pub fn verdict(&self) -> Result<(), String> {
        match self.first_violations.first() {
            None => Ok(()),
            Some(first) => Err(format!("{} invariant violations under --faults; first {first}", self.violations)),
        }
    }
}

/// A check of the allocator: the invariant checker, or a planted one in tests.
pub type CheckFn = fn(&PageAllocator<SimPlatform>) -> Result<(), String>;

/// The allocator's own invariant checker.
pub fn check_invariants(allocator: &PageAllocator<SimPlatform>) -> Result<(), String> {
    allocator.check_invariants().map(|_| ()).map_err(|violation| violation.to_string())
}

/// Runs a check every period of simulated time as an outside observer: it charges no time,
/// moves no line, and the zone-lock acquisitions it makes are counted so that the report
/// can leave them out. Results are those of the run without the observer.
pub struct InvariantObserver {
    period_ns: u64,
    next_ns: u64,
    check: CheckFn,
    checks: u64,
    violations: u64,
    first_violations: Vec<String>,
    zone_lock_acquisitions: u64,
}

impl InvariantObserver {
    pub fn new(check_every_ms: u64, check: CheckFn) -> InvariantObserver {
        let period_ns = check_every_ms * 1_000_000;
        InvariantObserver {
            period_ns,
            next_ns: period_ns,
            check,
            checks: 0,
            violations: 0,
            first_violations: Vec::new(),
            zone_lock_acquisitions: 0,
        }
    }

    /// Checks if a period ended by `now_ns`, the earliest CPU clock: every call before it has
    /// completed, so the allocator is at rest.
    pub fn maybe_check(&mut self, allocator: &PageAllocator<SimPlatform>, sim: SimHandle, now_ns: u64) {
        if now_ns >= self.next_ns {
            self.check_now(allocator, sim, now_ns);
            // Skip periods a long step jumped over rather than bunching checks.
            self.next_ns = (now_ns / self.period_ns + 1) * self.period_ns;
        }
    }

    /// Checks now, whatever the schedule (the end of a run).
    pub fn check_now(&mut self, allocator: &PageAllocator<SimPlatform>, sim: SimHandle, now_ns: u64) {
        let before = allocator.counters().zone_lock_stats().acquisitions;
        let result = sim.observe(|| (self.check)(allocator));
        self.zone_lock_acquisitions += allocator.counters().zone_lock_stats().acquisitions - before;
        self.checks += 1;
        if let Err(violation) = result {
            self.violations += 1;
            if self.first_violations.len() < KEPT_VIOLATIONS {
                self.first_violations.push(format!("at {:.3} ms: {violation}", now_ns as f64 / 1e6));
            }
        }
    }

    /// Zone-lock acquisitions made by the checks so far.
    pub fn zone_lock_acquisitions(&self) -> u64 {
        self.zone_lock_acquisitions
    }

    /// The report of a run with these faults.
    pub fn report(self, args: &FaultArgs, injected: FaultStats) -> FaultReport {
        FaultReport {
            trylock_ppm: args.fault_trylock_ppm,
            migrate_ppm: args.fault_migrate_ppm,
            check_every_ms: args.check_every_ms,
            trylock_refusals: injected.trylock_refusals,
            migrations: injected.migrations,
            checks: self.checks,
            violations: self.violations,
            first_violations: self.first_violations,
        }
    }
}

#[cfg(test)]
mod tests;
