//! /proc/zoneinfo, for a live allocator or for a machine description.
//!
//! Per-node and per-zone vmstat counter lines are not printed: a description has no such
//! counters, and the allocator's own counters have their own report. Everything the page
//! allocator derives (watermarks, protection, pagesets, thresholds) is.

use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::allocator::PageAllocator;
use crate::platform::Platform;
use crate::sizing::{LinuxVersion, MachineSizing, Watermarks};
use crate::types::{Pfn, ZoneType, MAX_NR_ZONES};

/// One CPU's pageset line group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagesetLine {
    pub cpu: usize,
    pub count_pages: u64,
    pub high_pages: u64,
    pub batch_pages: u64,
    pub high_min_pages: u64,
    pub high_max_pages: u64,
    pub stat_threshold: u32,
}

/// Everything printed for one zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneinfoZone {
    pub node: usize,
    pub zone_type: ZoneType,
    pub free_pages: u64,
    pub boost_pages: u64,
    /// Unboosted watermarks (the printout adds the boost, as the kernel does).
    pub watermarks: Watermarks,
    pub spanned_pages: u64,
    pub present_pages: u64,
    pub managed_pages: u64,
    pub cma_pages: u64,
    pub protection: [u64; MAX_NR_ZONES],
    pub pagesets: Vec<PagesetLine>,
    pub start_pfn: Pfn,
}

impl ZoneinfoZone {
    /// Zones of a described machine at rest: nothing allocated, every pageset empty. An idle
    /// CPU's high decays to high_min (6.7+), except in DMA, which CPUs normally never touch,
    /// so its high stays at the boot value 0. Spans and start pfns are not part
    /// of a description: spanned = present = managed, and zones are laid out back to back
    /// from their conventional bases (DMA at pfn 1, DMA32 at 16 MiB, Normal at 4 GiB).
    pub fn from_sizing(sizing: &MachineSizing) -> Vec<ZoneinfoZone> {
        let mut next_free_pfn: Pfn = 0;
        sizing
            .zones
            .iter()
            .map(|zone| {
                let conventional_base = match zone.zone_type {
                    ZoneType::Dma => 1,
                    ZoneType::Dma32 => 1 << 12,
                    _ => 1 << 20,
                };
                let start_pfn = if zone.managed_pages == 0 { 0 } else { next_free_pfn.max(conventional_base) };
                if zone.managed_pages > 0 {
                    next_free_pfn = start_pfn + zone.managed_pages;
                }
                let idle_high_pages =
                    if zone.zone_type == ZoneType::Dma && zone.pcp.high_min_pages != zone.pcp.high_max_pages {
                        0
                    } else {
                        zone.pcp.high_min_pages
                    };
                let pagesets = (0..sizing.online_cpus as usize)
                    .map(|cpu| PagesetLine {
                        cpu,
                        count_pages: 0,
                        high_pages: idle_high_pages,
                        batch_pages: zone.pcp.batch_pages,
                        high_min_pages: zone.pcp.high_min_pages,
                        high_max_pages: zone.pcp.high_max_pages,
                        stat_threshold: zone.stat_threshold,
                    })
                    .collect();
                ZoneinfoZone {
                    node: zone.node,
                    zone_type: zone.zone_type,
                    free_pages: zone.managed_pages,
                    boost_pages: 0,
                    watermarks: zone.watermarks,
                    spanned_pages: zone.managed_pages,
                    present_pages: zone.managed_pages,
                    managed_pages: zone.managed_pages,
                    cma_pages: 0,
                    protection: zone.lowmem_reserve,
                    pagesets,
                    start_pfn,
                }
            })
            .collect()
    }

    /// Zones of a live allocator, every zone type of every node as the kernel prints them.
    pub fn from_allocator<P: Platform>(allocator: &PageAllocator<P>) -> Vec<ZoneinfoZone> {
        let mut zones = Self::from_sizing(&allocator.sizing());
        for zone in allocator.zones() {
            let Some(row) =
                zones.iter_mut().find(|r| r.node == zone.node() as usize && r.zone_type == zone.zone_type())
            else {
                continue;
            };
            // Memory online and offline re-derive these; the build's sizing has the first.
            let params = zone.params();
            row.managed_pages = zone.managed_pages();
            row.watermarks = params.watermarks;
            row.protection = params.lowmem_reserve;
            row.free_pages = zone.free_pages();
            row.boost_pages = zone.boost_pages();
            row.spanned_pages = zone.spanned_pages();
            row.present_pages = zone.present_pages();
            row.start_pfn = zone.start_pfn();
            for (line, slot) in row.pagesets.iter_mut().zip(zone.pagesets()) {
                slot.inspect(allocator.platform(), |pageset| {
                    line.count_pages = pageset.count_pages() as u64;
                    line.high_pages = pageset.high_pages() as u64;
                    line.batch_pages = pageset.batch_pages() as u64;
                    line.high_min_pages = pageset.high_min_pages() as u64;
                    line.high_max_pages = pageset.high_max_pages() as u64;
                });
            }
        }
        zones
    }
}

