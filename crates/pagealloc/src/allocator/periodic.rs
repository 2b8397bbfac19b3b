//! The work the kernel does on its own schedule, owned by the allocator: each CPU's vmstat
//! pass every `vm.stat_interval` (pageset decay and remote drains; later counter folds), and
//! background reclaim (kswapd) once woken. Harnesses only call [`crate::Background::run_due_work`]:
//! the simulator before each step of a CPU, the real-thread worker on a timer.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::PageAllocator;
use crate::platform::Platform;
use crate::types::ZoneType;

/// When each CPU's next vmstat pass is due.
pub(crate) struct Schedule {
    pub(super) next_vmstat_ns: crate::meta::MetaSlice<AtomicU64>,
    interval_ns: u64,
}

impl Schedule {
    pub(crate) fn new(
        nr_cpus: usize,
        interval_ms: u32,
        arena: Option<&mut crate::meta::MetaArena>,
    ) -> Result<Schedule, crate::meta::MetaArenaFull> {
        let interval_ns = u64::from(interval_ms.max(1)) * 1_000_000;
        let next_vmstat_ns = crate::meta::MetaSlice::new(nr_cpus, arena, |_| AtomicU64::new(interval_ns))?;
        Ok(Schedule { next_vmstat_ns, interval_ns })
    }

    /// Claims `cpu`'s pass if due at `now_ns`. Passes stay on the grid of whole intervals,
    /// and one call runs at most one: a CPU that was busy for several intervals catches up
    /// one pass per call, as a deferred timer fires once when its CPU returns.
    pub(super) fn claim_vmstat(&self, cpu: usize, now_ns: u64) -> bool {
        let Some(next) = self.next_vmstat_ns.get(cpu) else { return false };
        let due_ns = next.load(Relaxed);
        now_ns >= due_ns && next.compare_exchange(due_ns, due_ns + self.interval_ns, Relaxed, Relaxed).is_ok()
    }
}

impl<P: Platform> PageAllocator<P> {}

/// What one call of [`crate::Background::run_due_work`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DueWork {
    /// vmstat passes run (0 or 1).
    pub vmstat_passes: u32,
    /// Pages drained from pagesets: by the vmstat pass, and by kcompactd after a run that
    /// ended Complete.
    pub drained_pages: u64,
    /// Background-reclaim passes run: at most one per node whose work this CPU runs (its
    /// own, and any node without CPUs it stands in for).
    pub kswapd_passes: u32,
    /// Background-compaction passes run, as many at most: kcompactd woken for an order,
    /// or a proactive pass.
    pub kcompactd_passes: u32,
}

impl<P: Platform> PageAllocator<P> {
    /// `node`'s kswapd pass, if woken, and kcompactd's due work.
    pub(super) fn run_node_work(&self, node: u16, now_ns: u64, done: &mut DueWork) {
        if !self.nodes[node as usize].kswapd.pass.has_own_task() && self.background().run_kswapd(node) {
            done.kswapd_passes += 1;
        }
        let (compacted, drained_pages) = self.run_kcompactd(node, now_ns);
        done.kcompactd_passes += u32::from(compacted);
        done.drained_pages += drained_pages;
    }

    /// Wakes kswapd for an allocation that may use zones up to `highest_zone`; the
    /// highest asked since the pass began wins (mirrors wakeup_kswapd()'s
    /// kswapd_highest_zoneidx), and is what kcompactd is woken for after the pass.
    pub(crate) fn wake_kswapd_for(&self, node: u16, highest_zone: ZoneType) {
        let state = &self.nodes[node as usize];
        if state.kswapd.wake(highest_zone) {
            self.set_pressure_thresholds(node, true);
        }
    }

    /// Wakes kswapd on every node with a zone the allocation may use: the zonelist's zones
    /// up to `highest_zone` that have pages, each node once (mirrors wake_all_kswapds()).
    #[cold]
    pub(super) fn wake_all_kswapds(&self, zonelist: &[u16], highest_zone: ZoneType) {
        let mut last_node = None;
        for &zone_index in zonelist {
            let state = self.zones[zone_index as usize].state();
            if state.zone_type > highest_zone || state.managed_pages() == 0 || last_node == Some(state.node) {
                continue;
            }
            self.wake_kswapd_for(state.node, highest_zone);
            last_node = Some(state.node);
        }
    }

