//! The seeds' machines' published figures, each with its source: the parts' clocks,
//! core-to-core transfers, cache and memory latency, locked RMWs, single-core and socket
//! memory bandwidth, and a TLB shootdown's cost to its caller. The rules that turn them
//! into a machine are in `seeds`.

use pagealloc_sim::Topology;

use super::seed_hardware::{cas, cited, mlc_load, SeedHardware, SocketBandwidth};

/// A TLB shootdown's cost to the caller on bare metal, by targets: (targets, ns).
pub const SHOOTDOWN_CALLER_NS: [(u64, u64); 2] = [(1, 775), (3, 910)];
pub const SHOOTDOWN_SOURCE: &str = "bare-metal Haswell, MADV_DONTNEED and touch of one page with 1 and 3 other \
     threads busy, 661 ns alone, 1436 and 1571 ns (the unpatched kernel): N. Amit, \
     lore.kernel.org/lkml/20190525082203.6531-1-namit@vmware.com";

const NV: &str = "github.com/nviennot/core-to-core-latency (CAS ping-pong, round trip / 2)";
const MLC_LEUVEN: &str = "github.com/hpcleuven/VscDocumentation, Intel MLC outputs";
const CSIT_HSW: &str =
    "github.com/FDio/csit docs/report/introduction/test_environment_sut_calib_hsw.rst (Intel MLC, E5-2699 v3)";
const INSTLAT: &str = "github.com/InstLatx64/InstLatx64, InstLatX64 LOCK ADD [m64], r64 latency";
const KERNCRAFT: &str = "github.com/RRZE-HPC/kerncraft machine files (likwid-bench single-core load)";
const AT_SKYLAKE_SP: &str = "anandtech.com/show/11544 (Skylake-SP vs EPYC, memory subsystem)";

/// Where the 2-socket EPYC 9965 (Turin) figures come from.
const IL_TURIN: &str = "github.com/InstLatx64/InstLatx64 AuthenticAMD0B10F10_K20_TurinD_03_CPUID (EPYC 9965)";
const NV_GENOA: &str =
    "nearest found, 2 x EPYC 9274F (Genoa, Zen 4): github.com/nviennot/core-to-core-latency issue 132";

