//! Property test: random alloc/free sequences of mixed orders, migratetypes and request
//! kinds, against a reference model (a frame ownership map). After every step: the
//! invariant checker passes, no frame is handed out twice, blocks respect their request's
//! zone limit, and free + allocated == managed. Liveness: an allocation the model says
//! must succeed (see `Model::must_succeed`) does; out of memory is accepted only when the
//! model says memory is short.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use std::collections::BTreeMap;

use common::*;
use pagealloc::platform::{Platform, TestPlatform};
use pagealloc::policy::{FreePagesCount, NumaStats, VmstatPolicy};
use pagealloc::types::MAX_ORDER;
use pagealloc::vmstat::NumaEvent;
use pagealloc::{AllocRequest, Block, FreeError, MigrateType, ZoneType};
use pagealloc::{AllocatorBuilder, PageAllocator};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        order: u8,
        request: usize,
    },
    Free {
        pick: usize,
    },
    DoubleFree {
        pick: usize,
    },
    /// Up to `count` live blocks from `pick` on, freed in one `free_bulk`.
    BulkFree {
        pick: usize,
        count: usize,
    },
    /// Later operations run on this CPU.
    Migrate {
        cpu: usize,
    },
    /// One vmstat period on the current CPU.
    Tick,
    DrainAll,
}

const CPUS: usize = 3;
const PRESETS: [&str; 8] = [
    "global-lock",
    "vanilla-5.17",
    "highpcp-full",
    "base",
    "patch7",
    "mainline",
    "mainline+fullest-first",
    "pagealloc",
];
/// vmstat variants over any preset: the presets' own, NUMA counters folding at small
/// thresholds, and the free count in per-CPU diffs.
const VMSTAT: [VmstatPolicy; 4] = [
    VmstatPolicy::MAINLINE,
    VmstatPolicy { numa: NumaStats::ZoneStat { threshold: Some(32) }, free_pages: FreePagesCount::Published },
    VmstatPolicy { numa: NumaStats::SeparateClass { threshold: 10 }, free_pages: FreePagesCount::Published },
    VmstatPolicy { numa: NumaStats::Disabled, free_pages: FreePagesCount::PerCpuDiffs },
];

const REQUESTS: [AllocRequest; 6] = [
    AllocRequest::KERNEL,
    AllocRequest::USER_MOVABLE,
    AllocRequest::RECLAIMABLE,
    AllocRequest::ATOMIC,
    AllocRequest::DMA32,
    AllocRequest::DMA,
];

fn op() -> impl Strategy<Value = Op> {
    let order = prop_oneof![6 => 0u8..=3, 3 => 4u8..=MAX_ORDER];
    prop_oneof![
        50 => (order, 0..REQUESTS.len()).prop_map(|(order, request)| Op::Alloc { order, request }),
        40 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        10 => any::<usize>().prop_map(|pick| Op::DoubleFree { pick }),
        4 => (any::<usize>(), 0usize..24).prop_map(|(pick, count)| Op::BulkFree { pick, count }),
        8 => (0..CPUS).prop_map(|cpu| Op::Migrate { cpu }),
        3 => Just(Op::Tick),
        1 => Just(Op::DrainAll),
    ]
}

/// Reference model: which frames each live block owns.
#[derive(Default)]
struct Model {
    /// Block head pfn -> order, for live blocks.
    live: BTreeMap<u64, u8>,
    /// Freed (pfn, order) pairs not reallocated since, for double-free attempts.
    freed: Vec<(u64, u8)>,
}

impl Model {
    fn overlaps(&self, pfn: u64, order: u8) -> bool {
        let end = pfn + (1 << order);
        self.live.range(..end).next_back().is_some_and(|(&start, &o)| start + (1 << o) > pfn)
    }

    fn allocated_pages(&self) -> u64 {
        self.live.values().map(|&o| 1u64 << o).sum()
    }

