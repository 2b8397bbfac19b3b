//! The experiments `reproduce` runs, each with its published table, presets and run
//! function.

use super::experiment::Experiment;
use super::frag_thpcompact::{frag_thpcompact, FRAG_PRESETS};
use super::frag_thpfioscale::frag_thpfioscale;
use super::frag_thpfioscale_sweep::{frag_thpfioscale_sweep, SWEEP_PRESETS};
use super::kbuild::{kbuild, kbuild_768};
use super::llfree_frag::{llfree_frag, LLFREE_FRAG_PRESETS};
use super::lru_page_fault::lru_page_fault1;
use super::netperf::netperf_tcp;
use super::page_fault::page_fault1;
use super::pairs::{pairs_roles, sctp, unix};
use super::published;
use super::trunc::trunc;
use super::vmstat::page_bench03;

const PCP_PRESETS: &[&str] = &["base", "patch1", "patch3", "patch5", "patch7", "patch9"];

pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "pcp-kbuild",
        summary: "2023 PCP auto-tuning, kbuild on 224 CPUs: build time, zone lock contention, free_high, alloc_zone",
        published: &published::PCP_KBUILD,
        presets: PCP_PRESETS,
        run: kbuild,
        cpus: 224,
        speedup_of: None,
        real_threads: false,
        job_host_s: 20.4,
    },
    Experiment {
        name: "pcp-kbuild-768",
        summary: "2023 PCP auto-tuning, kbuild on a 768-CPU 2-socket EPYC 9965 (Turin): what the series does in 2025",
        published: &published::PCP_KBUILD_768,
        presets: PCP_PRESETS,
        run: kbuild_768,
        cpus: 768,
        speedup_of: None,
        real_threads: false,
        job_host_s: 29.6,
    },
    Experiment {
        name: "pcp-sctp",
        summary: "2023 PCP auto-tuning, netperf SCTP_STREAM_MANY, 64 pairs on 128 CPUs",
        published: &published::PCP_SCTP,
        presets: PCP_PRESETS,
        run: sctp,
        cpus: 128,
        speedup_of: None,
        real_threads: false,
        job_host_s: 0.6,
    },
    Experiment {
        name: "pcp-unix",
        summary: "2023 PCP auto-tuning, lmbench AF_UNIX, 16 pairs on a 128-CPU machine",
        published: &published::PCP_UNIX,
        presets: PCP_PRESETS,
        run: unix,
        cpus: 128,
        speedup_of: None,
        real_threads: false,
        job_host_s: 0.3,
    },
    Experiment {
        name: "pcp-pairs-roles",
        summary: "2023 PCP auto-tuning, patch 9's explanation tested: SCTP and AF_UNIX pairs whose tasks trade CPUs or share one",
        published: &published::PCP_PAIRS_ROLES,
        presets: &["base", "patch3", "patch7", "patch9"],
        run: pairs_roles,
        cpus: 128,
        speedup_of: None,
        real_threads: false,
        job_host_s: 5.7,
    },
    Experiment {
        name: "highorder-trunc",
        summary: "2022 high-order PCP follow-up, trunc: one CPU frees a long run of page cache",
        published: &published::HIGHORDER_TRUNC,
        presets: &["vanilla-5.17", "revert-highpcp", "highpcp-full"],
        run: trunc,
        cpus: 80,
        speedup_of: None,
        real_threads: false,
        job_host_s: 0.3,
    },
    Experiment {
        name: "highorder-page-fault1",
        summary: "2022 high-order PCP follow-up, page_fault1 processes on 80 CPUs",
        published: &published::HIGHORDER_PAGE_FAULT1,
        presets: &["vanilla-5.17", "highpcp-full"],
        run: page_fault1,
        cpus: 80,
        speedup_of: None,
        real_threads: false,
        job_host_s: 1.9,
    },
    Experiment {
        name: "highorder-netperf-tcp",
        summary: "2022 high-order PCP follow-up, netperf TCP on a small-cache machine, with top-5 frame reuse",
        published: &published::HIGHORDER_NETPERF_TCP,
        presets: &["vanilla-5.17", "revert-highpcp", "highpcp-full"],
        run: netperf_tcp,
        cpus: 8,
        speedup_of: None,
        real_threads: false,
        job_host_s: 0.1,
    },
    Experiment {
        name: "vmstat-page-bench03",
        summary: "2017 NUMA statistics, page_bench03 on 88 CPUs: the cost of NUMA counters by threshold and design",
        published: &published::VMSTAT_PAGE_BENCH03,
        presets: &["revert-highpcp"],
        run: page_bench03,
        cpus: 88,
        speedup_of: None,
        real_threads: false,
        job_host_s: 10.4,
    },
    Experiment {
        name: "lru-page-fault1",
        summary: "2018 lru_lock RFC, page_fault1 processes and threads on 88 CPUs: LRU adds and munmap removals",
        published: &published::LRU_PAGE_FAULT1,
        presets: &["lru-k1", "lru-k2", "lru-k3", "lru-k4"],
        run: lru_page_fault1,
        cpus: 88,
        speedup_of: Some("faults_per_sec"),
        real_threads: false,
        job_host_s: 46.5,
    },
    Experiment {
        name: "frag-thpfioscale",
        summary: "2018 fragmentation avoidance, thpfioscale on 1 and 2 sockets: extfrag events, huge faults, fault latency",
        published: &published::FRAG_THPFIOSCALE,
        presets: FRAG_PRESETS,
        run: frag_thpfioscale,
        cpus: 48,
        speedup_of: Some("extfrag_events"),
        real_threads: false,
        job_host_s: 42.3,
    },
    Experiment {
        name: "frag-thpfioscale-sweep",
        summary: "frag-thpfioscale's unpublished parameters (memory, slab and metadata rates) varied one at a time, 1 socket, no madvise",
        published: &published::FRAG_THPFIOSCALE_SWEEP,
        presets: SWEEP_PRESETS,
        run: frag_thpfioscale_sweep,
        cpus: 8,
        speedup_of: Some("extfrag_events"),
        real_threads: false,
        job_host_s: 90.6,
    },
    Experiment {
        name: "frag-thpcompact",
        summary: "2018 fragmentation avoidance and successors, thpcompact-like on 4 CPUs: huge faults, latency, free memory obtainable as order 9",
        published: &published::FRAG_THPCOMPACT,
        presets: FRAG_PRESETS,
        run: frag_thpcompact,
        cpus: 4,
        speedup_of: Some("huge_fault_pct"),
        real_threads: false,
        job_host_s: 0.9,
    },
    Experiment {
        name: "llfree-frag",
        summary: "LLFree's frag benchmark on real threads, 4 GiB, 2 threads, 100 rounds: memory free as whole 2 MiB blocks",
        published: &published::LLFREE_FRAG,
        presets: LLFREE_FRAG_PRESETS,
        run: llfree_frag,
        cpus: 2,
        speedup_of: None,
        real_threads: true,
        job_host_s: 5.2,
    },
];

pub fn find(name: &str) -> Option<&'static Experiment> {
    EXPERIMENTS.iter().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_tables_are_well_formed_and_presets_exist() {
        for experiment in EXPERIMENTS {
            let table = experiment.published;
            for (preset, values) in table.rows {
                assert_eq!(values.len(), table.columns.len(), "{}: {preset}", experiment.name);
                assert!(pagealloc::presets::find(preset).is_some(), "{}: no preset {preset}", experiment.name);
            }
            for preset in experiment.presets {
                assert!(pagealloc::presets::find(preset).is_some(), "{}: no preset {preset}", experiment.name);
            }
            // A withheld table has no rows; one that has starts from our baseline.
            if let Some((first, _)) = table.rows.first() {
                assert_eq!(*first, experiment.presets[0], "{}: both tables start from one baseline", experiment.name);
            }
        }
    }
}
