use clap::Parser;

use super::super::{run_benchmarks, BenchArgs, RunResult};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    bench: BenchArgs,
}

fn sim(args: &str) -> Vec<RunResult> {
    let words = ["bench"].into_iter().chain(args.split_whitespace()).chain(["--sim", "--memory-gib", "1"]);
    run_benchmarks(&Cli::parse_from(words).bench).expect("the simulated bench runs")
}

fn median(spread: Option<super::super::Spread>) -> f64 {
    spread.expect("timed").median
}

#[test]
fn a_simulated_bench_is_deterministic_and_times_every_phase() {
    let first = sim("rand --cpus 4 -x 1 -x 4 --iterations 1");
    let again = sim("rand --cpus 4 -x 1 -x 4 --iterations 1");
    assert_eq!(first.len(), 2);
    for (a, b) in first.iter().zip(&again) {
        assert_eq!((median(a.alloc_ns), median(a.free_ns)), (median(b.alloc_ns), median(b.free_ns)));
        assert!(median(a.alloc_ns) > 0.0 && median(a.free_ns) > 0.0);
        assert!(a.pair_ns.is_none() && a.sim_costs.is_some());
    }
    let repeat = sim("repeat --cpus 2 -x 2 --iterations 1");
    assert!(median(repeat[0].pair_ns) > 0.0 && repeat[0].alloc_ns.is_none());
}

#[test]
fn frees_into_other_cpus_memory_show_as_line_transfers() {
    // bulk frees its own blocks; rand on 4 CPUs frees mostly blocks the 3 others took.
    let costs = |args: &str| sim(args)[0].sim_costs.expect("simulated");
    let own = costs("bulk --cpus 4 -x 4 --iterations 1");
    let mixed = costs("rand --cpus 4 -x 4 --iterations 1");
    assert!(own.line_transfers < 0.05, "{own:?}");
    assert!(mixed.line_transfers > 10.0 * own.line_transfers.max(0.01), "{mixed:?} against {own:?}");
}

#[test]
fn one_zone_lock_queues_where_per_cpu_arenas_do_not() {
    let bulk =
        |preset: &str| sim(&format!("bulk --cpus 4 -x 4 --iterations 1 --preset {preset}"))[0].sim_costs.unwrap();
    let (arenas, one_lock) = (bulk("pagealloc"), bulk("global-lock"));
    assert_eq!(arenas.zone_lock_wait_ns, 0.0, "each CPU allocates and frees in its own arena");
    assert!(one_lock.zone_lock_contended_pct > 50.0, "{one_lock:?}");
}

#[test]
fn simulated_frag_reports_every_round() {
    let results = sim("frag --cpus 2 -x 2 --iterations 1 --frag-rounds 3");
    let huge = results[0].free_huge_pct.as_ref().expect("frag reports its rounds");
    assert_eq!(huge.len(), 3);
    assert!(huge.iter().all(|&pct| (0.0..=50.0).contains(&pct)), "at most the free half: {huge:?}");
    assert_eq!(results[0].pack_moves.as_ref().map(Vec::len), Some(3));
    assert!(median(results[0].alloc_ns) > 0.0 && median(results[0].free_ns) > 0.0);
}

#[test]
fn sim_thread_counts_default_to_powers_of_two_and_the_machine() {
    let cli = Cli::parse_from(["bench", "bulk", "--sim", "--cpus", "12"]);
    assert_eq!(cli.bench.thread_counts(), [1, 2, 4, 8, 12]);
    assert_eq!(cli.bench.threads_max(), 12);
    let named = Cli::parse_from(["bench", "bulk", "--sim", "--topology", "2s-128cpu"]);
    assert_eq!((named.bench.sim_cpus(), named.bench.threads_max()), (128, 128), "the whole topology");
    assert_eq!(named.bench.thread_counts(), [1, 2, 4, 8, 16, 32, 64, 128]);
    let real = Cli::parse_from(["bench", "bulk", "--threads-max", "3"]);
    assert_eq!(real.bench.thread_counts(), [1, 2, 3]);
}