    fn allocated_in(&self, range: std::ops::Range<u64>) -> u64 {
        self.live.range(range).map(|(_, &o)| 1u64 << o).sum()
    }

    /// Whether the zone holds an aligned run of 2^order frames that no live block covers.
    fn has_free_run(&self, start: u64, end: u64, order: u8) -> bool {
        let size = 1u64 << order;
        let mut pfn = start.next_multiple_of(size);
        // Bounded by the zone's span.
        while pfn + size <= end {
            if !self.overlaps(pfn, order) {
                return true;
            }
            pfn += size;
        }
        false
    }

    /// The liveness oracle: true when some zone the request may use has, by the model's
    /// own count, more free pages than every bar the allocator may hold back (the high
    /// watermark, any boost, the lowmem reserve, the high-atomic reserve, and, for a caller
    /// that cannot drain them, every CPU's pageset), plus, above order 0, an aligned run of
    /// free frames. Conservative on purpose: the allocator may succeed where this says
    /// nothing, and must succeed where it says yes. Above order 0 it speaks only for callers
    /// that may reclaim (the slow path drains the pagesets, so free frames merge), in zones
    /// with no holes and no high-atomic reserve.
    fn must_succeed(&self, allocator: &TestAllocator, order: u8, request: AllocRequest) -> bool {
        allocator.zones().iter().any(|zone| {
            let movable_only =
                zone.state().zone_type() == ZoneType::Movable && request.migratetype != MigrateType::Movable;
            if zone.state().zone_type() > request.highest_zone || movable_only || zone.state().managed_pages() == 0 {
                return false;
            }
            let (start, end) = (zone.start_pfn(), zone.start_pfn() + zone.spanned_pages());
            let free = zone.state().managed_pages() - self.allocated_in(start..end);
            let params = zone.state().params();
            let held_back = params.watermarks.high_pages
                + zone.state().boost_pages()
                + params.lowmem_reserve[request.highest_zone.index()]
                + zone.state().reserved_highatomic_pages()
                + if request.may_reclaim { 0 } else { allocator.counters().pcp_pages() };
            if free < held_back + (1 << order) {
                return false;
            }
            order == 0
                || (request.may_reclaim
                    && zone.state().managed_pages() == zone.spanned_pages()
                    && zone.state().reserved_highatomic_pages() == 0
                    && self.has_free_run(start, end, order))
        })
    }
}

/// Per zone: managed pages, the model's allocated pages, the watermarks, for a failure.
fn zones_summary(allocator: &TestAllocator, model: &Model) -> String {
    let zones = allocator.zones().iter().map(|zone| {
        let (start, end) = (zone.start_pfn(), zone.start_pfn() + zone.spanned_pages());
        let marks = zone.state().params().watermarks;
        format!(
            "{:?}: managed {} allocated {} marks {}/{}/{} boost {} highatomic {}",
            zone.state().zone_type(),
            zone.state().managed_pages(),
            model.allocated_in(start..end),
            marks.min_pages,
            marks.low_pages,
            marks.high_pages,
            zone.state().boost_pages(),
            zone.state().reserved_highatomic_pages()
        )
    });
    format!("{}; pcp {}", zones.collect::<Vec<_>>().join("; "), allocator.counters().pcp_pages())
}

/// Calls made and pages moved so far, for the exact vm event counters.
#[derive(Default)]
struct Counts {
    allocations: u64,
    pages_allocated: u64,
    pages_freed: u64,
}

