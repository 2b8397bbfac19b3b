//! The sysctls that shape derived parameters, with Linux's defaults.

use crate::types::MAX_NR_ZONES;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// vm.min_free_kbytes as finally in force; `None` computes it as the kernel does at boot.
    pub min_free_kbytes: Option<u64>,
    /// Apply the transparent-hugepage raise of min_free_kbytes (khugepaged running).
    pub thp: bool,
    /// vm.watermark_scale_factor, in units of 1/10000 of the zone (default 10).
    pub watermark_scale_factor: u32,
    /// vm.watermark_boost_factor, in units of 1/10000 of the high watermark (default 15000).
    pub watermark_boost_factor: u32,
    /// vm.percpu_pagelist_high_fraction: 0 auto-tunes between bounds; >= 8 fixes high.
    pub percpu_pagelist_high_fraction: u32,
    /// vm.lowmem_reserve_ratio per zone type (DMA, DMA32, Normal, Movable, Device).
    pub lowmem_reserve_ratio: [u32; MAX_NR_ZONES],
    /// vm.stat_interval in ms (default 1000): the period of each CPU's vmstat work
    /// (pageset decay, remote drains).
    pub stat_interval_ms: u32,
    /// vm.compaction_proactiveness, 0..=100 (default 20; 0 turns proactive compaction off).
    pub compaction_proactiveness: u32,
    /// vm.extfrag_threshold, 0..=1000 (default 500): a costly allocation whose failure has an
    /// external fragmentation index at or below it is left to reclaim, not compaction.
    pub extfrag_threshold: u32,
}

impl Tunables {
    /// Smallest accepted non-zero percpu_pagelist_high_fraction (Linux rejects 1..7).
    pub const MIN_PERCPU_PAGELIST_HIGH_FRACTION: u32 = 8;
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            min_free_kbytes: None,
            thp: false,
            watermark_scale_factor: 10,
            watermark_boost_factor: 15_000,
            percpu_pagelist_high_fraction: 0,
            lowmem_reserve_ratio: [256, 256, 32, 0, 0],
            stat_interval_ms: 1000,
            compaction_proactiveness: 20,
            extfrag_threshold: 500,
        }
    }
}
