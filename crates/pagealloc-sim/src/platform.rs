//! The simulated machine as a `Platform`. Its state lives in a thread-local table on the
//! host thread that runs the simulation (hooks are hot: a thread-local borrow costs a few ns,
//! a mutex ten times more); the platform value is a handle to its slot.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use pagealloc::platform::{LockId, Platform, SharedLine, TasLock};
use pagealloc::types::Pfn;
use serde::Serialize;

use crate::cache_key::{CacheKey, KeyKind};
use crate::cache_set::CacheSet;
use crate::calibration::Calibration;
use crate::dense_table;
use crate::l2_caches::L2Caches;
use crate::metadata_layout::MetadataLayout;
use crate::topology::Topology;
use crate::DeterministicHasher;

/// Up to 256 CPUs per simulation (the seeds' largest machine has 224).
pub const MAX_CPUS: usize = 256;

/// Up to 8 sockets (a line's LLC residency is a byte of socket bits).
pub const MAX_SOCKETS: usize = 8;

#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct CpuSet([u64; MAX_CPUS / 64]);

impl CpuSet {
    fn insert(&mut self, cpu: usize) {
        self.0[cpu / 64] |= 1 << (cpu % 64);
    }
    fn contains(&self, cpu: usize) -> bool {
        self.0[cpu / 64] & (1 << (cpu % 64)) != 0
    }
    fn iter(self) -> impl Iterator<Item = usize> {
        self.0.into_iter().enumerate().flat_map(|(word_index, mut word)| {
            core::iter::from_fn(move || {
                (word != 0).then(|| {
                    let bit = word.trailing_zeros() as usize;
                    word &= word - 1;
                    word_index * 64 + bit
                })
            })
        })
    }
}

/// Coherence state of one shared line (which L2s hold it is the L2s' business).
#[derive(Clone, Copy)]
struct LineState {
    /// Last writer (or first reader); `NO_OWNER` before any touch.
    owner: u16,
    /// Sockets whose LLC may hold the line (set on insertion, cleared on invalidation, not
    /// on eviction): a write probes only these LLCs to invalidate their copies.
    llc_sockets: u8,
}

const NO_OWNER: u16 = u16::MAX;
const _: () = assert!(MAX_CPUS < NO_OWNER as usize);

/// Size of a cache line, the unit shared lines are cached in.
const LINE_BYTES: u32 = 64;

/// Page data is cached a whole page at a time.
const PAGE_BYTES: u32 = pagealloc::types::PAGE_SIZE_BYTES as u32;

impl Default for LineState {
    fn default() -> Self {
        LineState { owner: NO_OWNER, llc_sockets: 0 }
    }
}

/// Coherence state of every line touched: frame-metadata lines in dense tables per zone
/// (there are millions, and a map of that size is the simulator's slowest part), the few
/// other lines in a map.
#[derive(Default)]
struct LineTable {
    frame_lines: Vec<Vec<LineState>>,
    other_lines: HashMap<CacheKey, LineState, BuildHasherDefault<DeterministicHasher>>,
}

impl LineTable {
    /// The state of the line named `key`.
    fn state(&mut self, key: CacheKey) -> &mut LineState {
        match key.kind() {
            KeyKind::FrameLine { zone, line } => {
                if self.frame_lines.len() <= zone {
                    self.frame_lines.resize_with(zone + 1, Vec::new);
                }
                let table = &mut self.frame_lines[zone];
                if table.len() <= line {
                    table.resize_with((line + 1).next_power_of_two(), LineState::default);
                }
                &mut table[line]
            }
            KeyKind::OtherLine => self.other_lines.entry(key).or_default(),
            KeyKind::Page(pfn) => unreachable!("page {pfn} has no line state"),
        }
    }
}

/// A lock as a FIFO server in simulated time.
#[derive(Default)]
struct LockState {
    /// When the lock is next free.
    free_at_ns: u64,
    /// CPU whose cache holds the lock word.
    word_owner: Option<u32>,
    acquired_at_ns: u64,
}

/// Lock statistics of one class of locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LockClassStats {
    pub acquisitions: u64,
    /// Acquisitions that had to wait.
    pub contended: u64,
    pub wait_ns: u64,
    pub hold_ns: u64,
    /// Trylocks refused because the lock was held in simulated time.
    pub try_failures: u64,
}