/// One allocation, checked against the model: a failure must be out of memory with none to
/// spare (when free counts are exact), and a block must be aligned, in an allowed zone and
/// overlap nothing live. The block is entered in the model.
fn alloc_checked(
    allocator: &PageAllocator<TestPlatform>,
    model: &mut Model,
    order: u8,
    request: AllocRequest,
    exact_free_count: bool,
) -> Result<Option<Block>, TestCaseError> {
    let result = allocator.alloc_pages(order, request);
    if let Err(error) = &result {
        prop_assert_eq!(error, &pagealloc::AllocError::OutOfMemory { order });
        prop_assert!(
            !exact_free_count || !model.must_succeed(allocator, order, request),
            "order-{} {:?} failed with memory to spare: {}",
            order,
            request,
            zones_summary(allocator, model)
        );
    }
    let Ok(block) = result else { return Ok(None) };
    prop_assert!(!model.overlaps(block.pfn(), order), "frame handed out twice: {block:?}");
    prop_assert_eq!(block.pfn() % block.pages(), 0);
    let zone = allocator.zone_of_pfn(block.pfn()).unwrap();
    prop_assert!(zone.state().zone_type() <= request.highest_zone);
    model.live.insert(block.pfn(), order);
    model.freed.retain(|&(pfn, o)| pfn + (1 << o) <= block.pfn() || block.pfn() + block.pages() <= pfn);
    Ok(Some(block))
}

/// Frees `batch` in one bulk free, which must free every block, and enters the frees in
/// the model.
fn bulk_free_checked(
    allocator: &PageAllocator<TestPlatform>,
    model: &mut Model,
    counts: &mut Counts,
    batch: Vec<Block>,
) -> Result<(), TestCaseError> {
    let heads: Vec<(u64, u8)> = batch.iter().map(|block| (block.pfn(), block.order())).collect();
    let freed = allocator.free_bulk(batch).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(freed, heads.len());
    for (pfn, order) in heads {
        counts.pages_freed += 1 << order;
        model.live.remove(&pfn);
        model.freed.push((pfn, order));
    }
    Ok(())
}

/// After every operation: the checker passes, pages are conserved, and the vm events and
/// NUMA counters, read exactly, count every call once.
fn check_counts(
    allocator: &PageAllocator<TestPlatform>,
    model: &Model,
    managed: u64,
    counts: &Counts,
    vmstat: VmstatPolicy,
) -> Result<(), TestCaseError> {
    let census = allocator.check_invariants().map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(census.allocated_pages, model.allocated_pages());
    prop_assert_eq!(census.free_pages + census.allocated_pages + census.pcp_pages, managed);
    prop_assert_eq!(
        allocator.counters().pgalloc_pages(ZoneType::Normal)
            + allocator.counters().pgalloc_pages(ZoneType::Dma32)
            + allocator.counters().pgalloc_pages(ZoneType::Dma),
        counts.pages_allocated
    );
    prop_assert_eq!(allocator.counters().pgfree_pages(), counts.pages_freed);
    let numa = |event| allocator.counters().numa_event(event);
    let counted = if vmstat.numa == NumaStats::Disabled { 0 } else { counts.allocations };
    prop_assert_eq!((numa(NumaEvent::Hit) + numa(NumaEvent::Miss), numa(NumaEvent::Local)), (counted, counted));
    Ok(())
}

