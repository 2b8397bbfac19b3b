//! Where simulations live: a thread-local table of slots on the host thread that runs them
//! (hooks are hot: a thread-local borrow costs a few ns, a mutex ten times more). A
//! [`SimPlatform`] owns a slot; a [`SimHandle`] is another reference to it.

use std::cell::RefCell;

use super::state::SimState;
use super::stats::SimStats;
use super::{MAX_CPUS, MAX_LLCS, MAX_SOCKETS};
use crate::calibration::Calibration;
use crate::metadata_layout::MetadataLayout;
use crate::topology::Topology;

/// Ids of simulations, unique in the process.
static NEXT_SIMULATION_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    static SIMULATIONS: RefCell<Vec<Option<SimState>>> = const { RefCell::new(Vec::new()) };
}

/// The simulated machine. Owned by the allocator it drives; [`SimPlatform::handle`] gives the
/// engine and the workload access to the same state.
pub struct SimPlatform {
    pub(super) handle: SimHandle,
    /// The host thread whose table holds the state (slots are per thread).
    thread: std::thread::ThreadId,
}

/// Another reference to a simulation's state (not a platform; no ownership).
#[derive(Clone, Copy, Debug)]
pub struct SimHandle {
    slot: usize,
    /// The simulation's id; the slot must still hold it.
    id: u64,
    pub(super) nr_cpus: usize,
}

impl SimPlatform {
    /// A machine with `topology`'s CPUs, costs from `calibration`, all clocks at 0.
    pub fn new(topology: Topology, calibration: Calibration) -> SimPlatform {
        SimPlatform::with_layout(topology, calibration, MetadataLayout::Pagealloc)
    }

    /// A machine that charges frame-metadata lines as `layout` places them.
    pub fn with_layout(topology: Topology, calibration: Calibration, layout: MetadataLayout) -> SimPlatform {
        let nr_cpus = topology.cpus() as usize;
        assert!((1..=MAX_CPUS).contains(&nr_cpus), "1..={MAX_CPUS} CPUs supported, {nr_cpus} asked");
        assert!((1..=MAX_SOCKETS).contains(&(topology.sockets as usize)), "1..={MAX_SOCKETS} sockets supported");
        assert!((1..=MAX_LLCS).contains(&(topology.llcs() as usize)), "1..={MAX_LLCS} LLC instances supported");
        let id = NEXT_SIMULATION_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = SimState { id, ..SimState::new(topology, calibration, layout) };
        let slot = SIMULATIONS.with(|sims| {
            let mut sims = sims.borrow_mut();
            match sims.iter().position(Option::is_none) {
                Some(free) => {
                    sims[free] = Some(state);
                    free
                }
                None => {
                    sims.push(Some(state));
                    sims.len() - 1
                }
            }
        });
        SimPlatform { handle: SimHandle { slot, id, nr_cpus }, thread: std::thread::current().id() }
    }

    pub fn handle(&self) -> SimHandle {
        self.handle
    }

    /// Sizes the simulator's tables indexed by pfn or line number for an allocator whose
    /// zones span `zone_spans` (zone `i` the `i`-th), before it is built: each is then one
    /// zeroed allocation, mapped as it is used, not one grown and copied as touches reach
    /// further. Results do not depend on it.
    pub fn reserve_for_zones(&self, zone_spans: &[core::ops::Range<pagealloc::types::Pfn>]) {
        let sizes = crate::table_sizes::TableSizes::for_zones(zone_spans, self.handle.metadata_layout());
        self.handle.with(|state| state.reserve(&sizes));
    }
}

impl Drop for SimPlatform {
    fn drop(&mut self) {
        // A simulation dropped on another thread leaves its slot until its own thread ends:
        // the same slot number on this thread belongs to another simulation, if any.
        if std::thread::current().id() != self.thread {
            return;
        }
        let _ = SIMULATIONS.try_with(|sims| {
            if let Some(slot) = sims.borrow_mut().get_mut(self.handle.slot) {
                *slot = None;
            }
        });
    }
}

