//! Seed inputs mirroring the property tests' strategies (`crates/pagealloc/tests/
//! build_input.rs` and `tests/model.rs`) and their fixed cases, drawn from a fixed-seed
//! generator so the corpus is reproducible byte for byte.

// Inverted ranges are among the property test's cases.
#![allow(clippy::reversed_empty_ranges)]

use crate::description::{
    Description, HighFraction, Layout, LlcDesc, Mib, Nodes, Override, Pages, PolicyDesc, RangeDesc, TunablesDesc,
    ZoneDesc,
};
use crate::encode::encode_checked;
use crate::operations::{Header, Input, MachineChoice, Op, Req};

/// SplitMix64: small, fixed, and enough for seeds.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `range` (start inclusive, end exclusive).
    pub fn below(&mut self, range: std::ops::Range<u64>) -> u64 {
        range.start + self.next_u64() % (range.end - range.start)
    }

    /// An index drawn with the given weights.
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let mut pick = self.below(0..weights.iter().sum());
        for (i, &weight) in weights.iter().enumerate() {
            if pick < weight {
                return i;
            }
            pick -= weight;
        }
        unreachable!()
    }
}

fn preset_index(name: &str) -> u8 {
    pagealloc::presets::PRESETS.iter().position(|preset| preset.name == name).expect("preset") as u8
}

fn mainline() -> PolicyDesc {
    PolicyDesc {
        preset: preset_index("mainline"),
        enabled: None,
        max_cached_order: None,
        thp_lists: None,
        batch_scale_max: None,
        batch_override: None,
        high_override: None,
    }
}

/// Anchor value selecting `BASES[0]` (pfn 0), so a range's start is its absolute pfn.
const ABSOLUTE: u8 = 8;

fn absolute(range: std::ops::Range<i64>) -> Option<RangeDesc> {
    Some(RangeDesc { anchor: ABSOLUTE, start: range.start as u16, len: (range.end - range.start) as i32 })
}

fn normal_zone(start: u16, pages: u16) -> Layout {
    let zone = ZoneDesc { node: 0, zone_type: 2, base: 0, offset: start, pages: Pages::Small(pages) };
    Layout::Zones([Some(zone), None, None, None])
}

fn description(layout: Layout) -> Description {
    Description {
        cpus: 1, // 2 CPUs, as the property test
        layout,
        holes: [None; 4],
        reserves: [None; 4],
        nodes: Nodes::Implicit,
        policy: mainline(),
        tunables: None,
        llc: None,
    }
}

/// Seeds for `build_description`.
pub fn build_description_seeds() -> Vec<Description> {
    [property_test_descriptions(), fixed_descriptions(), machine_descriptions()].concat()
}

/// The property test: a Normal zone at 0..0x1800 of 0..0x2000 frames, up to 4 holes and 4
/// reservations with both ends in 0..0x3400 (some outside the zone, inverted or empty).
fn property_test_descriptions() -> Vec<Description> {
    let mut seeds = Vec::new();
    let mut rng = Rng::new(0x5eed_b01d);
    for _ in 0..32 {
        let mut seed = description(normal_zone(rng.below(0..0x1800) as u16, rng.below(0..0x2000) as u16));
        for ranges in [&mut seed.holes, &mut seed.reserves] {
            for range in ranges.iter_mut().take(rng.below(0..5) as usize) {
                let (start, end) = (rng.below(0..0x3400) as i64, rng.below(0..0x3400) as i64);
                *range = absolute(start..end);
            }
        }
        seeds.push(seed);
    }
    seeds
}

