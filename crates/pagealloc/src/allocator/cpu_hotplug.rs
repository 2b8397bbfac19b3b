//! CPUs going offline and coming back, and which CPU runs each node's background work
//! (kswapd, kcompactd) meanwhile. Linux binds a node's kswapd to the node's CPUs; when they
//! all go offline the scheduler runs it on another CPU. Here one online CPU's periodic work
//! stands in for a node with no online CPU of its own (a memory-only node always): a CPU
//! of the same described node first (a sibling arena's), else the nearest node's, chosen
//! by a fixed order so that every run of a harness picks the same one.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};

use super::{PageAllocator, OWN_CPUS};
use crate::meta::{MetaArena, MetaArenaFull, MetaSlice};
use crate::platform::Platform;

/// Which CPUs are online, and whether some node's work runs on a CPU not its own.
pub(crate) struct OnlineCpus {
    online: MetaSlice<AtomicBool>,
    /// Bumped by every change of `online`: an assignment made while the mask changed is
    /// made again.
    generation: AtomicU64,
    /// Some node's background work is run by a stand-in ([`super::Node::background_cpu`]).
    has_stand_ins: AtomicBool,
}

impl OnlineCpus {
    /// `nr_cpus` CPUs, all online.
    pub(crate) fn new(nr_cpus: usize, arena: Option<&mut MetaArena>) -> Result<OnlineCpus, MetaArenaFull> {
        Ok(OnlineCpus {
            online: MetaSlice::new(nr_cpus, arena, |_| AtomicBool::new(true))?,
            generation: AtomicU64::new(0),
            has_stand_ins: AtomicBool::new(false),
        })
    }

    /// Some node's work has a stand-in: the periodic work looks for the nodes a CPU runs.
    #[inline]
    pub(crate) fn has_stand_ins(&self) -> bool {
        self.has_stand_ins.load(Relaxed)
    }

    pub(crate) fn is_online(&self, cpu: usize) -> bool {
        self.online.get(cpu).is_some_and(|online| online.load(Relaxed))
    }

    /// Marks `cpu` online or offline; false for a CPU the allocator does not know.
    pub(super) fn set(&self, cpu: usize, online: bool) -> bool {
        let Some(flag) = self.online.get(cpu) else { return false };
        flag.store(online, Relaxed);
        // Release: an assignment that reads this generation sees the flag.
        self.generation.fetch_add(1, AcqRel);
        true
    }
}

impl<P: Platform> PageAllocator<P> {
    fn no_cpu_online(&self) -> bool {
        !(0..self.cpu_node.len()).any(|cpu| self.cpus.is_online(cpu))
    }

    /// Chooses each node's background CPU from the online CPUs; again if the online mask
    /// changed meanwhile, so that the last assignment follows the last mask.
    pub(super) fn assign_background_cpus(&self) {
        loop {
            let generation = self.cpus.generation.load(Acquire);
            // With every CPU offline (Linux refuses to offline the last one) each node's
            // work stays where the build put it.
            let all = self.no_cpu_online();
            let online = |cpu: usize| all || self.cpus.is_online(cpu);
            let mut stand_ins = false;
            for node in 0..self.nodes.len() {
                let cpu = self.background_cpu_for(node as u16, online);
                self.nodes[node].background_cpu.store(cpu, Relaxed);
                stand_ins |= cpu != OWN_CPUS;
            }
            self.cpus.has_stand_ins.store(stand_ins, Relaxed);
            if self.cpus.generation.load(Acquire) == generation {
                return;
            }
        }
    }

