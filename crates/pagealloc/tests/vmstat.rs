//! vmstat counters through the allocator: every allocation counts hit or miss and local or
//! other, a miss counts foreign on the preferred zone, in every NUMA-statistics mode; diffs
//! fold past their threshold and on the periodic pass; the pressure threshold holds while
//! background reclaim is awake; and the /proc/vmstat dump.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use common::{build_allocator, one_normal_zone, preset};
use pagealloc::platform::TestPlatform;
use pagealloc::policy::NumaStats;
use pagealloc::vmstat::NumaEvent;
use pagealloc::{AllocRequest, AllocatorBuilder, BuildError, PageAllocator, Policy, ZoneType};

const MODES: [NumaStats; 5] = [
    NumaStats::ZoneStat { threshold: None },
    NumaStats::ZoneStat { threshold: Some(32) },
    NumaStats::SeparateClass { threshold: NumaStats::SEPARATE_CLASS_THRESHOLD },
    NumaStats::PerCpu,
    NumaStats::Disabled,
];

fn policy(numa: NumaStats) -> Policy {
    let mut policy = preset("mainline");
    policy.vmstat.numa = numa;
    policy
}

/// Two nodes of one CPU each, a Normal zone of `pages` on each.
fn two_nodes(numa: NumaStats, pages: u64) -> PageAllocator<TestPlatform> {
    let builder = AllocatorBuilder::new()
        .node(1)
        .node(1)
        .zone(0, ZoneType::Normal, (1 << 20)..(1 << 20) + pages)
        .zone(1, ZoneType::Normal, (2 << 20)..(2 << 20) + pages)
        .policy(policy(numa));
    build_allocator(builder, 2)
}

fn events(allocator: &PageAllocator<TestPlatform>) -> [u64; NumaEvent::COUNT] {
    NumaEvent::ALL.map(|event| allocator.counters().numa_event(event))
}

#[test]
fn every_allocation_counts_where_it_landed_in_every_mode() {
    for numa in MODES {
        let allocator = two_nodes(numa, 4096);
        // CPU 0 (node 0) fills node 0, then spills onto node 1: misses there, foreign on
        // node 0, and "other" because node 1 is not CPU 0's.
        let mut held = Vec::new();
        while let Ok(block) = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE) {
            held.push(block);
        }
        let on_node =
            |node| held.iter().filter(|b| allocator.zone_of_pfn(b.pfn()).unwrap().state().node() == node).count();
        let (local, remote) = (on_node(0) as u64, on_node(1) as u64);
        assert!(local > 3000 && remote > 3000, "{numa:?}: {local} local, {remote} remote");
        // CPU 1 (node 1) asks for node 0 explicitly: there is nothing left anywhere, so
        // nothing more counts. Free one page on node 0 first: a hit on node 0, "other" for
        // CPU 1.
        let node0_block =
            held.iter().position(|b| allocator.zone_of_pfn(b.pfn()).unwrap().state().node() == 0).unwrap();
        allocator.free_pages(held.swap_remove(node0_block)).unwrap();
        allocator.platform().set_cpu(1);
        let request = AllocRequest { node: Some(0), ..AllocRequest::USER_MOVABLE };
        held.push(allocator.alloc_pages(0, request).unwrap());
        let expected = if numa == NumaStats::Disabled {
            [0; NumaEvent::COUNT]
        } else {
            // hit, miss, foreign, interleave, local, other
            [local + 1, remote, remote, 0, local, remote + 1]
        };
        assert_eq!(events(&allocator), expected, "{numa:?}");
        assert_eq!(allocator.counters().pgalloc_pages(ZoneType::Normal), local + remote + 1, "{numa:?}");
        assert_eq!(allocator.counters().pgfree_pages(), 1, "{numa:?}");
        allocator.free_bulk(held).unwrap();
        assert_eq!(allocator.counters().pgfree_pages(), local + remote + 1, "{numa:?}");
        allocator.check_invariants().unwrap();
    }
}