/// Writes zones in the layout of the given kernel version (promo line from 6.12, widened
/// pageset lines with high_min/high_max from 6.13).
pub fn write_zoneinfo(out: &mut impl Write, zones: &[ZoneinfoZone], version: LinuxVersion) -> fmt::Result {
    for zone in zones {
        let boost = zone.boost_pages;
        let marks = &zone.watermarks;
        write!(out, "Node {}, zone {:>8}", zone.node, zone.zone_type.kernel_name())?;
        write!(out, "\n  pages free     {}", zone.free_pages)?;
        write!(out, "\n        boost    {boost}")?;
        write!(out, "\n        min      {}", marks.min_pages + boost)?;
        write!(out, "\n        low      {}", marks.low_pages + boost)?;
        write!(out, "\n        high     {}", marks.high_pages + boost)?;
        if version.zoneinfo_has_promo() {
            write!(out, "\n        promo    {}", marks.promo_pages + boost)?;
        }
        write!(out, "\n        spanned  {}", zone.spanned_pages)?;
        write!(out, "\n        present  {}", zone.present_pages)?;
        write!(out, "\n        managed  {}", zone.managed_pages)?;
        write!(out, "\n        cma      {}", zone.cma_pages)?;
        write!(out, "\n        protection: ({}", zone.protection[0])?;
        for reserve in &zone.protection[1..] {
            write!(out, ", {reserve}")?;
        }
        write!(out, ")")?;
        if zone.present_pages == 0 {
            writeln!(out)?;
            continue;
        }
        write!(out, "\n  pagesets")?;
        for pageset in &zone.pagesets {
            write!(out, "\n    cpu: {}", pageset.cpu)?;
            if version.zoneinfo_has_pcp_bounds() {
                write!(out, "\n              count:    {}", pageset.count_pages)?;
                write!(out, "\n              high:     {}", pageset.high_pages)?;
                write!(out, "\n              batch:    {}", pageset.batch_pages)?;
                write!(out, "\n              high_min: {}", pageset.high_min_pages)?;
                write!(out, "\n              high_max: {}", pageset.high_max_pages)?;
            } else {
                write!(out, "\n              count: {}", pageset.count_pages)?;
                write!(out, "\n              high:  {}", pageset.high_pages)?;
                write!(out, "\n              batch: {}", pageset.batch_pages)?;
            }
            write!(out, "\n  vm stats threshold: {}", pageset.stat_threshold)?;
        }
        write!(out, "\n  node_unreclaimable:  0")?;
        write!(out, "\n  start_pfn:           {}", zone.start_pfn)?;
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::{MachineSpec, NodeSpec, Tunables};
    use alloc::string::String;

    fn sizing() -> MachineSizing {
        let spec = MachineSpec {
            nodes: crate::table::Table::from_slice(&[NodeSpec::new(1, [0, 262_144, 0, 0, 0])]).unwrap(),
            tunables: Tunables::default(),
            kernel: LinuxVersion::MAINLINE,
        };
        MachineSizing::derive(&spec).unwrap()
    }

    #[test]
    fn mainline_layout_is_exact() {
        let mut text = String::new();
        write_zoneinfo(&mut text, &ZoneinfoZone::from_sizing(&sizing()), LinuxVersion::MAINLINE).unwrap();
        // 1 GiB DMA32 alone: min_free_kbytes = sqrt(16 * 1 GiB / 1 KiB) = 4096 -> min 1024,
        // spacing max(256, 262) = 262; batch 63; high_min = low = 1286 (one CPU); high_max =
        // 262144 / 8 = 32768; threshold 2 * fls(1) * (1 + fls(8)) = 10.
        assert_eq!(text, include_str!("testdata/zoneinfo-mainline.txt"));
    }

    #[test]
    fn pre_6_13_layout_has_narrow_pagesets_and_no_promo_before_6_12() {
        let mut text = String::new();
        write_zoneinfo(&mut text, &ZoneinfoZone::from_sizing(&sizing()), LinuxVersion::new(6, 8)).unwrap();
        assert!(!text.contains("promo"));
        assert!(text.contains("\n              count: 0\n              high:  1286\n              batch: 63\n"));
        assert!(!text.contains("high_min"));
    }
}