/// The seeds' machines, and a 2-socket EPYC 9005 (Turin) of 2025, by topology.
pub const SEED_MACHINES: [SeedHardware; 7] = [
    SeedHardware {
        topology: Topology::SERVER_48,
        cpu: "Xeon E5-2670 v3 (Haswell-EP)",
        base_clock_mhz: cited(2300.0, "E5-2670 v3 and E5-2699 v3 @ 2.30GHz (CSIT testbed spec)"),
        line_smt_ns: cas(7.6, "nearest found, Broadwell-EP E5-2695 v4: NV"),
        line_same_socket_ns: mlc_load(47.0, CSIT_HSW),
        line_other_llc_ns: None,
        line_other_socket_ns: mlc_load(108.0, CSIT_HSW),
        llc_ns: cited(20.75, "E5-2660 v3: InstLatx64 HaswellEP2_NewMemLat (AIDA64)"),
        memory_ns: cited(99.0, CSIT_HSW),
        locked_rmw_cycles: cited(19.0, INSTLAT),
        load_gb_per_s: Some(cited(8.93, "E5-2695 v3: kerncraft HaswellEP_E5-2695v3.yml")),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 8.93), (2, 17.89), (3, 26.48), (4, 34.57), (5, 42.12), (6, 48.79),
                (7, 54.25), (8, 57.96), (9, 59.89), (10, 60.79), (11, 61.25), (12, 61.53),
            ],
            source: "nearest found, E5-2695 v3 (14 cores, its first 12): kerncraft HaswellEP_E5-2695v3.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_88,
        cpu: "Xeon E5-2699 v4 (Broadwell-EP)",
        base_clock_mhz: cited(2200.0, "E5-2699 v4 @ 2.20GHz (its model string)"),
        line_smt_ns: cas(7.6, NV),
        line_same_socket_ns: cas(44.0, "E5-2695 v4: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(118.0, "E5-2695 v4: NV"),
        llc_ns: cited(34.5, "E5-2699 v4, 16-32 MB region, 27-42 ns (midpoint): anandtech.com/show/11544"),
        memory_ns: cited(95.0, AT_SKYLAKE_SP),
        locked_rmw_cycles: cited(19.0, INSTLAT),
        load_gb_per_s: Some(cited(11.18, "E5-2697 v4: kerncraft BroadwellEP_E5-2697v4_CoD.yml")),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 11.18), (2, 20.81), (3, 28.81), (4, 34.03), (5, 35.76), (6, 35.69),
                (7, 35.50), (8, 35.32), (9, 35.17), (18, 69.98),
            ],
            source: "nearest found, E5-2697 v4 (18 cores, Cluster-on-Die: one domain of 9, then the socket): \
                     kerncraft BroadwellEP_E5-2697v4_CoD.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_80,
        cpu: "Xeon Gold 6248 class (Cascade Lake-SP)",
        base_clock_mhz: cited(2500.0, "Gold 6248 @ 2.50GHz: kerncraft CascadelakeSP_Gold-6248_SNC.yml"),
        line_smt_ns: cas(7.6, "8275CL: NV"),
        line_same_socket_ns: cas(47.0, "8275CL: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(134.0, "8275CL: NV"),
        llc_ns: cited(30.8, "Skylake-SP mesh L3, Intel-stated 77 cycles at 2.5 GHz: anandtech.com/show/11550"),
        memory_ns: cited(80.8, MLC_LEUVEN),
        locked_rmw_cycles: cited(18.0, INSTLAT),
        load_gb_per_s: Some(cited(12.96, KERNCRAFT)),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 12.96), (2, 25.66), (3, 37.66), (4, 47.04), (5, 54.00), (6, 58.37),
                (7, 60.24), (8, 60.91), (9, 61.07), (10, 61.43), (20, 125.17),
            ],
            source: "Gold 6248 (SNC: one domain of 10, then the socket): kerncraft \
                     CascadelakeSP_Gold-6248_SNC.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_128,
        cpu: "Xeon Platinum 8360Y class (Ice Lake-SP)",
        base_clock_mhz: cited(2400.0, "Platinum 8360Y @ 2.40GHz: kerncraft IcelakeSP_Platinum-8360Y.yml"),
        line_smt_ns: cas(8.1, "8375C: NV"),
        line_same_socket_ns: cas(51.0, "8375C: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(108.0, "8375C: NV"),
        llc_ns: cited(32.1, "nearest found, Skylake-SP mesh L3: 77 cycles at 2.4 GHz"),
        memory_ns: cited(89.2, MLC_LEUVEN),
        locked_rmw_cycles: cited(20.0, INSTLAT),
        load_gb_per_s: Some(cited(15.37, KERNCRAFT)),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 15.37), (2, 29.3), (3, 41.72), (4, 47.98), (6, 58.18), (8, 67.36), (10, 73.3),
                (12, 84.42), (14, 91.63), (15, 93.53), (16, 93.93), (17, 93.93), (18, 93.93), (36, 194.88),
            ],
            source: "Platinum 8360Y (two domains of 18, then the socket; 17 and 18 cores' 93.15 and 92.45 \
                     taken as 16's, more cores never slower): kerncraft pull 141 IcelakeSP_Platinum-8360Y.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_224,
        cpu: "Xeon Platinum 8480+ (Sapphire Rapids)",
        base_clock_mhz: cited(2000.0, "8480+ @ 2.00GHz: github.com/quattor/template-library-standard"),
        line_smt_ns: cas(8.1, "nearest found, Ice Lake-SP 8375C: NV"),
        line_same_socket_ns: cas(51.0, "nearest found, Ice Lake-SP 8375C: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(108.0, "nearest found, Ice Lake-SP 8375C: NV"),
        llc_ns: cited(38.5, "nearest found, Skylake-SP mesh L3: 77 cycles at 2.0 GHz"),
        memory_ns: cited(89.2, "nearest found, Ice Lake-SP 8360Y: github.com/hpcleuven/VscDocumentation, Intel MLC"),
        locked_rmw_cycles: cited(
            18.0,
            "Golden Cove (Alder Lake P-core) lock add 17.93 cycles: github.com/InstLatx64/InstLatx64",
        ),
        load_gb_per_s: Some(cited(14.49, "Platinum 8470: kerncraft SapphireRapids_Platinum-8470.yml")),
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[
                (1, 14.49), (2, 28.11), (3, 39.39), (4, 50.84), (5, 59.63), (6, 65.12), (7, 68.12),
                (8, 69.10), (9, 69.26), (10, 69.26), (11, 69.26), (12, 69.26), (13, 69.26),
                (26, 140.10), (39, 215.63), (52, 304.60),
            ],
            source: "nearest found, Platinum 8470 (52 cores, SNC4: one domain of 13, then 2, 3 and 4 domains; \
                     10 to 13 cores' 69.12 to 68.71 taken as 9's): kerncraft pull 141 SapphireRapids_Platinum-8470.yml, MEM load",
        }),
    },
    SeedHardware {
        topology: Topology::SMALL_CACHE_8,
        cpu: "Core i7-6700K class (Skylake, 4 cores x 2 threads, 8 MiB LLC)",
        base_clock_mhz: cited(4000.0, "i7-6700K 4.0 GHz base: hexus.net review"),
        line_smt_ns: cas(6.9, "i7-6700K: NV"),
        line_same_socket_ns: cas(20.0, "i7-6700K: NV"),
        line_other_llc_ns: None,
        line_other_socket_ns: cas(20.0, "one socket: never used"),
        llc_ns: cited(10.49, "i7-7700K: InstLatx64 Kabylake_NewMemLat (AIDA64)"),
        memory_ns: cited(64.5, "i7-7700K: InstLatx64 Kabylake_NewMemLat (AIDA64)"),
        locked_rmw_cycles: cited(18.0, INSTLAT),
        load_gb_per_s: None,
        socket_bandwidth: Some(SocketBandwidth::Curve {
            load_gb_per_s: &[(1, 25.4), (2, 42.0), (4, 42.0)],
            source: "i7-6700K overclocked to 4.4 GHz with DDR4-3233, the author's own read test, flat from 2 \
                     threads (uncertain; no STREAM run found): rigaya34589.blog.fc2.com/blog-entry-660.html",
        }),
    },
    SeedHardware {
        topology: Topology::SERVER_768,
        cpu: "2 x EPYC 9965 (Turin, Zen 5c)",
        base_clock_mhz: cited(2250.0, IL_TURIN),
        line_smt_ns: cas(9.0, NV_GENOA),
        line_same_socket_ns: cas(22.5, NV_GENOA),
        line_other_llc_ns: Some(cas(100.0, NV_GENOA)),
        line_other_socket_ns: cas(197.0, NV_GENOA),
        llc_ns: cited(
            24.0,
            "nearest found, Genoa-X (Zen 4) L3: Milan-X's 50 cycles + 4 (chipsandcheese.com/p/genoa-x-server-v-cache-round-2), 54 cycles at 2.25 GHz",
        ),
        memory_ns: cited(
            130.0,
            "EPYC 9355P (Turin) NPS1: 2 x 9575F at over 220 ns in NPS0, nearly 90 ns more \
             (chipsandcheese.com/p/evaluating-uniform-memory-access)",
        ),
        locked_rmw_cycles: cited(19.66, "Ryzen 9 9950X (Zen 5), InstLatX64 LOCK ADD [m64], r64: github.com/InstLatx64/InstLatx64"),
        load_gb_per_s: None,
        socket_bandwidth: Some(SocketBandwidth::Saturated(cited(
            468.0,
            "nearest found, 2 x EPYC 9755 (Turin) NPS1 STREAM copy 936354 MB/s, halved: \
             github.com/oracle-japan/ocitutorials content/hpc/benchmark/run-stream-e6",
        ))),
    },
];
