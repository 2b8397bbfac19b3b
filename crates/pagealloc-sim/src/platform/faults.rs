//! Seeded fault injection: trylocks refused as if contended, and tasks that migrate to
//! another CPU between allocator calls. Both are events the allocator must survive on a real
//! machine but that a deterministic simulation rarely or never produces on its own: a
//! pageset trylock fails only when another CPU holds that lock in simulated time, and a
//! task never leaves its CPU. Faults are off unless [`SimHandle::inject_faults`] turns them
//! on; off, nothing here draws a number or changes a charge, so every result stays as it was.
//!
//! Each kind of fault draws from its own stream, seeded from the run's seed, so a run
//! repeats exactly, and changing one probability leaves the other's pattern alone.

use serde::Serialize;

use crate::rng::SplitMix64;

use super::slots::SimHandle;
use super::state::SimState;

/// Parts per million: the unit of fault probabilities.
pub const PPM: u32 = 1_000_000;

/// What to inject, and how often.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultConfig {
    /// Seeds both streams (trylock refusals, migrations).
    pub seed: u64,
    /// Trylocks of a free lock refused, per million.
    pub trylock_refusal_ppm: u32,
    /// Allocator calls before which the task moves to another CPU, per million.
    pub migration_ppm: u32,
    /// Migrations go to CPUs `0..migration_cpus`: the CPUs that run the workload, so a
    /// migrated task shares their pagesets instead of settling on an idle one.
    pub migration_cpus: usize,
}

/// Faults injected so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    /// Trylocks of a free lock refused.
    pub trylock_refusals: u64,
    /// Tasks moved to another CPU between calls.
    pub migrations: u64,
}

/// One independent SplitMix64 stream per kind of fault.
struct Stream(SplitMix64);

impl Stream {
    /// True with probability `ppm` per million; draws nothing when `ppm` is 0, so a fault
    /// kind left off never advances its stream.
    fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.0.below(PPM as u64) < ppm as u64
    }
}

/// The injector's state, kept in the simulation's state.
pub(super) struct Faults {
    config: FaultConfig,
    trylock: Stream,
    migration: Stream,
    /// Per engine CPU (the task's own timeline, whose clock it is charged on), the CPU the
    /// task runs on now: the id the allocator sees.
    placement: Vec<usize>,
    stats: FaultStats,
}

impl Faults {
    fn new(config: FaultConfig, nr_cpus: usize) -> Faults {
        Faults {
            config,
            trylock: Stream(SplitMix64::new(config.seed ^ 0x7472_796c_6f63_6b00)),
            migration: Stream(SplitMix64::new(config.seed ^ 0x6d69_6772_6174_6500)),
            placement: (0..nr_cpus).collect(),
            stats: FaultStats::default(),
        }
    }
}

impl SimState {
    /// The CPU id the allocator sees: the running task's CPU, which a migration may have
    /// moved away from the engine CPU whose clock pays for the task. Costs stay on the
    /// task's timeline; the allocator then works on the pageset of a CPU it is not "on",
    /// exactly what a stale `current_cpu()` after a real migration does.
    #[inline]
    pub(super) fn allocator_cpu(&self) -> usize {
        match &self.faults {
            None => self.current,
            Some(faults) => faults.placement[self.current],
        }
    }

    /// A trylock of a lock that is free in simulated time: refused by a fault, maybe.
    pub(super) fn refuse_trylock(&mut self) -> bool {
        let Some(faults) = self.faults.as_mut() else { return false };
        let refused = faults.trylock.chance(faults.config.trylock_refusal_ppm);
        faults.stats.trylock_refusals += refused as u64;
        refused
    }

    /// Between two allocator calls of the running task: maybe move it to another CPU.
    fn maybe_migrate(&mut self) {
        let current = self.current;
        let Some(faults) = self.faults.as_mut() else { return };
        let cpus = faults.config.migration_cpus as u64;
        if cpus < 2 || !faults.migration.chance(faults.config.migration_ppm) {
            return;
        }
        let from = faults.placement[current];
        // Any CPU of the range but the one it is on.
        let offset = 1 + faults.migration.0.below(cpus - 1) as usize;
        faults.placement[current] = (from + offset) % cpus as usize;
        faults.stats.migrations += 1;
    }
}

impl SimHandle {
    /// Turns on seeded faults for the rest of the simulation (before any call, for a run
    /// that repeats). Panics if the migration range exceeds the machine.
    pub fn inject_faults(&self, config: FaultConfig) {
        assert!(
            config.migration_cpus <= self.nr_cpus,
            "migrations among {} CPUs of {}",
            config.migration_cpus,
            self.nr_cpus
        );
        assert!(config.trylock_refusal_ppm <= PPM && config.migration_ppm <= PPM, "probabilities above 1");
        self.with(|state| state.faults = Some(Faults::new(config, self.nr_cpus)));
    }

