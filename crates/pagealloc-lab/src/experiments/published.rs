//! The seeds' published tables, as data, with their sources.

/// A published table: column names and, per preset, the values as printed.
#[derive(Debug)]
pub struct PublishedTable {
    pub source: &'static str,
    pub columns: &'static [&'static str],
    pub rows: &'static [(&'static str, &'static [f64])],
}

/// The 2023 PCP auto-tuning series (docs/glossary.md), kbuild (224 CPUs, 8 x make -j28):
/// build time and free_high and alloc_zone normalised to base = 100, lock contention in
/// percent.
pub const PCP_KBUILD: PublishedTable = PublishedTable {
    source: "\"mm: PCP high auto-tuning\" v3 (Huang Ying, 2023-10-16), kbuild table",
    columns: &["build_time", "lock_contend_pct", "free_high", "alloc_zone"],
    rows: &[
        ("base", &[100.0, 14.0, 100.0, 100.0]),
        ("patch1", &[99.5, 12.8, 19.5, 95.6]),
        ("patch3", &[99.4, 12.6, 7.1, 95.6]),
        ("patch5", &[98.6, 11.0, 8.1, 97.1]),
        ("patch7", &[95.1, 0.5, 2.8, 15.6]),
        ("patch9", &[95.0, 1.0, 8.8, 20.0]),
    ],
};

/// The same columns on the 768-CPU Turin: nothing has been published, so the table has no
/// rows and the report shows ours alone.
pub const PCP_KBUILD_768: PublishedTable = PublishedTable {
    source: "none published: a 2025 machine the 2023 series never ran on",
    columns: &["build_time", "lock_contend_pct", "free_high", "alloc_zone"],
    rows: &[],
};

/// Same source, netperf SCTP_STREAM_MANY (128 CPUs, 64 pairs).
pub const PCP_SCTP: PublishedTable = PublishedTable {
    source: "\"mm: PCP high auto-tuning\" v3 (Huang Ying, 2023-10-16), netperf SCTP_STREAM_MANY table",
    columns: &["score", "lock_contend_pct", "free_high", "alloc_zone", "cache_miss_pct"],
    rows: &[
        ("base", &[100.0, 2.1, 100.0, 100.0, 1.3]),
        ("patch1", &[99.4, 2.1, 99.4, 99.4, 1.3]),
        ("patch3", &[106.4, 1.3, 13.3, 106.3, 1.3]),
        ("patch5", &[106.0, 1.2, 13.2, 105.9, 1.3]),
        ("patch7", &[103.4, 1.9, 6.7, 90.3, 7.6]),
        ("patch9", &[108.6, 1.3, 13.7, 108.6, 1.3]),
    ],
};

/// Same source, lmbench3 AF_UNIX (128 CPUs, 16 pairs).
pub const PCP_UNIX: PublishedTable = PublishedTable {
    source: "\"mm: PCP high auto-tuning\" v3 (Huang Ying, 2023-10-16), lmbench3 UNIX table",
    columns: &["score", "lock_contend_pct", "free_high", "alloc_zone", "cache_miss_pct"],
    rows: &[
        ("base", &[100.0, 51.4, 100.0, 100.0, 0.2]),
        ("patch1", &[116.8, 46.1, 69.5, 104.3, 0.2]),
        ("patch3", &[199.1, 21.3, 7.0, 104.9, 0.2]),
        ("patch5", &[200.0, 20.8, 7.1, 106.9, 0.3]),
        ("patch7", &[191.6, 19.9, 6.8, 103.8, 2.8]),
        ("patch9", &[193.4, 21.7, 7.0, 104.7, 2.1]),
    ],
};

