//! Checking a memory description before the build: CPUs, policy ranges, zones; then the
//! cut into per-CPU arenas.

use super::{arena_layout, zone_type_limit_pfn, AllocatorBuilder, BuildError};
use crate::table::{Table, TableFull, FIXED_NODES};
use crate::types::ZoneType;

impl AllocatorBuilder {
    /// Checks the description against the platform's `platform_cpus` and Linux's limits,
    /// sorts its zones, and cuts them into per-CPU arenas if the policy asks (mirrors the
    /// checks of free_area_init() and the sysctl handlers' ranges).
    pub(crate) fn validate(&mut self, platform_cpus: usize) -> Result<(), BuildError> {
        if let Some(error) = self.deferred_error.take() {
            return Err(error);
        }
        if self.zones.is_empty() {
            return Err(BuildError::NoZones);
        }
        self.validate_cpus(platform_cpus)?;
        self.validate_policy()?;
        for (kind, ranges) in [("hole", &self.holes), ("reserve", &self.reserved)] {
            if let Some(range) = ranges.iter().find(|range| range.start > range.end) {
                return Err(BuildError::InvertedRange { kind, range: range.clone() });
            }
        }
        sort_stable_by_key(&mut self.zones, |zone| (zone.node, zone.zone_type));
        self.validate_zones()?;
        self.cut_into_arenas(platform_cpus)
    }

    /// The CPU map or the nodes' CPU counts cover the platform's CPUs exactly.
    fn validate_cpus(&mut self, platform_cpus: usize) -> Result<(), BuildError> {
        if let Some(map) = &self.cpu_nodes {
            if map.len() != platform_cpus {
                return Err(BuildError::CpuMismatch { node_cpus: map.len() as u32, platform_cpus });
            }
            self.node_cpus = cpus_per_node(map, mapped_nodes(map))?;
        }
        if self.node_cpus.is_empty() {
            self.node_cpus.push(platform_cpus as u32).expect("room for one node");
        }
        let node_cpus: u32 = self.node_cpus.iter().sum();
        if node_cpus as usize != platform_cpus {
            return Err(BuildError::CpuMismatch { node_cpus, platform_cpus });
        }
        Ok(())
    }

    /// Tunables and policy switches within the ranges Linux allows.
    fn validate_policy(&self) -> Result<(), BuildError> {
        if self.tunables.compaction_proactiveness > 100 || self.tunables.extfrag_threshold > 1000 {
            return Err(BuildError::InvalidPolicy("compaction_proactiveness is 0..=100, extfrag_threshold 0..=1000"));
        }
        let pcp = &self.policy.pcp;
        if pcp.max_cached_order > crate::types::COSTLY_ORDER {
            return Err(BuildError::InvalidPolicy("max_cached_order above PAGE_ALLOC_COSTLY_ORDER (3)"));
        }
        if pcp.thp_lists > 2 {
            return Err(BuildError::InvalidPolicy("thp_lists is 0, 1 or 2"));
        }
        if pcp.batch_scale_max.is_some_and(|scale| scale > crate::policy::PcpPolicy::MAX_BATCH_SCALE) {
            return Err(BuildError::InvalidPolicy("batch_scale_max above 6 (PCP_BATCH_SCALE_MAX range 0..6)"));
        }
        // 2^24 keeps `batch << PCP_BATCH_SCALE_MAX` (and high's arithmetic) inside 32 bits.
        let too_large = |pages: u32| pages > 1 << 24;
        if pcp.batch_override.is_some_and(|batch| batch == 0 || too_large(batch))
            || pcp.high_override.is_some_and(too_large)
        {
            return Err(BuildError::InvalidPolicy("batch override must be 1..=2^24, high override at most 2^24"));
        }
        if pcp.thp_batch_shift > 8 || pcp.high_max == crate::policy::HighMaxRule::ZoneShare(0) {
            return Err(BuildError::InvalidPolicy("thp_batch_shift is 0..=8, a high_max zone share at least 1"));
        }
        if let Some(why) = self.policy.inert_switch() {
            return Err(BuildError::InvalidPolicy(why));
        }
        match self.policy.vmstat.numa {
            crate::policy::NumaStats::ZoneStat { threshold: Some(threshold) }
                if !crate::policy::NumaStats::ZONE_STAT_THRESHOLDS.contains(&threshold) =>
            {
                return Err(BuildError::InvalidPolicy("a fixed zone-stat threshold is 32..=32765"));
            }
            crate::policy::NumaStats::SeparateClass { threshold }
                if threshold == 0 || threshold > crate::policy::NumaStats::SEPARATE_CLASS_THRESHOLD =>
            {
                return Err(BuildError::InvalidPolicy("the separate NUMA class's threshold is 1..=65533"));
            }
            _ => {}
        }
        Ok(())
    }