/// The property test's fixed cases: the finding (an inverted reservation beside overlapping
/// ones), an inverted hole, overlapping reservations, zones at and above their limits, absurd
/// sizes and overrides.
fn fixed_descriptions() -> Vec<Description> {
    let mut seeds = Vec::new();
    let mut finding = description(normal_zone(0, 4096));
    finding.reserves = [absolute(50..40), absolute(100..3000), absolute(2000..2100), None];
    seeds.push(finding);
    let mut inverted_hole = description(normal_zone(0, 4096));
    inverted_hole.holes[0] = absolute(9..8);
    seeds.push(inverted_hole);
    let mut overlapping = description(normal_zone(0, 4096));
    overlapping.reserves = [absolute(100..3000), absolute(2000..2100), absolute(2900..3100), absolute(7..7)];
    seeds.push(overlapping);
    let dma = |offset, pages| ZoneDesc { node: 0, zone_type: 0, base: 0, offset, pages: Pages::Small(pages) };
    seeds.push(description(Layout::Zones([Some(dma(0, 4097)), None, None, None])));
    seeds.push(description(Layout::Zones([Some(dma(0, 4096)), None, None, None])));
    // DMA32 from 16 MiB to 512 frames past 4 GiB: base NORMAL_START_PFN - 0x8000 (index 5).
    let dma32_above = ZoneDesc { node: 0, zone_type: 1, base: 5, offset: 0, pages: Pages::Small(0x8000 + 512) };
    seeds.push(description(Layout::Zones([Some(dma32_above), None, None, None])));
    seeds.push(description(Layout::PcLayout { mib: Mib::Absurd(u64::MAX) }));
    seeds.push(description(Layout::SingleZone { zone_type: 2, pages: Pages::Absurd(u64::MAX) }));
    let mut batch = description(Layout::SingleZone { zone_type: 2, pages: Pages::Small(u16::MAX) });
    batch.policy.batch_override = Some(Override::Raw(u32::MAX >> 2));
    seeds.push(batch);
    seeds
}

/// Beyond the property test: real layouts, nodes, every preset, tunables, caches.
fn machine_descriptions() -> Vec<Description> {
    let mut seeds = Vec::new();
    for mib in [32, 256] {
        seeds.push(description(Layout::PcLayout { mib: Mib::Small(mib) }));
    }
    for (i, preset) in pagealloc::presets::PRESETS.iter().enumerate() {
        let mut seed = description(Layout::SingleZone { zone_type: (i % 4) as u8, pages: Pages::Small(4096) });
        seed.policy.preset = preset_index(preset.name);
        seed.cpus = (i % 8) as u8;
        seeds.push(seed);
    }
    let two_nodes = [
        Some(ZoneDesc { node: 0, zone_type: 0, base: 0, offset: 0, pages: Pages::Small(4096) }),
        Some(ZoneDesc { node: 0, zone_type: 1, base: 3, offset: 0, pages: Pages::Small(8192) }),
        Some(ZoneDesc { node: 1, zone_type: 2, base: 6, offset: 0, pages: Pages::Small(16384) }),
        Some(ZoneDesc { node: 1, zone_type: 3, base: 6, offset: 16384, pages: Pages::Small(4096) }),
    ];
    let mut numa = description(Layout::Zones(two_nodes.clone()));
    numa.cpus = 3;
    numa.nodes = Nodes::Split { nodes: 1 };
    numa.reserves[0] = absolute(0..1);
    // A hole in node 1's Normal zone (anchor 2: the start of zone 2).
    numa.holes[0] = Some(RangeDesc { anchor: 2, start: 100, len: 333 });
    seeds.push(numa);
    let mut mapped = description(Layout::Zones(two_nodes));
    mapped.cpus = 3;
    mapped.nodes = Nodes::CpuMap { len: 4, map: [0, 1, 0, 1, 0, 0, 0, 0] };
    seeds.push(mapped);
    let mut tuned = description(Layout::PcLayout { mib: Mib::Small(128) });
    tuned.tunables = Some(TunablesDesc {
        min_free_kbytes: None,
        thp: true,
        watermark_scale_factor: 99,
        watermark_boost_factor: 15_000,
        high_fraction: HighFraction::Small(8),
        lowmem_reserve_ratio: [256, 256, 32, 0, 0],
        stat_interval_ms: 999,
    });
    tuned.llc = Some(LlcDesc { size_kib: 32 * 1024, shared_by_cpus: 2 });
    seeds.push(tuned.clone());
    let mut rejected_fraction = tuned;
    if let Some(tunables) = &mut rejected_fraction.tunables {
        tunables.high_fraction = HighFraction::Small(5);
    }
    seeds.push(rejected_fraction);
    seeds
}