/// Same source, the SCTP and AF_UNIX tables' score and cache-miss columns side by side for
/// the presets `pcp-pairs-roles` runs.
pub const PCP_PAIRS_ROLES: PublishedTable = PublishedTable {
    source:
        "\"mm: PCP high auto-tuning\" v3 (Huang Ying, 2023-10-16), netperf SCTP_STREAM_MANY and lmbench3 UNIX tables",
    columns: &["sctp_score", "sctp_cache_miss_pct", "unix_score", "unix_cache_miss_pct"],
    rows: &[
        ("base", &[100.0, 1.3, 100.0, 0.2]),
        ("patch3", &[106.4, 1.3, 199.1, 0.2]),
        ("patch7", &[103.4, 7.6, 191.6, 2.8]),
        ("patch9", &[108.6, 1.3, 193.4, 2.1]),
    ],
};

/// The 2022 high-order PCP series (docs/glossary.md), patch 4: trunc on the 2-socket CascadeLake,
/// mean elapsed seconds (vanilla 5.17-rc3, revert of high-order PCP, the series).
pub const HIGHORDER_TRUNC: PublishedTable = PublishedTable {
    source:
        "\"Follow-up on high-order PCP caching\" (Mel Gorman, 2022-02-15), patch 4, trunc 2-socket CascadeLake Amean",
    columns: &["elapsed"],
    rows: &[("vanilla-5.17", &[529.0]), ("revert-highpcp", &[521.0]), ("highpcp-full", &[516.0])],
};

/// Same source, patch 5: netperf-tcp on the small-cache 1-socket Skylake, Hmean throughput
/// for message sizes 64, 1024, 16384 bytes.
pub const HIGHORDER_NETPERF_TCP: PublishedTable = PublishedTable {
    source: "\"Follow-up on high-order PCP caching\" (Mel Gorman, 2022-02-15), patch 5, netperf-tcp small-cache Skylake Hmean",
    columns: &["score_64", "score_1024", "score_16384"],
    rows: &[
        ("vanilla-5.17", &[938.95, 13206.52, 58410.86]),
        ("revert-highpcp", &[941.50, 13487.80, 60839.80]),
        ("highpcp-full", &[940.47, 13351.11, 61362.12]),
    ],
};

/// Same source, patch 4: will-it-scale page_fault1 processes on the 2-socket CascadeLake (80
/// CPUs), Hmean faults per second at several process counts.
pub const HIGHORDER_PAGE_FAULT1: PublishedTable = PublishedTable {
    source: "\"Follow-up on high-order PCP caching\" (Mel Gorman, 2022-02-15), patch 4, page_fault1-processes Hmean",
    columns: &["faults_per_sec_2", "faults_per_sec_8", "faults_per_sec_30", "faults_per_sec_79"],
    rows: &[
        ("vanilla-5.17", &[2_694_662.26, 9_642_169.10, 25_157_348.61, 25_928_742.64]),
        ("highpcp-full", &[2_696_801.07, 9_647_444.94, 25_111_707.15, 25_920_933.41]),
    ],
};

/// The 2017 NUMA-statistics series (Kemi Wang), page_bench03: figures withheld on purpose,
/// so the result comes from the mechanism alone. Columns are ours.
pub const VMSTAT_PAGE_BENCH03: PublishedTable = PublishedTable {
    source: "withheld: \"mm: NUMA stats code cleanup and enhancement\" (Kemi Wang, 2017), page_bench03 sweep",
    columns: &["cycles_per_pair", "pairs_per_sec", "counter_wait_pct"],
    rows: &[],
};

/// The 2018 lru_lock scalability RFC (Daniel Jordan), will-it-scale page_fault1: figures
/// withheld on purpose. Columns are ours.
pub const LRU_PAGE_FAULT1: PublishedTable = PublishedTable {
    source: "withheld: \"lru_lock scalability\" RFC (Daniel Jordan, 2018), will-it-scale page_fault1",
    columns: &[
        "faults_per_sec",
        "speedup_pct",
        "lru_lock_wait_pct",
        "lru_batch_lock_wait_pct",
        "zone_lock_wait_pct",
        "mm_wait_pct",
    ],
    rows: &[],
};