    /// Faults injected so far; `None` when faults are off.
    pub fn fault_stats(&self) -> Option<FaultStats> {
        self.with(|state| state.faults.as_ref().map(|faults| faults.stats))
    }

    /// Marks a point between two allocator calls of the running task, where the task may
    /// migrate (the harness calls it before each call; a no-op when faults are off).
    pub fn between_calls(&self) {
        self.with(SimState::maybe_migrate);
    }

    /// The CPU the running task is on, as the allocator sees it (the running engine CPU
    /// unless a fault migrated the task).
    pub fn task_cpu(&self) -> usize {
        self.with(|state| state.allocator_cpu())
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::{LockId, Platform};

    use super::*;
    use crate::platform::test_machine as machine;

    const PCP: LockId = LockId::Pcp { zone: 0, cpu: 0 };

    fn config(trylock_refusal_ppm: u32, migration_ppm: u32) -> FaultConfig {
        FaultConfig { seed: 11, trylock_refusal_ppm, migration_ppm, migration_cpus: 4 }
    }

    #[test]
    fn off_nothing_is_refused_nothing_moves_and_nothing_is_counted() {
        let platform = machine(4);
        let sim = platform.handle();
        sim.set_cpu(2);
        for _ in 0..1_000 {
            sim.between_calls();
            assert!(platform.lock_try_acquire(PCP));
            platform.lock_release(PCP);
        }
        assert_eq!((platform.current_cpu(), sim.task_cpu(), sim.fault_stats()), (2, 2, None));
    }

    #[test]
    fn a_refused_trylock_fails_on_a_free_lock_and_charges_nothing() {
        let platform = machine(4);
        let sim = platform.handle();
        sim.inject_faults(config(PPM, 0));
        let before = sim.clock_ns(0);
        assert!(!platform.lock_try_acquire(PCP), "free, but refused");
        assert_eq!(sim.clock_ns(0), before);
        assert_eq!(sim.stats().pcp_lock.try_failures, 0, "not a simulated hold");
        // Observers are never refused.
        assert!(sim.observe(|| platform.lock_try_acquire(PCP)));
        sim.inject_faults(config(0, 0));
        assert!(platform.lock_try_acquire(PCP));
        assert_eq!(sim.fault_stats().unwrap(), FaultStats::default());
    }

    #[test]
    fn a_migration_changes_the_cpu_the_allocator_sees_not_the_clock_charged() {
        let platform = machine(8);
        let sim = platform.handle();
        sim.inject_faults(config(0, PPM));
        sim.set_cpu(1);
        let mut seen = Vec::new();
        for _ in 0..100 {
            let from = platform.current_cpu();
            sim.between_calls();
            let to = platform.current_cpu();
            assert!(to != from && to < 4, "{from} -> {to}: another CPU of the run's four");
            seen.push(to);
            assert_eq!(sim.current_cpu(), 1, "the engine still runs CPU 1");
            sim.advance(10);
        }
        assert_eq!(sim.clock_ns(1), 1_000, "charged on the task's own timeline");
        assert!((0..4).all(|cpu| seen.contains(&cpu)));
        // Each engine CPU's task keeps its own placement.
        sim.set_cpu(5);
        assert_eq!(platform.current_cpu(), 5, "CPU 5's task has not moved");
        sim.set_cpu(1);
        assert_eq!(platform.current_cpu(), *seen.last().unwrap());
        assert_eq!(sim.fault_stats().unwrap().migrations, 100);
    }

    /// Refusals and migrations of a seed, as a trace.
    fn trace(seed: u64, migration_ppm: u32) -> (Vec<bool>, Vec<usize>) {
        let platform = machine(4);
        let sim = platform.handle();
        sim.inject_faults(FaultConfig { seed, trylock_refusal_ppm: PPM / 4, migration_ppm, migration_cpus: 4 });
        let mut refusals = Vec::new();
        let mut cpus = Vec::new();
        for _ in 0..200 {
            sim.between_calls();
            cpus.push(platform.current_cpu());
            let taken = platform.lock_try_acquire(PCP);
            if taken {
                platform.lock_release(PCP);
            }
            refusals.push(!taken);
        }
        (refusals, cpus)
    }

    #[test]
    fn a_seed_gives_the_same_faults_and_each_kind_has_its_own_stream() {
        assert_eq!(trace(3, PPM / 10), trace(3, PPM / 10));
        assert_ne!(trace(3, PPM / 10), trace(4, PPM / 10));
        // More migrations, the same refusals.
        assert_eq!(trace(3, PPM / 10).0, trace(3, PPM / 2).0);
        let refused = trace(3, 0).0.iter().filter(|&&r| r).count();
        assert!((25..=75).contains(&refused), "{refused} of 200 at 25%");
    }
}