/// What the cost model charged, summed over CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SimStats {
    pub zone_lock: LockClassStats,
    pub pcp_lock: LockClassStats,
    pub lru_lock: LockClassStats,
    pub workload_lock: LockClassStats,
    /// Touches of shared lines, however served.
    pub line_touches: u64,
    /// Touches of shared lines that another CPU held.
    pub line_transfers: u64,
    pub line_transfer_ns: u64,
    /// Shared-line touches served by the socket's LLC.
    pub line_llc_hits: u64,
    /// Shared-line touches served by memory.
    pub line_misses: u64,
    pub page_touches: u64,
    /// Touches served by the socket's LLC (or another core's L2 there).
    pub page_llc_hits: u64,
    /// Touches served by memory (LLC misses: the seeds' "cache miss rate").
    pub page_misses: u64,
}

struct SimState {
    topology: Topology,
    calibration: Calibration,
    clocks_ns: Vec<u64>,
    current: usize,
    locks: HashMap<LockId, LockState, BuildHasherDefault<DeterministicHasher>>,
    lines: LineTable,
    layout: MetadataLayout,
    /// Private L2 share per CPU: page data and shared lines.
    l2: L2Caches,
    /// Shared LLC per socket.
    llc: Vec<CacheSet>,
    /// Per pfn, 1 + the CPU whose L2 holds the page (one at a time: touches are writes), or
    /// 0: an array, as pages number in the millions.
    l2_owner: Vec<u16>,
    stats: SimStats,
    /// Inside `SimHandle::observe`: hooks charge nothing and change no ownership.
    observing: bool,
}

impl SimState {
    fn lock_class(&mut self, lock: LockId) -> &mut LockClassStats {
        match lock {
            LockId::Zone(_) => &mut self.stats.zone_lock,
            LockId::Pcp { .. } => &mut self.stats.pcp_lock,
            LockId::Lru(_) => &mut self.stats.lru_lock,
            LockId::Workload(_) => &mut self.stats.workload_lock,
        }
    }

    fn transfer_ns(&self, from: u32, to: usize) -> u64 {
        self.calibration.line_transfer_ns(self.topology.distance(from, to as u32))
    }

    /// Takes the lock at the current CPU's time, waiting for the holder if needed; returns
    /// the wait.
    fn acquire(&mut self, lock: LockId) -> u64 {
        let cpu = self.current;
        let now = self.clocks_ns[cpu];
        let state = self.locks.entry(lock).or_default();
        let wait_ns = state.free_at_ns.saturating_sub(now);
        let word_owner = state.word_owner.replace(cpu as u32);
        let mut cost_ns = self.calibration.atomic_rmw_ns;
        if let Some(owner) = word_owner.filter(|&owner| owner as usize != cpu) {
            cost_ns += self.transfer_ns(owner, cpu);
        }
        let acquired_at_ns = now + wait_ns + cost_ns;
        self.locks.get_mut(&lock).expect("inserted above").acquired_at_ns = acquired_at_ns;
        self.clocks_ns[cpu] = acquired_at_ns;
        let class = self.lock_class(lock);
        class.acquisitions += 1;
        if wait_ns > 0 {
            class.contended += 1;
            class.wait_ns += wait_ns;
        }
        wait_ns
    }

    fn try_acquire(&mut self, lock: LockId) -> bool {
        let now = self.clocks_ns[self.current];
        let held = self.locks.get(&lock).is_some_and(|state| state.free_at_ns > now);
        if held {
            self.lock_class(lock).try_failures += 1;
            return false;
        }
        self.acquire(lock);
        true
    }

    fn release(&mut self, lock: LockId) {
        let now = self.clocks_ns[self.current];
        let state = self.locks.entry(lock).or_default();
        state.free_at_ns = now;
        let hold_ns = now.saturating_sub(state.acquired_at_ns);
        self.lock_class(lock).hold_ns += hold_ns;
    }

