//! The real allocator on simulated CPUs: invariants hold, runs repeat exactly, and the
//! simulator is fast enough for 224-CPU experiments.

use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
use pagealloc_sim::engine::Next;
use pagealloc_sim::{Calibration, Engine, MetadataLayout, SimPlatform, SimStats, Topology};

/// What the part of a run after its warm-up cost.
#[derive(Debug, PartialEq)]
struct Measured {
    sim: SimStats,
    /// Zone-lock wait after the warm-up, as the allocator's locks count it.
    zone_lock_wait_ns: u64,
}

/// page_bench03-like: every CPU loops alloc(order) + free, with `compute_ns` between.
/// Returns the CPU clocks, costs and steps of the part after `warm_ns` (the cold start,
/// when every CPU refills from cold metadata at once, is left out).
fn page_bench(topology: Topology, preset: &str, order: u8, warm_ns: u64, end_ns: u64) -> (Vec<u64>, Measured, u64) {
    let platform = SimPlatform::new(topology, Calibration::XEON);
    let sim = platform.handle();
    let policy = pagealloc::presets::find(preset).unwrap().policy;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18).policy(policy);
    let allocator = PageAllocator::build(builder, platform).unwrap();
    let cpus: Vec<usize> = (0..sim.nr_cpus()).collect();
    let step = |_cpu| {
        let block = allocator.alloc_pages(order, AllocRequest::USER_MOVABLE).expect("memory");
        sim.advance(100);
        allocator.free_pages(block).unwrap();
        Next::Continue
    };
    Engine::new(sim).run(&cpus, warm_ns, step);
    let warm_clocks: Vec<u64> = cpus.iter().map(|&cpu| sim.clock_ns(cpu)).collect();
    let warm_wait_ns = allocator.counters().zone_lock_stats().wait_ns;
    let steps = Engine::new(sim).run(&cpus, end_ns, step);
    allocator.pagesets().drain_all();
    assert_eq!(allocator.check_invariants().unwrap().free_pages, allocator.counters().managed_pages());
    let clocks = cpus.iter().zip(&warm_clocks).map(|(&cpu, warm)| sim.clock_ns(cpu) - warm).collect();
    let zone_lock_wait_ns = allocator.counters().zone_lock_stats().wait_ns - warm_wait_ns;
    (clocks, Measured { sim: sim.stats(), zone_lock_wait_ns }, steps)
}

#[test]
fn same_inputs_give_the_same_run() {
    let first = page_bench(Topology::SERVER_128, "mainline", 0, 1_000_000, 3_000_000);
    let second = page_bench(Topology::SERVER_128, "mainline", 0, 1_000_000, 3_000_000);
    assert_eq!(first, second);
    assert!(first.2 > 1_000);
}

/// Zone-lock wait as a share of all CPU time, in percent (the seeds' "lock contend%").
fn contend_pct(clocks: &[u64], measured: &Measured) -> f64 {
    measured.zone_lock_wait_ns as f64 * 100.0 / clocks.iter().sum::<u64>() as f64
}

#[test]
fn per_cpu_pagesets_cut_simulated_zone_lock_contention() {
    let start = std::time::Instant::now();
    let (clocks, with_pcp, steps) = page_bench(Topology::SERVER_128, "mainline", 0, 1_000_000, 3_000_000);
    let ops_per_sec = 2.0 * steps as f64 / start.elapsed().as_secs_f64();
    let (clocks_off, without, _) = page_bench(Topology::SERVER_128, "global-lock", 0, 1_000_000, 3_000_000);
    let (on, off) = (contend_pct(&clocks, &with_pcp), contend_pct(&clocks_off, &without));
    eprintln!("zone lock contention: {on:.2}% with pagesets, {off:.1}% without; {ops_per_sec:.0} sim ops/s");
    assert!(off > 50.0, "one zone lock for 128 CPUs saturates: {off:.1}%");
    assert!(on < 5.0, "pagesets take almost every request off the zone lock: {on:.2}%");
}

/// Zone-lock hold time of a refill and drain cycle on one CPU, under a metadata layout.
fn zone_hold_ns(layout: MetadataLayout) -> u64 {
    let platform = SimPlatform::with_layout(Topology::flat(1), Calibration::XEON, layout);
    let sim = platform.handle();
    let policy = pagealloc::presets::find("mainline").unwrap().policy;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16).policy(policy);
    let allocator = PageAllocator::build(builder, platform).unwrap();
    let blocks: Vec<_> = (0..1_000).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()).collect();
    for block in blocks {
        allocator.free_pages(block).unwrap();
    }
    allocator.pagesets().drain_all();
    sim.stats().zone_lock.hold_ns
}

#[test]
fn linuxs_struct_page_makes_zone_lock_holds_longer_than_our_records() {
    let ours = zone_hold_ns(MetadataLayout::Pagealloc);
    let linux = zone_hold_ns(MetadataLayout::LinuxStructPage);
    // A line per frame instead of five frames per line: most metadata touches under the
    // lock miss instead of hitting a line the previous frame brought in.
    assert!(linux > 2 * ours, "zone lock held {linux} ns with struct page, {ours} ns with ours");
}

/// The 768-CPU EPYC 9965 (two sockets of 192 cores, 2 threads each, 12 LLC instances per
/// socket), every CPU allocating: CPU ids past 256 share lines across dies and sockets,
/// queue on locks and keep the invariants.
#[test]
fn seven_hundred_and_sixty_eight_cpus_run_and_repeat() {
    let topology = Topology::SERVER_768;
    assert_eq!(topology.cpus(), 768);
    let first = page_bench(topology.clone(), "mainline", 0, 1_000_000, 2_000_000);
    assert_eq!(first.0.len(), 768);
    assert!(first.0.iter().all(|&clock| clock > 0), "every CPU ran");
    assert!(first.1.sim.line_transfers > 0, "lines crossed between CPUs");
    assert_eq!(first, page_bench(topology, "mainline", 0, 1_000_000, 2_000_000));
}
