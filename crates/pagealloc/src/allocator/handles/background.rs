//! The allocator's own background work, as a harness drives it.

use crate::allocator::kswapd::Round;
use crate::allocator::SWAP_CLUSTER_MAX;
use crate::allocator::{DueWork, PageAllocator};
use crate::compaction::CompactGoal;
use crate::compaction::CompactMode;
use crate::pcp;
use crate::platform::Platform;
use crate::policy::FreePagesCount;
use crate::ZoneType;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::Ordering::Release;

/// The allocator's periodic and background work: each CPU's vmstat pass on its schedule
/// (mirrors vmstat_update()), background reclaim (kswapd) and background compaction
/// (kcompactd). A harness calls [`Background::run_due_work`] from each CPU's timer; the
/// rest serves harnesses that run kswapd as a task of their own, replays and tests. From
/// [`PageAllocator::background`].
#[derive(Clone, Copy)]
pub struct Background<'a, P: Platform> {
    pub(super) allocator: &'a PageAllocator<P>,
}

impl<P: Platform> PageAllocator<P> {
    /// The allocator's periodic and background work: vmstat passes, kswapd, kcompactd.
    #[inline]
    pub fn background(&self) -> Background<'_, P> {
        Background { allocator: self }
    }
}

impl<P: Platform> Background<'_, P> {
    /// Runs whatever periodic work is due on `cpu` at `now_ns` (the platform's clock): its
    /// vmstat pass when the interval has passed, and a background-reclaim pass for its node
    /// when one was woken (unless a task of the harness runs the node's kswapd, see
    /// [`Self::set_kswapd_task`]), and kcompactd's. A node without an online CPU of its own
    /// has its background work run by [`crate::allocator::Node::background_cpu`]. Cheap when
    /// nothing is due (a few loads, and a walk of the nodes when some node's work runs on a
    /// CPU not its own), so a harness may call it before every step.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// // From each CPU's timer tick: cheap when nothing is due.
    /// let done = allocator.background().run_due_work(0, 1_000_000_000); // vm.stat_interval (1 s) has passed
    /// assert_eq!(done.vmstat_passes, 1);
    /// ```
    #[inline]
    pub fn run_due_work(&self, cpu: usize, now_ns: u64) -> DueWork {
        let allocator = self.allocator;
        let mut done = DueWork::default();
        if allocator.periodic.claim_vmstat(cpu, now_ns) {
            done.vmstat_passes = 1;
            done.drained_pages = allocator.background().vmstat_tick(cpu);
        }
        allocator.run_node_work(allocator.node_of_cpu(cpu), now_ns, &mut done);
        if allocator.cpus.has_stand_ins() {
            for node in 0..allocator.nodes.len() {
                if allocator.nodes[node].background_cpu.load(Relaxed) == cpu as u32 {
                    allocator.run_node_work(node as u16, now_ns, &mut done);
                }
            }
        }
        done
    }

    /// Moves `cpu`'s next vmstat pass to `due_ns` (later passes follow every interval), as
    /// a replay does to run each CPU's timer in the traced kernel's phase. False for a CPU
    /// without a schedule.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// assert!(allocator.background().set_vmstat_due(1, 250_000_000)); // CPU 1's first pass at 0.25 s
    /// assert_eq!(allocator.background().run_due_work(1, 250_000_000).vmstat_passes, 1);
    /// ```
    #[inline]
    pub fn set_vmstat_due(&self, cpu: usize, due_ns: u64) -> bool {
        let allocator = self.allocator;
        allocator.periodic.next_vmstat_ns.get(cpu).map(|next| next.store(due_ns, Relaxed)).is_some()
    }

    /// One vmstat pass of `cpu` now, whatever the schedule (mirrors vmstat_update()): fold its
    /// counter diffs; decay auto-tuned high and drain the excess; drain remote-node pagesets idle for 3 ticks.
    /// Returns pages drained. [`Self::run_due_work`] calls it on schedule; tests and idle
    /// loops may force it.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap();
    /// allocator.background().vmstat_tick(0); // fold CPU 0's counters, decay its pagesets' high
    /// ```
    #[inline]
    pub fn vmstat_tick(&self, cpu: usize) -> u64 {
        let allocator = self.allocator;
        let mut drained = 0;
        for zone in allocator.zones.iter() {
            if allocator.policy.vmstat.free_pages == FreePagesCount::PerCpuDiffs {
                zone.buddy(&allocator.platform).lock().fold_free_diff(cpu);
            }
            zone.buddy(&allocator.platform).release_handed_over();
            let Some(slot) = zone.pcp.get(cpu) else { continue };
            let fold = allocator.fold_target(zone);
            drained +=
                pcp::vmstat_update(zone.buddy(&allocator.platform), slot, &allocator.policy.pcp, slot.remote, &fold);
        }
        drained
    }

    /// Asks background reclaim to balance `node` (mirrors wakeup_kswapd()). While it is
    /// awake the node's zones fold vmstat diffs at the pressure threshold.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// allocator.background().wake_kswapd(0);
    /// assert!(allocator.background().run_kswapd(0)); // woken: one pass (no reclaim client: it frees nothing)
    /// assert!(!allocator.background().run_kswapd(0)); // not woken again
    /// ```
    #[inline]
    pub fn wake_kswapd(&self, node: u16) {
        let allocator = self.allocator;
        allocator.wake_kswapd_for(node, ZoneType::Device);
    }

    /// One kswapd pass for `node` if it was woken (mirrors balance_pgdat()), run whole: the
    /// reclaim client, if any, is asked for pages until the node is balanced at its boosted
    /// high watermarks, or for the boosts' worth if it already was; then each zone's boost
    /// drops by what it was when the pass began, and if there were any kcompactd is woken
    /// for pageblock order. Finishes a pass [`Self::kswapd_round`] began. Returns whether
    /// it ran.
    #[inline]
    pub fn run_kswapd(&self, node: u16) -> bool {
        let allocator = self.allocator;
        let Some(state) = allocator.nodes.get(node as usize) else { return false };
        if !allocator.claim_round(node) {
            return false;
        }
        while allocator.round(node, None) == Round::Continue {}
        state.kswapd.pass.in_round.store(false, Release);
        true
    }

    /// Says whether a task of the harness runs `node`'s kswapd, calling
    /// [`Self::kswapd_round`] (as the kernel's kswapd thread runs beside the allocating
    /// tasks); [`Self::run_due_work`] then leaves kswapd to it. Off by default: the periodic
    /// work runs whole passes.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// allocator.background().set_kswapd_task(0, true);
    /// allocator.background().wake_kswapd(0);
    /// assert_eq!(allocator.background().run_due_work(0, 0).kswapd_passes, 0); // left to the task
    /// assert!(allocator.background().kswapd_round(0)); // the task's round (no client: the pass ends)
    /// assert!(!allocator.background().kswapd_round(0)); // asleep until woken again
    /// ```
    #[inline]
    pub fn set_kswapd_task(&self, node: u16, own_task: bool) {
        let allocator = self.allocator;
        if let Some(state) = allocator.nodes.get(node as usize) {
            state.kswapd.pass.own_task.store(own_task, Relaxed);
        }
    }

    /// One round of `node`'s kswapd pass, opening one if kswapd was woken: one request to
    /// the reclaim client, of at most SWAP_CLUSTER_MAX pages (the batch shrink_inactive_list()
    /// isolates and frees at a time), so the pass takes the time its frees take and the
    /// boosts stay raised meanwhile. Returns whether it ran a round.
    #[inline]
    pub fn kswapd_round(&self, node: u16) -> bool {
        let allocator = self.allocator;
        let Some(state) = allocator.nodes.get(node as usize) else { return false };
        if !allocator.claim_round(node) {
            return false;
        }
        allocator.round(node, Some(SWAP_CLUSTER_MAX));
        state.kswapd.pass.in_round.store(false, Release);
        true
    }

    /// Asks kcompactd to compact `node` for `order` (mirrors wakeup_kcompactd()); the
    /// largest order asked for since its last pass wins.
    #[inline]
    pub fn wake_kcompactd(&self, node: u16, order: u8) {
        let allocator = self.allocator;
        allocator.wake_kcompactd_for(node, order, ZoneType::Device);
    }

    /// Compacts every zone of `node` whole, until the scanners meet (mirrors compact_node(),
    /// `echo 1 > /proc/sys/vm/compact_memory`). Returns pages migrated.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    /// // Without a migration client (`set_migrate`) compaction moves nothing.
    /// assert_eq!(allocator.background().compact_node(0), 0);
    /// allocator.free_pages(block).unwrap();
    /// ```
    #[inline]
    pub fn compact_node(&self, node: u16) -> u64 {
        let allocator = self.allocator;
        let mut migrated_pages = 0;
        for zone in allocator.populated_zones(node) {
            zone.state().compact.reset_scanners();
            let (_, run) = allocator.compact_zone(zone, CompactGoal::WholeZone, CompactMode::Sync, false);
            migrated_pages += run.migrated_pages;
        }
        migrated_pages
    }
}