    pub(super) fn set_pressure_thresholds(&self, node: u16, under_pressure: bool) {
        for zone in self.zones.iter().filter(|zone| zone.state().node == node) {
            zone.state().set_pressure_threshold(under_pressure);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::AllocatorBuilder;
    use crate::platform::TestPlatform;
    use crate::request::AllocRequest;
    use crate::types::ZoneType;

    const SECOND_NS: u64 = 1_000_000_000;

    fn allocator(pages: u64) -> PageAllocator<TestPlatform> {
        // Default tunables: vm.stat_interval of 1 s.
        PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, pages), TestPlatform::new(2)).unwrap()
    }

    #[test]
    fn vmstat_passes_run_on_the_interval_grid_one_per_call() {
        let allocator = allocator(1 << 16);
        assert_eq!(allocator.background().run_due_work(0, SECOND_NS - 1), DueWork::default(), "not due before 1 s");
        assert_eq!(allocator.background().run_due_work(0, SECOND_NS).vmstat_passes, 1);
        assert_eq!(allocator.background().run_due_work(0, SECOND_NS + SECOND_NS / 2).vmstat_passes, 0, "next at 2 s");
        // CPU 1 was busy for three intervals: it catches up one pass per call.
        let passes: alloc::vec::Vec<u32> =
            (0..4).map(|_| allocator.background().run_due_work(1, 3 * SECOND_NS + 1).vmstat_passes).collect();
        assert_eq!(passes, [1, 1, 1, 0]);
        assert_eq!(
            allocator.background().run_due_work(7, 10 * SECOND_NS),
            DueWork::default(),
            "no such CPU: nothing due"
        );
    }

    #[test]
    fn the_slow_path_wakes_kswapd_and_the_periodic_work_runs_it_once() {
        let allocator = allocator(1 << 12);
        // Exhaust the zone: the last attempts take the slow path, which wakes kswapd.
        let mut held = alloc::vec::Vec::new();
        while let Ok(block) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
            held.push(block);
        }
        assert!(allocator.nodes()[0].kswapd.is_pending(), "woken");
        assert_eq!(allocator.nodes()[0].kswapd_runs(), 0, "not run in the allocating call");
        assert_eq!(allocator.background().run_due_work(1, 0).kswapd_passes, 1);
        assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 0, "one pass per wake-up");
        assert_eq!(allocator.nodes()[0].kswapd_runs(), 1);
        allocator.free_bulk(held).unwrap();
        allocator.check_invariants().unwrap();
    }

    /// rmqueue() tests the zone's boosted-watermark mark whether or not its take found a
    /// block: a mark left by a take that could not wake kswapd is answered by the next one.
    #[test]
    fn a_failed_take_still_wakes_kswapd_for_a_boosted_zone() {
        use crate::request::{AllocFlags, BlockRequest};
        use crate::types::MigrateType;
        use crate::zone::zone_flags;
        let allocator = allocator(1 << 12);
        let zone = &allocator.zones()[0];
        let flags = AllocFlags::fast_path(&AllocRequest::KERNEL);
        let block = BlockRequest { order: 0, migratetype: MigrateType::Unmovable, flags };
        // Take every page below the watermarks, as the zone's last requests would.
        let mut held = alloc::vec::Vec::new();
        while let Some(pfn) = allocator.rmqueue(zone, 0, block, true) {
            held.push(crate::block::Block::new(pfn, zone.state().index, allocator.id, zone.mem().frame(pfn).info()));
        }
        assert!(!allocator.nodes()[0].kswapd.is_pending(), "nothing woke kswapd yet");
        zone.state().set_flag(zone_flags::BOOSTED_WATERMARK);
        assert_eq!(allocator.rmqueue(zone, 0, block, true), None, "the zone is exhausted");
        assert!(allocator.nodes()[0].kswapd.is_pending(), "the boosted mark woke kswapd");
        assert_eq!(zone.state().flags() & zone_flags::BOOSTED_WATERMARK, 0, "and was cleared");
        allocator.free_bulk(held).unwrap();
        allocator.check_invariants().unwrap();
    }
}