    /// [`OWN_CPUS`] when one of `node`'s CPUs is online; else the online CPU nearest to it:
    /// by the distance of their described nodes, then of their arenas (both |a - b|, ties
    /// to the lower id), then the lowest CPU id.
    fn background_cpu_for(&self, node: u16, online: impl Fn(usize) -> bool) -> u32 {
        let cpus = 0..self.cpu_node.len();
        if cpus.clone().any(|cpu| self.cpu_node[cpu] == node && online(cpu)) {
            return OWN_CPUS;
        }
        let home = self.nodes[usize::from(node)].home;
        let nearest = cpus.filter(|&cpu| online(cpu)).min_by_key(|&cpu| {
            let arena = self.cpu_node[cpu];
            let other = self.nodes[usize::from(arena)].home;
            (other.abs_diff(home), other, arena.abs_diff(node), arena, cpu)
        });
        // The mask may change under this pass, and the caller then makes it again: a CPU of
        // the node's own that came online since the first look means the node runs its own
        // work, and no CPU online at all leaves it where it is.
        match nearest {
            Some(cpu) if self.cpu_node[cpu] != node => cpu as u32,
            _ => OWN_CPUS,
        }
    }
}

#[cfg(any(feature = "alloc", test))]
impl<P: Platform> PageAllocator<P> {
    /// The invariant checker's part: a node's own CPUs run its work exactly when one of
    /// them is online, and otherwise an online CPU of another node does (with every CPU
    /// offline, the build's choice stands). Names the first node that breaks it.
    pub(crate) fn check_background_cpus(&self) -> Result<(), (u16, alloc::string::String)> {
        let all = self.no_cpu_online();
        let online = |cpu: usize| all || self.cpus.is_online(cpu);
        let mut stand_ins = false;
        for (index, node) in self.nodes.iter().enumerate() {
            let own_online =
                (0..self.cpu_node.len()).any(|cpu| usize::from(self.cpu_node[cpu]) == index && online(cpu));
            let fine = match node.background_cpu() {
                None => own_online,
                Some(cpu) => !own_online && online(cpu) && usize::from(self.node_of_cpu(cpu)) != index,
            };
            if !fine {
                let what =
                    alloc::format!("background CPU {:?} with an own CPU online: {own_online}", node.background_cpu());
                return Err((index as u16, what));
            }
            stand_ins |= node.background_cpu().is_some();
        }
        if stand_ins && !self.cpus.has_stand_ins() {
            return Err((0, alloc::string::String::from("a stand-in runs a node's work unflagged")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;
    use crate::types::ZoneType;

    fn two_nodes_of_one_cpu() -> PageAllocator<TestPlatform> {
        let builder = AllocatorBuilder::new().node(1).node(1).zone(0, ZoneType::Normal, 0x10_0000..0x10_1000).zone(
            1,
            ZoneType::Normal,
            0x20_0000..0x20_1000,
        );
        PageAllocator::build(builder, TestPlatform::new(2)).unwrap()
    }

    #[test]
    fn the_checker_reports_a_node_whose_work_runs_on_the_wrong_cpu() {
        let allocator = two_nodes_of_one_cpu();
        allocator.check_invariants().unwrap();
        // Node 1's CPU is online, yet CPU 0 would run its work.
        allocator.nodes[1].background_cpu.store(0, Relaxed);
        let violation = allocator.check_invariants().unwrap_err();
        assert!(violation.what.contains("background CPU Some(0)"), "{violation}");
        allocator.nodes[1].background_cpu.store(OWN_CPUS, Relaxed);
        // Offline, it must have a stand-in.
        allocator.cpus.set(1, false);
        assert!(allocator.check_invariants().is_err());
        allocator.assign_background_cpus();
        allocator.check_invariants().unwrap();
    }

    /// Another thread's cpu_online can land between this pass's looks at the mask: the node
    /// whose own CPU came online meanwhile runs its own work, and an empty mask leaves it.
    #[test]
    fn a_mask_that_changes_under_the_pass_gives_the_node_its_own_cpu() {
        let allocator = two_nodes_of_one_cpu();
        let looks = core::cell::Cell::new(0);
        // CPU 1 (node 1's) is offline at the first look and online from then on.
        let came_online = |cpu: usize| {
            looks.set(looks.get() + 1);
            cpu == 0 || looks.get() > 2
        };
        assert_eq!(allocator.background_cpu_for(1, came_online), OWN_CPUS);
        assert_eq!(allocator.background_cpu_for(1, |_| false), OWN_CPUS, "no CPU online");
        assert_eq!(allocator.background_cpu_for(1, |cpu| cpu == 0), 0, "a steady mask: CPU 0 stands in");
    }
}