/// LLFree's frag benchmark: its figures are a peer's, not a preset's, so the table has no
/// rows; they are in the source line (LLFree's own benchmark, run on the development host:
/// docs/benchmarks.md).
pub const LLFREE_FRAG: PublishedTable = PublishedTable {
    source: "LLFree frag (eval/src/bin/frag.rs), this machine, 4 GiB, 2 threads: 0% free as whole 2 MiB blocks after 10 rounds, 7.9% after 50, 48.4% after 100 (shared/design/peers.md)",
    columns: &["free_huge_pct_10", "free_huge_pct_50", "free_huge_pct_100", "pack_moves_pages", "alloc_ns", "free_ns"],
    rows: &[],
};

/// The sweep has no published counterpart: the seed gives one point. Its goal rows are the
/// seed's: lowzone −49% and the series more than −94% extfrag events against vanilla.
pub const FRAG_THPFIOSCALE_SWEEP: PublishedTable = PublishedTable {
    source: "none (the seed gives one point: lowzone -49%, the whole series > -94% extfrag events against vanilla)",
    columns: &["extfrag_events", "extfrag_by_movable", "polluting_fallbacks", "huge_fault_pct", "pages_reclaimed"],
    rows: &[],
};

/// thpcompact has no published table for these presets; the goal is upstream's: proactive
/// compaction made 98% of free memory obtainable as huge pages (v5.9, "mm: Proactive
/// compaction"). `obtainable_huge_ceiling_pct` is the most any packing could reach with the
/// run's free memory; `exit_obtainable_huge_pct` is read again after the anonymous memory is
/// released, with the file pages still cached.
pub const FRAG_THPCOMPACT: PublishedTable = PublishedTable {
    source: "none for these presets; goal from \"mm: Proactive compaction\" (v5.9): 98% of free memory obtainable as huge pages",
    columns: &[
        "huge_fault_pct",
        "huge_fault_us_p50",
        "huge_fault_us_p95",
        "obtainable_huge_pct",
        "obtainable_huge_ceiling_pct",
        "exit_obtainable_huge_pct",
        "compact_stall",
        "pgmigrate_success",
    ],
    rows: &[],
};

/// The 2018 fragmentation-avoidance series (docs/glossary.md), patch 1 (lowzone), 1-socket
/// Skylake, thpfioscale without madvise, 4 fio threads and 1 THP thread: extfrag events
/// below order 9, their breakdown by requested type, mean base-fault latency (us) and the
/// huge-fault share. The same source gives, with MADV_HUGEPAGE, 291,392 -> 191,187 events,
/// fault-base 1495.14 -> 1467.55 us, fault-huge 1098.48 -> 1127.11 us, 78.57% -> 77.64%
/// huge; and on the 2-socket Haswell (5 THP threads, no madvise) 215,698 -> 200,210 events,
/// fault-base 1350.05 -> 1346.45 us, fault-huge 4181.01 -> 3418.60 us, 1.15% -> 0.78% huge.
/// The series as a whole (patches 1-4) cut the events by more than 94%.
pub const FRAG_THPFIOSCALE: PublishedTable = PublishedTable {
    source: "\"Fragmentation avoidance improvements\" v5 (Mel Gorman, 2018), patch 1, thpfioscale 1-socket Skylake, no madvise",
    columns: &[
        "extfrag_events",
        "extfrag_by_unmovable",
        "extfrag_by_movable",
        "extfrag_by_reclaimable",
        "fault_base_us",
        "huge_fault_pct",
    ],
    rows: &[
        ("vanilla-4.20", &[804_694.0, 3_816.0, 800_845.0, 33.0, 662.92, 0.0]),
        ("lowzone", &[408_912.0, 735.0, 408_135.0, 42.0, 653.58, 0.0]),
    ],
};