/// `tests/model.rs`'s request list.
const MODEL_REQUESTS: [Req; 6] = [Req::Kernel, Req::UserMovable, Req::Reclaimable, Req::Atomic, Req::Dma32, Req::Dma];
/// `tests/model.rs`'s presets.
const MODEL_PRESETS: [&str; 6] = ["global-lock", "vanilla-5.17", "highpcp-full", "base", "patch7", "mainline"];

/// `pc_layout(mib)` for the `Pc` machine (8 + raw % 57).
fn pc(mib: u8) -> MachineChoice {
    MachineChoice::Pc { mib: mib - 8 }
}

/// Seeds for `operations`.
pub fn operations_seeds() -> Vec<Input> {
    [model_sequences(), tours(), compaction_tours()].concat()
}

/// Memory filled with movable pages, half of them freed at random, then huge requests
/// that compact and the periodic work (kcompactd): the migration client is called for
/// every candidate, and panics on its 20th call and later ones. On a PC layout, and on two
/// nodes of which node 0 has memory and no CPUs (its background work runs on node 1's).
pub fn compaction_tours() -> Vec<Input> {
    let mut rng = Rng::new(0xc0_4ac7);
    let huge = Req::Custom {
        highest_zone: 3,
        migratetype: 1,
        high_priority: false,
        may_reclaim: true,
        wake_kswapd: true,
        node: None,
    };
    let machines = [pc(32), MachineChoice::TwoNodes { split: 0, hole: 99 }];
    machines
        .into_iter()
        .map(|machine| {
            let mut ops = vec![Op::Pressure { order: 0, req: Req::UserMovable }];
            ops.extend((0..600).map(|_| Op::Free { pick: rng.next_u64() as u16 }));
            ops.extend([Op::DrainAll, Op::Alloc { order: 9, req: huge }, Op::Alloc { order: 4, req: Req::Kernel }]);
            ops.extend([Op::TickAll { advance_ms: 1000 }, Op::TickAll { advance_ms: 1000 }, Op::Check]);
            Input { header: Header { machine, preset: preset_index("mainline"), cpus: 2 }, ops }
        })
        .collect()
}

/// `tests/model.rs`'s two strategies.
fn model_sequences() -> Vec<Input> {
    let mut seeds = Vec::new();
    let mut rng = Rng::new(0x5eed_0905);
    // random_sequences_keep_every_invariant: 1..300 ops on 32 MiB, 3 CPUs; allocs (orders
    // 0..=3 twice as likely as 4..=10), frees, double frees (here: frees of another
    // allocator's blocks), migrations, ticks, drains.
    for i in 0..20 {
        let preset = preset_index(MODEL_PRESETS[i % MODEL_PRESETS.len()]);
        let ops = (0..rng.below(1..300))
            .map(|_| match rng.weighted(&[50, 40, 10, 8, 3, 1]) {
                0 => {
                    let order = if rng.weighted(&[6, 3]) == 0 { rng.below(0..4) } else { rng.below(4..11) };
                    Op::Alloc { order: order as u8, req: MODEL_REQUESTS[rng.below(0..6) as usize] }
                }
                1 => Op::Free { pick: rng.next_u64() as u16 },
                2 => Op::ForeignFree { order: rng.below(0..11) as u8, movable: rng.next_u64() & 1 == 1 },
                3 => Op::SetCpu { cpu: rng.below(0..3) as u8 },
                4 => Op::VmstatTick,
                _ => Op::DrainAll,
            })
            .collect();
        seeds.push(Input { header: Header { machine: pc(32), preset, cpus: 2 }, ops });
    }
    // random_sequences_near_exhaustion: 8 MiB (2048 frames), orders 0..=2, 80% allocs.
    for i in 0..4 {
        let preset = preset_index(MODEL_PRESETS[(i * 5 + 1) % MODEL_PRESETS.len()]);
        let ops = (0..rng.below(1000..1500))
            .map(|_| {
                if rng.weighted(&[8, 2]) == 0 {
                    Op::Alloc { order: rng.below(0..3) as u8, req: MODEL_REQUESTS[rng.below(0..6) as usize] }
                } else {
                    Op::Free { pick: rng.next_u64() as u16 }
                }
            })
            .collect();
        seeds.push(Input { header: Header { machine: pc(8), preset, cpus: 2 }, ops });
    }
    seeds
}