#[test]
fn zone_stat_diffs_overstep_and_the_periodic_pass_folds_them() {
    let allocator = two_nodes(NumaStats::ZoneStat { threshold: Some(32) }, 4096);
    let zone = &allocator.zones()[0];
    let mut held = Vec::new();
    for _ in 0..32 {
        held.push(allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap());
    }
    assert_eq!(zone.state().vmstat().numa_folded(NumaEvent::Hit), 0, "32 stay in the diff");
    held.push(allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap());
    // The 33rd passes 32: it hands 33 plus half a threshold over and leaves -16.
    assert_eq!(zone.state().vmstat().numa_folded(NumaEvent::Hit), 49);
    assert_eq!(zone.state().vmstat().numa_folded(NumaEvent::Local), 49);
    assert_eq!(allocator.counters().numa_event(NumaEvent::Hit), 33, "exact reads add the diffs back");
    // The periodic pass (1 s) folds the rest.
    assert_eq!(allocator.background().run_due_work(0, 1_000_000_000).vmstat_passes, 1);
    assert_eq!(zone.state().vmstat().numa_folded(NumaEvent::Hit), 33);
    assert_eq!(allocator.counters().numa_event(NumaEvent::Hit), 33);
    allocator.free_bulk(held).unwrap();
}

#[test]
fn the_separate_class_folds_whole_diffs_and_per_cpu_counters_fold_only_on_read() {
    let separate = two_nodes(NumaStats::SeparateClass { threshold: 10 }, 4096);
    let per_cpu = two_nodes(NumaStats::PerCpu, 4096);
    for allocator in [&separate, &per_cpu] {
        let held: Vec<_> = (0..11).map(|_| allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap()).collect();
        allocator.background().run_due_work(0, 1_000_000_000);
        assert_eq!(allocator.counters().numa_event(NumaEvent::Hit), 11);
        allocator.free_bulk(held).unwrap();
    }
    // The 11th passed 10: all 11 went over, nothing stays.
    assert_eq!(separate.zones()[0].state().vmstat().numa_folded(NumaEvent::Hit), 11);
    // Per-CPU counters have no threshold and the periodic pass leaves them: nothing folded.
    assert_eq!(per_cpu.zones()[0].state().vmstat().numa_folded(NumaEvent::Hit), 0);
}

#[test]
fn buddy_path_allocations_count_too() {
    // Order 5 is not cached in pagesets: the allocation comes from the buddy directly.
    for numa in MODES {
        let allocator = two_nodes(numa, 4096);
        let block = allocator.alloc_pages(5, AllocRequest::KERNEL).unwrap();
        assert_eq!(allocator.counters().pgalloc_pages(ZoneType::Normal), 32);
        let hits = if numa == NumaStats::Disabled { 0 } else { 1 };
        assert_eq!(allocator.counters().numa_event(NumaEvent::Hit), hits, "{numa:?}");
        allocator.free_pages(block).unwrap();
        assert_eq!(allocator.counters().pgfree_pages(), 32);
    }
}

#[test]
fn the_pressure_threshold_holds_while_background_reclaim_is_awake() {
    let allocator = two_nodes(NumaStats::ZoneStat { threshold: None }, 1 << 16);
    let zone = &allocator.zones()[0];
    let params = zone.state().params().clone();
    assert_ne!(params.stat_threshold, params.pressure_stat_threshold, "the test needs two different values");
    assert_eq!(u32::from(zone.state().vmstat().stat_threshold()), params.stat_threshold);
    allocator.background().wake_kswapd(0);
    assert_eq!(u32::from(zone.state().vmstat().stat_threshold()), params.pressure_stat_threshold);
    assert_eq!(
        u32::from(allocator.zones()[1].state().vmstat().stat_threshold()),
        params.stat_threshold,
        "node 1 sleeps"
    );
    assert!(allocator.background().run_kswapd(0));
    assert_eq!(u32::from(zone.state().vmstat().stat_threshold()), params.stat_threshold, "asleep again");
}