fn run(ops: Vec<Op>, total_mib: u64, preset_name: &str, vmstat: VmstatPolicy) -> Result<(), TestCaseError> {
    let mut policy = preset(preset_name);
    policy.vmstat = vmstat;
    let builder = AllocatorBuilder::pc_layout(total_mib).policy(policy);
    let allocator = build_allocator(builder, CPUS);
    // With per-CPU diffs the allocator judges watermarks on a count that lags, as Linux
    // does: the liveness oracle, which reads exact counts, cannot speak for it.
    let exact_free_count = vmstat.free_pages == FreePagesCount::Published;
    let initial = buddyinfo(&allocator);
    let managed = allocator.counters().managed_pages();
    let mut counts = Counts::default();
    let mut model = Model::default();
    let mut blocks: Vec<Block> = Vec::new();
    for op in ops {
        match op {
            Op::Alloc { order, request } => {
                if let Some(block) = alloc_checked(&allocator, &mut model, order, REQUESTS[request], exact_free_count)?
                {
                    counts.allocations += 1;
                    counts.pages_allocated += block.pages();
                    blocks.push(block);
                }
            }
            Op::Free { pick } if !blocks.is_empty() => {
                let block = blocks.swap_remove(pick % blocks.len());
                let (pfn, order) = (block.pfn(), block.order());
                allocator.free_pages(block).map_err(|e| TestCaseError::fail(e.to_string()))?;
                counts.pages_freed += 1 << order;
                model.live.remove(&pfn);
                model.freed.push((pfn, order));
            }
            Op::BulkFree { pick, count } if !blocks.is_empty() => {
                let from = pick % blocks.len();
                let batch: Vec<Block> = blocks.drain(from..(from + count).min(blocks.len())).collect();
                bulk_free_checked(&allocator, &mut model, &mut counts, batch)?;
            }
            Op::DoubleFree { pick } if !model.freed.is_empty() => {
                let (pfn, order) = model.freed[pick % model.freed.len()];
                let error = free_unowned(&allocator, pfn, order).expect_err("double free must fail");
                prop_assert!(
                    matches!(error, FreeError::DoubleFree { .. } | FreeError::NotAllocated { .. }),
                    "{error:?}"
                );
            }
            Op::Migrate { cpu } => allocator.platform().set_cpu(cpu),
            Op::Tick => {
                allocator.background().vmstat_tick(allocator.platform().current_cpu());
            }
            Op::DrainAll => {
                allocator.pagesets().drain_all();
                prop_assert_eq!(allocator.counters().pcp_pages(), 0);
            }
            _ => {}
        }
        check_counts(&allocator, &model, managed, &counts, vmstat)?;
    }
    for block in blocks {
        allocator.free_pages(block).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    allocator.pagesets().drain_all();
    let census = allocator.check_invariants().map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(census.free_pages, managed);
    if allocator.zones().iter().all(|z| z.state().reserved_highatomic_pages() == 0) {
        prop_assert_eq!(buddyinfo(&allocator), initial, "everything merges back");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn random_sequences_keep_every_invariant(
        ops in proptest::collection::vec(op(), 1..300),
        preset in 0..PRESETS.len(),
        vmstat in 0..VMSTAT.len(),
    ) {
        run(ops, 32, PRESETS[preset], VMSTAT[vmstat])?;
    }

    #[test]
    fn random_sequences_near_exhaustion(ops in proptest::collection::vec(
        prop_oneof![8 => (0u8..=2, 0..REQUESTS.len()).prop_map(|(order, request)| Op::Alloc { order, request }),
                    2 => any::<usize>().prop_map(|pick| Op::Free { pick })],
        1000..2500),
        preset in 0..PRESETS.len(),
        vmstat in 0..VMSTAT.len(),
    ) {
        // 8 MiB: 2048 frames, exhausted within the sequence.
        run(ops, 8, PRESETS[preset], VMSTAT[vmstat])?;
    }
}

/// The oracle is not vacuous: it says yes on a fresh machine, at every order for callers
/// that may reclaim, and no once the model holds nearly everything.
#[test]
fn the_liveness_oracle_speaks_both_ways() {
    let allocator = pc_with(32, "mainline", CPUS);
    let mut model = Model::default();
    for order in 0..=MAX_ORDER {
        assert!(model.must_succeed(&allocator, order, AllocRequest::KERNEL), "order {order}");
    }
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
        model.live.insert(block.pfn(), 0);
        held.push(block);
    }
    assert!(!model.must_succeed(&allocator, 0, AllocRequest::KERNEL));
    allocator.free_bulk(held).unwrap();
}

#[test]
fn single_zone_kinds_build() {
    for zone_type in [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal, ZoneType::Movable] {
        let allocator = single_zone(zone_type, 4096);
        assert_eq!(allocator.check_invariants().unwrap().free_pages, 4096);
    }
}