    /// Each zone (sorted by node and type) on a declared node, non-empty, below its type's
    /// limit, at most 2^32 - 1 frames, the only one of its type on its node, overlapping no other.
    fn validate_zones(&self) -> Result<(), BuildError> {
        for (i, zone) in self.zones.iter().enumerate() {
            if zone.node as usize >= self.node_cpus.len() {
                return Err(BuildError::UnknownNode { node: zone.node });
            }
            if zone.zone_type == ZoneType::Device {
                return Err(BuildError::DeviceZone);
            }
            if zone.span.start >= zone.span.end {
                return Err(BuildError::EmptySpan { zone_type: zone.zone_type });
            }
            let limit_pfn = zone_type_limit_pfn(zone.zone_type);
            if zone.span.end > limit_pfn {
                return Err(BuildError::ZoneAboveLimit {
                    zone_type: zone.zone_type,
                    end_pfn: zone.span.end,
                    limit_pfn,
                });
            }
            let spanned_pages = zone.span.end - zone.span.start;
            if spanned_pages >= u32::MAX as u64 {
                return Err(BuildError::ZoneTooLarge { zone_type: zone.zone_type, spanned_pages });
            }
            if i > 0 && self.zones[i - 1].node == zone.node && self.zones[i - 1].zone_type == zone.zone_type {
                return Err(BuildError::DuplicateZone { node: zone.node, zone_type: zone.zone_type });
            }
            for other in &self.zones[..i] {
                if other.span.start < zone.span.end && zone.span.start < other.span.end {
                    return Err(BuildError::Overlap { first: other.span.clone(), second: zone.span.clone() });
                }
            }
        }
        Ok(())
    }

    /// Replaces a valid description by its per-CPU arenas when the policy asks for them
    /// (`ArenaRule::PerCpu`): sub-spans of valid zones, one node per arena.
    fn cut_into_arenas(&mut self, platform_cpus: usize) -> Result<(), BuildError> {
        if self.policy.arenas != crate::policy::ArenaRule::PerCpu {
            return Ok(());
        }
        self.cut_per_cpu(platform_cpus)
    }

    /// The cut itself: out of line, so that its tables take a boot stack only when arenas
    /// are per CPU.
    #[inline(never)]
    fn cut_per_cpu(&mut self, platform_cpus: usize) -> Result<(), BuildError> {
        let layout = arena_layout(self, platform_cpus)
            .map_err(|TableFull { capacity }| BuildError::TableFull { table: "arena zones", capacity })?;
        let Some(layout) = layout else { return Ok(()) };
        self.zones = layout.zones;
        sort_stable_by_key(&mut self.zones, |zone| (zone.node, zone.zone_type));
        // Every arena is a node, those without CPUs too (a memory-only node's).
        self.node_cpus = cpus_per_node(&layout.cpu_nodes, layout.homes.len())?;
        self.cpu_nodes = Some(layout.cpu_nodes);
        self.arena_homes = Some(layout.homes);
        Ok(())
    }
}

/// CPUs per node of a CPU-to-node map, for `nodes` nodes.
pub(super) fn cpus_per_node(map: &[u16], nodes: usize) -> Result<Table<u32, FIXED_NODES>, BuildError> {
    Table::from_fn(nodes, |node| map.iter().filter(|&&n| n as usize == node).count() as u32)
        .map_err(|TableFull { capacity }| BuildError::TableFull { table: "nodes", capacity })
}

/// Nodes a CPU-to-node map names: 0..=its largest node id.
pub(super) fn mapped_nodes(map: &[u16]) -> usize {
    map.iter().copied().max().map_or(0, |max| max as usize + 1)
}

/// A stable sort of a description table: the slice's own with `alloc`, else an insertion
/// sort (tables of at most a few hundred entries, sorted once at build), same order.
pub(super) fn sort_stable_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    #[cfg(feature = "alloc")]
    items.sort_by_key(key);
    #[cfg(not(feature = "alloc"))]
    for sorted in 1..items.len() {
        let mut at = sorted;
        while at > 0 && key(&items[at - 1]) > key(&items[at]) {
            items.swap(at - 1, at);
            at -= 1;
        }
    }
}