impl SimHandle {
    #[inline]
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut SimState) -> R) -> R {
        SIMULATIONS.with(|sims| {
            let mut sims = sims.borrow_mut();
            // Slots are per host thread: on another thread this slot is empty or holds a
            // different simulation. Either way, stop rather than run the wrong machine.
            match sims.get_mut(self.slot).and_then(Option::as_mut) {
                Some(state) if state.id == self.id => f(state),
                Some(state) => panic!(
                    "simulation {} used from a host thread whose slot {} holds simulation {}",
                    self.id, self.slot, state.id
                ),
                None => panic!("simulation {} used from another host thread or after it ended", self.id),
            }
        })
    }

    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// Makes `cpu` the one running.
    pub fn set_cpu(&self, cpu: usize) {
        assert!(cpu < self.nr_cpus);
        self.with(|state| state.current = cpu);
    }

    pub fn current_cpu(&self) -> usize {
        self.with(|state| state.current)
    }

    pub fn clock_ns(&self, cpu: usize) -> u64 {
        self.with(|state| state.clocks_ns[cpu])
    }

    /// Runs `f` as an outside observer (the harness sampling pageset sizes, statistics):
    /// the allocator's hooks charge no time, queue on no lock and move no line or page, so
    /// measuring does not perturb the machine measured.
    pub fn observe<R>(&self, f: impl FnOnce() -> R) -> R {
        let was_observing = self.with(|state| core::mem::replace(&mut state.observing, true));
        let result = f();
        self.with(|state| state.observing = was_observing);
        result
    }

    /// Charges `ns` of computation to the running CPU.
    pub fn advance(&self, ns: u64) {
        self.with(|state| {
            let cpu = state.current;
            state.clocks_ns[cpu] += ns;
        });
    }

    /// Moves an idle CPU's clock forward to `ns` (it slept until then).
    pub fn idle_until(&self, cpu: usize, ns: u64) {
        self.with(|state| state.clocks_ns[cpu] = state.clocks_ns[cpu].max(ns));
    }

    pub fn stats(&self) -> SimStats {
        self.with(|state| state.stats.clone())
    }

    pub fn topology(&self) -> Topology {
        self.with(|state| state.topology.clone())
    }

    pub fn calibration(&self) -> Calibration {
        self.with(|state| state.calibration.clone())
    }

    pub fn metadata_layout(&self) -> MetadataLayout {
        self.with(|state| state.layout)
    }

    /// Entries (pages of data and shared lines) resident in `cpu`'s L2 share.
    pub fn l2_resident_pages(&self, cpu: usize) -> usize {
        self.with(|state| state.l2.len(cpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::test_machine as machine;

    #[test]
    fn dropping_a_simulation_on_another_thread_leaves_that_threads_simulations_alone() {
        // Fresh threads: each simulation takes slot 0 of its own thread's table.
        std::thread::spawn(|| {
            let here = machine(2);
            let elsewhere = std::thread::spawn(|| machine(3)).join().unwrap();
            assert_eq!((here.handle().slot, elsewhere.handle().slot), (0, 0));
            drop(elsewhere);
            here.handle().set_cpu(1);
            assert_eq!(here.handle().current_cpu(), 1, "this thread's simulation is still there");
        })
        .join()
        .unwrap();
    }
    /// A handle taken to another host thread, where a different simulation holds the same
    /// slot number, must not drive that simulation (it silently did).
    #[test]
    fn a_handle_on_another_thread_never_reaches_that_threads_simulation() {
        let here = SimPlatform::new(Topology::flat(2), Calibration::XEON);
        let handle = here.handle();
        let outcome = std::thread::spawn(move || {
            let there = SimPlatform::new(Topology::flat(4), Calibration::XEON);
            assert_eq!(there.handle().slot, handle.slot, "the same slot number on that thread");
            there.handle().set_cpu(3);
            std::panic::catch_unwind(|| handle.current_cpu())
                .map_err(|panic| panic.downcast_ref::<String>().cloned().unwrap_or_default())
        })
        .join()
        .unwrap();
        let message = outcome.expect_err("the foreign handle must not answer");
        assert!(message.contains("holds simulation"), "{message}");
        assert_eq!(handle.current_cpu(), 0, "at home the handle still works");
    }
}