#[test]
fn the_dump_has_the_kernel_lines_in_the_kernel_order() {
    let allocator = two_nodes(NumaStats::PerCpu, 4096);
    let block = allocator.alloc_pages(2, AllocRequest::KERNEL).unwrap();
    let mut text = String::new();
    pagealloc::views::write_vmstat(&mut text, &allocator).unwrap();
    let value = |name: &str| -> u64 {
        let line = text.lines().find(|line| line.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("{name}"));
        line.split(' ').nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(value("nr_free_pages"), allocator.counters().buddy_free_pages());
    assert_eq!((value("numa_hit"), value("numa_local"), value("numa_miss")), (1, 1, 0));
    assert_eq!((value("pgalloc_normal"), value("pgalloc_dma32"), value("pgfree")), (4, 0, 0));
    let names: Vec<&str> = text.lines().map(|line| line.split(' ').next().unwrap()).collect();
    let position = |name| names.iter().position(|n| *n == name).unwrap();
    assert!(position("nr_free_pages") < position("numa_hit"));
    assert!(position("numa_other") < position("pgalloc_dma"));
    assert!(position("pgalloc_device") < position("pgfree"));
    allocator.free_pages(block).unwrap();
}

#[test]
fn thresholds_outside_their_ranges_are_rejected() {
    for numa in [
        NumaStats::ZoneStat { threshold: Some(31) },
        NumaStats::ZoneStat { threshold: Some(32_766) },
        NumaStats::SeparateClass { threshold: 0 },
        NumaStats::SeparateClass { threshold: u16::MAX },
    ] {
        let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 4096).policy(policy(numa));
        assert!(
            matches!(PageAllocator::build(builder, TestPlatform::new(1)), Err(BuildError::InvalidPolicy(_))),
            "{numa:?}"
        );
    }
}

#[test]
fn numa_modes_print_and_parse_back() {
    let more = [NumaStats::ZoneStat { threshold: Some(32_765) }, NumaStats::SeparateClass { threshold: 4096 }];
    for numa in MODES.into_iter().chain(more) {
        assert_eq!(NumaStats::parse(&numa.to_string()), Some(numa), "{numa}");
    }
    for bad in ["threshold-31", "threshold-32766", "threshold-", "separate-class-0", "separate-class-65534", "percpu"] {
        assert_eq!(NumaStats::parse(bad), None, "{bad}");
    }
}

/// One Normal zone, every allocation through the buddy, the free count in per-CPU diffs.
fn drifting(pages: u64, cpus: usize) -> PageAllocator<TestPlatform> {
    let mut policy = preset("global-lock");
    policy.vmstat.free_pages = pagealloc::policy::FreePagesCount::PerCpuDiffs;
    one_normal_zone(pages, policy, cpus)
}