/// One of each remaining operation, on each machine kind.
fn tours() -> Vec<Input> {
    let custom = Req::Custom {
        highest_zone: 3,
        migratetype: 1,
        high_priority: false,
        may_reclaim: true,
        wake_kswapd: true,
        node: Some(1),
    };
    // A high-atomic request: refused whatever the machine.
    let highatomic = Req::Custom {
        highest_zone: 2,
        migratetype: 3,
        high_priority: true,
        may_reclaim: false,
        wake_kswapd: false,
        node: None,
    };
    let tour = vec![
        Op::AllocBulk { order: 0, req: Req::UserMovable, count: 100 },
        Op::AllocLayout { size: 12_000, align_log2: 12, req: Req::Kernel },
        Op::AllocLayout { size: 4096, align_log2: 21, req: Req::Nowait },
        Op::AllocOwned { order: 2, req: Req::Reclaimable },
        Op::SetCpu { cpu: 1 },
        Op::Alloc { order: 3, req: custom },
        Op::FreeBulk { pick: 0, count: 50 },
        Op::DrainLocal,
        Op::Tick { advance_ms: 1000 },
        Op::TickAll { advance_ms: 3000 },
        Op::CpuOffline { cpu: 1 },
        Op::Pressure { order: 0, req: Req::Kernel },
        Op::Alloc { order: 0, req: Req::Atomic },
        Op::FreeBulk { pick: 0, count: 255 },
        Op::Pressure { order: 9, req: Req::UserMovable },
        Op::FreeNewest,
        Op::Alloc { order: 0xF3, req: Req::Kernel },
        Op::Alloc { order: 0, req: highatomic },
        Op::ForeignFree { order: 0, movable: false },
        Op::Check,
    ];
    let machines = [
        pc(64),
        MachineChoice::Single { zone_type: 2, pages: 8191, reserve: 3000 },
        MachineChoice::Single { zone_type: 3, pages: 4095, reserve: 0 },
        MachineChoice::Single { zone_type: 0, pages: 999, reserve: 0x1404 },
        MachineChoice::TwoNodes { split: 1, hole: 1234 },
        MachineChoice::TwoNodes { split: 0, hole: 7 },
    ];
    let seeds = machines.into_iter().enumerate().map(|(i, machine)| {
        let preset = preset_index(MODEL_PRESETS[i % MODEL_PRESETS.len()]);
        Input { header: Header { machine, preset, cpus: 1 + i as u8 % 3 }, ops: tour.clone() }
    });
    // The embedder default's per-CPU arenas: one node of 2 CPUs, and two nodes of 2 each.
    let arenas = [(0, 2), (1, 4)].map(|(nodes, cpus)| Input {
        header: Header {
            machine: MachineChoice::Arenas { nodes, pages: 77 },
            preset: preset_index("pagealloc"),
            cpus: cpus - 1,
        },
        ops: tour.clone(),
    });
    seeds.chain(arenas).collect()
}

/// Writes every seed as `corpus/<target>/seed-NNN` under `dir`; returns the files written.
pub fn write_corpus(dir: &std::path::Path) -> std::io::Result<usize> {
    let mut written = 0;
    let targets: [(&str, Vec<Vec<u8>>); 2] = [
        ("build_description", build_description_seeds().iter().map(encode_checked).collect()),
        ("operations", operations_seeds().iter().map(encode_checked).collect()),
    ];
    for (target, seeds) in targets {
        let target_dir = dir.join("corpus").join(target);
        std::fs::create_dir_all(&target_dir)?;
        for entry in std::fs::read_dir(&target_dir)? {
            let path = entry?.path();
            if path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with("seed-")) {
                std::fs::remove_file(path)?;
            }
        }
        for (i, bytes) in seeds.iter().enumerate() {
            std::fs::write(target_dir.join(format!("seed-{i:03}")), bytes)?;
            written += 1;
        }
    }
    Ok(written)
}