    /// A touch of a shared line. The line is served from this CPU's L2 if it holds it there,
    /// else from the core that holds it (a transfer by distance), else from the socket's LLC,
    /// else from memory. Lines live in the same byte-weighted caches as page data, so a line
    /// not touched for a while (the metadata of a page that sat in a pageset while the CPU
    /// streamed through other data) has been evicted and costs a miss.
    fn touch_line(&mut self, line: SharedLine, write: bool) {
        let cpu = self.current;
        let key = CacheKey::line(line, self.layout);
        self.stats.line_touches += 1;
        let socket = self.topology.socket(cpu as u32) as usize;
        let held_here = self.l2.touch(cpu, key, LINE_BYTES);
        // Other CPUs that still have the line in their L2. A write drops their copies.
        let mut holders = CpuSet::default();
        if write {
            self.l2.invalidate_others(cpu, key, |other| holders.insert(other));
        } else {
            self.l2.other_holders(cpu, key, |other| holders.insert(other));
        }
        let state = self.lines.state(key);
        // The nearest holder supplies the line (or acknowledges the invalidation); the last
        // writer is preferred when it still has it.
        let owner_holds = state.owner != NO_OWNER && holders.contains(state.owner as usize);
        let supplier = if owner_holds {
            Some(state.owner as u32)
        } else {
            holders
                .iter()
                .min_by_key(|&other| (self.topology.distance(other as u32, cpu as u32), other))
                .map(|c| c as u32)
        };
        // A read of a line held here is local; a write to a line others still hold costs at
        // least an invalidation round trip.
        let transferred_from = if held_here && !write { None } else { supplier };
        if !write {
            if !owner_holds {
                state.owner = cpu as u16;
            }
        } else {
            state.owner = cpu as u16;
            // Other sockets' LLCs drop their copies too.
            let other_sockets = state.llc_sockets & !(1 << socket);
            state.llc_sockets &= 1 << socket;
            for other_socket in (0..self.llc.len()).filter(|&other| other_sockets & (1 << other) != 0) {
                self.llc[other_socket].invalidate(key);
            }
        }
        // Lines reach the LLC on every fetch into an L2; a hit in this CPU's L2 does not
        // refresh the LLC (its copy ages there, as a non-inclusive LLC's would).
        let in_llc = !held_here && {
            state.llc_sockets |= 1 << socket;
            self.llc[socket].touch(key, LINE_BYTES)
        };
        let cost_ns = if let Some(from) = transferred_from {
            // Holders exclude this CPU, so the distance is never SameCpu.
            let cost_ns = self.calibration.line_transfer_ns(self.topology.distance(from, cpu as u32));
            self.stats.line_transfers += 1;
            self.stats.line_transfer_ns += cost_ns;
            cost_ns
        } else if held_here {
            self.calibration.line_local_ns
        } else if in_llc {
            self.stats.line_llc_hits += 1;
            self.calibration.line_llc_ns
        } else {
            self.stats.line_misses += 1;
            self.calibration.line_memory_ns
        };
        self.clocks_ns[cpu] += cost_ns;
    }

    /// A touch is a write (zeroing, copying in) or a read after another CPU's write: either
    /// way the page ends up in this CPU's L2 alone, and in its socket's LLC.
    fn touch_pages(&mut self, pfn: Pfn, pages: u64) {
        let cpu = self.current;
        let socket = self.topology.socket(cpu as u32) as usize;
        let mut cost_ns = 0;
        for page in pfn..pfn + pages {
            self.stats.page_touches += 1;
            let key = CacheKey::page(page);
            let owner_slot = dense_table::slot(&mut self.l2_owner, page as usize);
            let previous_owner = core::mem::replace(owner_slot, cpu as u16 + 1).checked_sub(1);
            if let Some(owner) = previous_owner.map(u32::from).filter(|&owner| owner as usize != cpu) {
                self.l2.invalidate(owner as usize, key);
                let owner_socket = self.topology.socket(owner) as usize;
                if owner_socket != socket {
                    // The other socket's LLC copy is stale after this touch.
                    self.llc[owner_socket].invalidate(key);
                }
            }
            let in_l2 = self.l2.touch(cpu, key, PAGE_BYTES);
            let in_llc = self.llc[socket].touch(key, PAGE_BYTES);
            cost_ns += if in_l2 {
                self.calibration.page_l2_hit_ns
            } else if in_llc {
                self.stats.page_llc_hits += 1;
                self.calibration.page_llc_hit_ns
            } else {
                self.stats.page_misses += 1;
                self.calibration.page_miss_ns
            };
        }
        self.clocks_ns[cpu] += cost_ns;
    }
}

thread_local! {
    static SIMULATIONS: RefCell<Vec<Option<SimState>>> = const { RefCell::new(Vec::new()) };
}