#[test]
fn the_free_count_moves_only_when_a_diff_passes_the_threshold() {
    let allocator = drifting(1 << 16, 2);
    let zone = &allocator.zones()[0];
    let threshold = u64::from(zone.state().vmstat().stat_threshold());
    // 2 CPUs (fls 2), 256 MiB = 2 units of 128 MiB (fls 2): 2 * 2 * (1 + 2).
    assert_eq!(threshold, 12);
    let start = zone.free_pages();
    let mut held: Vec<_> = (0..threshold).map(|_| allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap()).collect();
    assert_eq!(zone.free_pages(), start, "12 pages stay in CPU 0's diff");
    assert_eq!(allocator.zone_free_pages_snapshot(0), start - threshold);
    held.push(allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap());
    assert_eq!(zone.free_pages(), start - 13, "the 13th passes 12: all 13 are published");
    // CPU 1 frees 5: its own diff, +5; the periodic pass of CPU 1 folds it.
    allocator.platform().set_cpu(1);
    for block in held.drain(..5) {
        allocator.free_pages(block).unwrap();
    }
    assert_eq!((zone.free_pages(), allocator.zone_free_pages_snapshot(0)), (start - 13, start - 8));
    allocator.check_invariants().unwrap();
    allocator.background().run_due_work(1, 1_000_000_000);
    assert_eq!(zone.free_pages(), start - 8);
    allocator.free_bulk(held).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn below_the_drift_mark_the_safe_check_sees_what_the_published_count_hides() {
    let cpus = 64;
    let allocator = drifting(1 << 14, cpus);
    let zone = &allocator.zones()[0];
    let params = zone.state().params().clone();
    let threshold = u64::from(params.stat_threshold);
    let marks = params.watermarks;
    // 64 CPUs of threshold 14 can hide 896 pages, more than low - min: the mark is set.
    assert_eq!(threshold, 14);
    assert!(cpus as u64 * threshold > marks.low_pages - marks.min_pages);
    assert_eq!(zone.state().vmstat().percpu_drift_mark_pages(), marks.high_pages + cpus as u64 * threshold);
    // CPUs 1..64 each take `threshold` pages: all of it stays in their diffs.
    let mut held = Vec::new();
    for cpu in 1..cpus {
        allocator.platform().set_cpu(cpu);
        held.extend((0..threshold).map(|_| allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap()));
    }
    // CPU 0 takes pages until the exact count is at the low mark.
    allocator.platform().set_cpu(0);
    while allocator.zone_free_pages_snapshot(0) > marks.low_pages {
        held.push(allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap());
    }
    let published = zone.free_pages();
    assert!(published > marks.low_pages + (cpus as u64 - 2) * threshold, "published {published}");
    assert!(published < zone.state().vmstat().percpu_drift_mark_pages());
    use pagealloc::request::WatermarkLevel;
    assert!(allocator.zone_watermark_ok(0, 0, WatermarkLevel::Low, ZoneType::Normal), "the published count passes");
    assert!(!allocator.zone_watermark_ok_safe(0, 0, WatermarkLevel::Low, ZoneType::Normal), "the exact one does not");
    assert!(allocator.zone_watermark_ok_safe(0, 0, WatermarkLevel::Min, ZoneType::Normal));
    allocator.check_invariants().unwrap();
    allocator.free_bulk(held).unwrap();
    allocator.check_invariants().unwrap();
}

#[test]
fn the_published_count_is_exact_by_default() {
    let allocator = two_nodes(NumaStats::PerCpu, 4096);
    let block = allocator.alloc_pages(5, AllocRequest::KERNEL).unwrap();
    assert_eq!(allocator.zones()[0].free_pages(), allocator.zone_free_pages_snapshot(0));
    assert_eq!(allocator.zones()[0].state().vmstat().percpu_drift_mark_pages(), 0);
    allocator.free_pages(block).unwrap();
}

/// The published count is the true count minus the unfolded diffs, so it may be negative
/// for a while; stored clamped at 0 it would lose the difference for good (Linux keeps
/// NR_FREE_PAGES signed and clamps on read, zone_page_state()).
#[test]
fn a_negative_published_free_count_is_kept_and_clamped_only_on_read() {
    let cpus = 64;
    let allocator = drifting(1 << 13, cpus);
    let zone = &allocator.zones()[0];
    let threshold = u64::from(zone.state().vmstat().stat_threshold());
    assert_eq!(threshold, 14);
    // CPU 0 takes a page for each of CPUs 1..64 to free: `threshold` each, all of it
    // kept in their diffs (+14 each, 882 hidden from the published count).
    let hidden = (cpus as u64 - 1) * threshold;
    let mut held: Vec<_> = (0..hidden).map(|_| allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap()).collect();
    for cpu in 1..cpus {
        allocator.platform().set_cpu(cpu);
        for block in held.drain(..threshold as usize) {
            allocator.free_pages(block).unwrap();
        }
    }
    allocator.platform().set_cpu(0);
    assert_eq!(allocator.zone_free_pages_snapshot(0), zone.state().managed_pages());
    // A contiguous run takes all but one pageblock: the true count, 512, is below what
    // the diffs hide, so the published count goes negative.
    let run = allocator.alloc_contig(zone.state().managed_pages() - 512, 512, AllocRequest::KERNEL).unwrap();
    let exact = allocator.zone_free_pages_snapshot(0);
    assert_eq!(exact, 512);
    assert_eq!(zone.free_pages(), 0, "read clamped at 0");
    assert_eq!(zone.free_pages_signed(), exact as i64 - hidden as i64, "stored signed");
    allocator.check_invariants().unwrap();
    // Each CPU's fold brings the published count back to the true one.
    for cpu in 1..cpus {
        allocator.background().run_due_work(cpu, 1_000_000_000);
    }
    assert_eq!(zone.free_pages(), exact, "the published count after every diff is folded");
    allocator.check_invariants().unwrap();
    allocator.free_contig(run).unwrap();
    allocator.check_invariants().unwrap();
}
