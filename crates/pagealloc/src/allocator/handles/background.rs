//! The allocator's own background work, as a harness drives it.

use crate::allocator::{DueWork, PageAllocator};
use crate::platform::Platform;

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
        self.allocator.run_due_work(cpu, now_ns)
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
        self.allocator.set_vmstat_due(cpu, due_ns)
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
        self.allocator.vmstat_tick(cpu)
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
        self.allocator.wake_kswapd(node)
    }

    /// One kswapd pass for `node` if it was woken (mirrors balance_pgdat()), run whole: the
    /// reclaim client, if any, is asked for pages until the node is balanced at its boosted
    /// high watermarks, or for the boosts' worth if it already was; then each zone's boost
    /// drops by what it was when the pass began, and if there were any kcompactd is woken
    /// for pageblock order. Finishes a pass [`Self::kswapd_round`] began. Returns whether
    /// it ran.
    #[inline]
    pub fn run_kswapd(&self, node: u16) -> bool {
        self.allocator.run_kswapd(node)
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
        self.allocator.set_kswapd_task(node, own_task)
    }

    /// One round of `node`'s kswapd pass, opening one if kswapd was woken: one request to
    /// the reclaim client, of at most SWAP_CLUSTER_MAX pages (the batch shrink_inactive_list()
    /// isolates and frees at a time), so the pass takes the time its frees take and the
    /// boosts stay raised meanwhile. Returns whether it ran a round.
    #[inline]
    pub fn kswapd_round(&self, node: u16) -> bool {
        self.allocator.kswapd_round(node)
    }

    /// Asks kcompactd to compact `node` for `order` (mirrors wakeup_kcompactd()); the
    /// largest order asked for since its last pass wins.
    #[inline]
    pub fn wake_kcompactd(&self, node: u16, order: u8) {
        self.allocator.wake_kcompactd(node, order)
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
        self.allocator.compact_node(node)
    }
}