/// The simulated machine. Owned by the allocator it drives; [`SimPlatform::handle`] gives the
/// engine and the workload access to the same state.
pub struct SimPlatform {
    handle: SimHandle,
    /// The host thread whose table holds the state (slots are per thread).
    thread: std::thread::ThreadId,
}

/// Another reference to a simulation's state (not a platform; no ownership).
#[derive(Clone, Copy, Debug)]
pub struct SimHandle {
    slot: usize,
    nr_cpus: usize,
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
        let state = SimState {
            clocks_ns: vec![0; nr_cpus],
            current: 0,
            locks: HashMap::default(),
            lines: LineTable::default(),
            layout,
            l2: L2Caches::new(nr_cpus, topology.l2_share_bytes()),
            llc: (0..topology.sockets).map(|_| CacheSet::new(topology.llc_bytes_per_socket)).collect(),
            l2_owner: Vec::new(),
            stats: SimStats::default(),
            observing: false,
            topology,
            calibration,
        };
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
        SimPlatform { handle: SimHandle { slot, nr_cpus }, thread: std::thread::current().id() }
    }

    pub fn handle(&self) -> SimHandle {
        self.handle
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
    fn with<R>(&self, f: impl FnOnce(&mut SimState) -> R) -> R {
        SIMULATIONS.with(|sims| {
            let mut sims = sims.borrow_mut();
            let state = sims
                .get_mut(self.slot)
                .and_then(Option::as_mut)
                .expect("simulation used from another host thread or after it ended");
            f(state)
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

impl SimPlatform {
    /// Takes a workload-level lock (e.g. a modelled mm lock) on the running CPU: a FIFO server
    /// like the allocator's locks. Returns the wait.
    pub fn workload_lock(&self, id: u16) -> u64 {
        self.handle.with(|state| state.acquire(LockId::Workload(id)))
    }

    pub fn workload_unlock(&self, id: u16) {
        self.handle.with(|state| state.release(LockId::Workload(id)))
    }
}

impl Platform for SimPlatform {
    // The host runs one simulated call at a time, so the real locks are never contended;
    // simulated contention is the hooks' business.
    type RawLock = TasLock;
    type PcpLock = TasLock;

    #[inline]
    fn current_cpu(&self) -> usize {
        self.handle.current_cpu()
    }

    fn nr_cpus(&self) -> usize {
        self.handle.nr_cpus
    }

    fn now_ns(&self) -> u64 {
        self.handle.with(|state| state.clocks_ns[state.current])
    }

    #[inline]
    fn lock_acquire(&self, lock: LockId) -> u64 {
        self.handle.with(|state| if state.observing { 0 } else { state.acquire(lock) })
    }

    #[inline]
    fn lock_try_acquire(&self, lock: LockId) -> bool {
        self.handle.with(|state| state.observing || state.try_acquire(lock))
    }

    #[inline]
    fn lock_release(&self, lock: LockId) {
        self.handle.with(|state| {
            if !state.observing {
                state.release(lock)
            }
        })
    }

    #[inline]
    fn touch_shared(&self, line: SharedLine, write: bool) {
        self.handle.with(|state| {
            if !state.observing {
                state.touch_line(line, write)
            }
        })
    }

    #[inline]
    fn touch_pages(&self, pfn: Pfn, pages: u64) {
        self.handle.with(|state| {
            if !state.observing {
                state.touch_pages(pfn, pages)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(cpus: u32) -> SimPlatform {
        SimPlatform::new(Topology::flat(cpus), Calibration::XEON)
    }

    /// Simulated ns charged to `cpu` for touching `line`.
    fn line_charge(platform: &SimPlatform, cpu: usize, line: SharedLine, write: bool) -> u64 {
        let sim = platform.handle();
        sim.set_cpu(cpu);
        let before = sim.clock_ns(cpu);
        platform.touch_shared(line, write);
        sim.clock_ns(cpu) - before
    }

    #[test]
    fn a_lock_held_until_t_makes_a_later_cpu_wait_until_t() {
        let platform = machine(2);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        sim.set_cpu(0);
        assert_eq!(platform.lock_acquire(LockId::Zone(0)), 0);
        sim.advance(1_000);
        platform.lock_release(LockId::Zone(0));
        let released_at = sim.clock_ns(0);
        assert_eq!(released_at, cal.atomic_rmw_ns + 1_000);
        // CPU 1 asks at time 100: it waits until the release, then pays the RMW and the
        // transfer of the lock word from CPU 0.
        sim.set_cpu(1);
        sim.advance(100);
        assert_eq!(platform.lock_acquire(LockId::Zone(0)), released_at - 100);
        assert_eq!(sim.clock_ns(1), released_at + cal.atomic_rmw_ns + cal.line_same_socket_ns);
        platform.lock_release(LockId::Zone(0));
        let stats = sim.stats();
        assert_eq!((stats.zone_lock.acquisitions, stats.zone_lock.contended), (2, 1));
        assert_eq!(stats.zone_lock.wait_ns, released_at - 100);
        assert_eq!(stats.zone_lock.hold_ns, 1_000);
    }

    #[test]
    fn a_cpu_arriving_after_the_release_does_not_wait_and_trylock_sees_simulated_holds() {
        let platform = machine(2);
        let sim = platform.handle();
        sim.set_cpu(0);
        platform.lock_acquire(LockId::Zone(0));
        sim.advance(500);
        platform.lock_release(LockId::Zone(0));
        sim.set_cpu(1);
        sim.advance(10_000);
        assert_eq!(platform.lock_acquire(LockId::Zone(0)), 0);
        platform.lock_release(LockId::Zone(0));
        // CPU 0 holds a pageset lock until its time 2000; CPU 1 tries at time ~10000: free.
        // Rewind: CPU 1 tries a lock held until later in simulated time.
        sim.set_cpu(0);
        let pcp = LockId::Pcp { zone: 0, cpu: 0 };
        platform.lock_acquire(pcp);
        sim.advance(20_000);
        platform.lock_release(pcp);
        sim.set_cpu(1);
        assert!(!platform.lock_try_acquire(pcp), "held until CPU 0's time ~20500");
        sim.advance(20_000);
        assert!(platform.lock_try_acquire(pcp));
        assert_eq!(sim.stats().pcp_lock.try_failures, 1);
    }

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

    #[test]
    fn an_observer_charges_nothing_and_moves_nothing() {
        let platform = machine(2);
        let sim = platform.handle();
        sim.set_cpu(1);
        let pcp = LockId::Pcp { zone: 0, cpu: 1 };
        platform.lock_acquire(pcp);
        platform.touch_shared(SharedLine::PcpHeader { zone: 0, cpu: 1 }, true);
        platform.lock_release(pcp);
        let (clock_before, stats_before) = (sim.clock_ns(1), sim.stats());
        sim.set_cpu(0);
        sim.observe(|| {
            assert_eq!(platform.lock_acquire(pcp), 0);
            platform.touch_shared(SharedLine::PcpHeader { zone: 0, cpu: 1 }, false);
            platform.touch_pages(7, 4);
            platform.lock_release(pcp);
        });
        assert_eq!(sim.clock_ns(0), 0, "the observer's CPU was charged");
        assert_eq!(sim.stats(), stats_before);
        // CPU 1 still owns its lock word and line: its next use costs what it did before.
        sim.set_cpu(1);
        platform.lock_acquire(pcp);
        platform.touch_shared(SharedLine::PcpHeader { zone: 0, cpu: 1 }, true);
        platform.lock_release(pcp);
        let cal = Calibration::XEON;
        assert_eq!(sim.clock_ns(1) - clock_before, cal.atomic_rmw_ns + cal.line_local_ns);
    }

    #[test]
    fn shared_lines_cost_a_transfer_by_distance() {
        let platform = SimPlatform::new(Topology::SERVER_224, Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = |cpu: usize, write: bool| line_charge(&platform, cpu, SharedLine::ZoneCounters(0), write);
        assert_eq!(charge(0, true), cal.line_memory_ns, "first touch comes from memory");
        assert_eq!(charge(0, true), cal.line_local_ns, "still held");
        assert_eq!(charge(112, false), cal.line_smt_ns, "sibling reads");
        assert_eq!(charge(112, false), cal.line_local_ns, "now shared");
        assert_eq!(charge(1, false), cal.line_same_socket_ns);
        assert_eq!(charge(56, true), cal.line_other_socket_ns, "other socket takes it");
        assert_eq!(charge(0, false), cal.line_other_socket_ns, "and the first CPU lost it");
        assert_eq!(charge(0, true), cal.line_other_socket_ns, "writing invalidates the sharer on the other socket");
        let stats = sim.stats();
        assert_eq!((stats.line_touches, stats.line_transfers), (8, 5));
    }

    #[test]
    fn a_line_evicted_by_page_data_comes_back_from_the_llc_then_from_memory() {
        let topology = Topology::SERVER_128;
        let platform = SimPlatform::new(topology.clone(), Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = || line_charge(&platform, 0, SharedLine::frame_meta(0, 10), true);
        assert_eq!(charge(), cal.line_memory_ns);
        assert_eq!(charge(), cal.line_local_ns);
        // Streaming an L2's worth of page data pushes the line out of the L2, not the LLC.
        let l2_pages = topology.l2_share_bytes() / 4096;
        platform.touch_pages(1_000_000, l2_pages);
        assert_eq!(charge(), cal.line_llc_ns);
        let llc_pages = topology.llc_bytes_per_socket / 4096;
        platform.touch_pages(2_000_000, llc_pages);
        assert_eq!(charge(), cal.line_memory_ns, "and an LLC's worth pushes it out of both");
        let stats = sim.stats();
        assert_eq!((stats.line_llc_hits, stats.line_misses), (1, 2));
    }

    #[test]
    fn a_cpu_that_evicted_a_line_no_longer_counts_as_its_holder() {
        let topology = Topology::SERVER_128;
        let platform = SimPlatform::new(topology.clone(), Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = |cpu: usize, write: bool| line_charge(&platform, cpu, SharedLine::frame_meta(0, 10), write);
        charge(0, true);
        sim.set_cpu(0);
        platform.touch_pages(1_000_000, topology.l2_share_bytes() / 4096);
        assert_eq!(charge(1, false), cal.line_llc_ns, "CPU 0's L2 no longer has it: the LLC does");
        assert_eq!(charge(1, true), cal.line_local_ns, "no other holder to invalidate");
        assert_eq!(sim.stats().line_transfers, 0);
    }

    #[test]
    fn frames_share_a_line_under_our_layout_and_not_under_linuxs() {
        let cal = Calibration::XEON;
        for (layout, neighbour_ns) in
            [(MetadataLayout::Pagealloc, cal.line_local_ns), (MetadataLayout::LinuxStructPage, cal.line_memory_ns)]
        {
            let platform = SimPlatform::with_layout(Topology::flat(1), Calibration::XEON, layout);
            line_charge(&platform, 0, SharedLine::frame_meta(0, 0), true);
            assert_eq!(line_charge(&platform, 0, SharedLine::frame_meta(0, 1), true), neighbour_ns, "{layout:?}");
        }
    }

    #[test]
    fn page_data_moves_between_l2_llc_and_memory() {
        let topology = Topology::SERVER_128;
        let platform = SimPlatform::new(topology.clone(), Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = |cpu: usize, pfn: u64| {
            sim.set_cpu(cpu);
            let before = sim.clock_ns(cpu);
            platform.touch_pages(pfn, 1);
            sim.clock_ns(cpu) - before
        };
        assert_eq!(charge(0, 1000), cal.page_miss_ns, "first touch comes from memory");
        assert_eq!(charge(0, 1000), cal.page_l2_hit_ns, "then it is in CPU 0's L2");
        assert_eq!(charge(1, 1000), cal.page_llc_hit_ns, "CPU 1 on the socket finds it in the LLC");
        assert_eq!(charge(0, 1000), cal.page_llc_hit_ns, "CPU 1's write took it out of CPU 0's L2");
        assert_eq!(charge(32, 1000), cal.page_miss_ns, "the other socket's LLC does not have it");
        assert_eq!(charge(0, 1000), cal.page_miss_ns, "and its write made socket 0's LLC copy stale");
        // A full L2's worth of other pages evicts it from CPU 0's L2, not from the LLC.
        let l2_pages = topology.l2_share_bytes() / 4096;
        sim.set_cpu(0);
        platform.touch_pages(1_000_000, l2_pages);
        assert_eq!(charge(0, 1000), cal.page_llc_hit_ns);
        let stats = sim.stats();
        assert_eq!(stats.page_touches, 7 + l2_pages);
        assert_eq!(stats.page_misses, 3 + l2_pages);
    }
}
