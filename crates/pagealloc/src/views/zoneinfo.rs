//! /proc/zoneinfo, for a live allocator or for a machine description.
//!
//! Per-node and per-zone vmstat counter lines are not printed: a description has no such
//! counters, and the allocator's own counters have their own report. Everything the page
//! allocator derives (watermarks, protection, pagesets, thresholds) is.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::allocator::PageAllocator;
use crate::platform::Platform;
#[cfg(feature = "alloc")]
use crate::sizing::MachineSizing;
use crate::sizing::{LinuxVersion, Watermarks, ZoneSizing};
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
#[cfg(feature = "alloc")]
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

#[cfg(feature = "alloc")]
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
                let head = ZoneHead::at_rest(zone, &mut next_free_pfn);
                let pagesets = (0..sizing.online_cpus as usize).map(|cpu| PagesetLine::at_rest(zone, cpu)).collect();
                ZoneinfoZone::from_head(head, pagesets)
            })
            .collect()
    }

    /// Zones of a live allocator, every zone type of every node as the kernel prints them.
    pub fn from_allocator<P: Platform>(allocator: &PageAllocator<P>) -> Vec<ZoneinfoZone> {
        let mut zones = Self::from_sizing(&allocator.sizing());
        for zone in allocator.zones() {
            let Some(row) = zones
                .iter_mut()
                .find(|r| r.node == zone.state().node() as usize && r.zone_type == zone.state().zone_type())
            else {
                continue;
            };
            let mut head = row.head();
            head.update_from(zone);
            *row = ZoneinfoZone::from_head(head, core::mem::take(&mut row.pagesets));
            for (line, slot) in row.pagesets.iter_mut().zip(zone.pagesets()) {
                *line = line.live(allocator.platform(), slot);
            }
        }
        zones
    }

    fn from_head(head: ZoneHead, pagesets: Vec<PagesetLine>) -> ZoneinfoZone {
        let ZoneHead {
            node,
            zone_type,
            free_pages,
            boost_pages,
            watermarks,
            spanned_pages,
            present_pages,
            managed_pages,
            cma_pages,
            protection,
            start_pfn,
        } = head;
        ZoneinfoZone {
            node,
            zone_type,
            free_pages,
            boost_pages,
            watermarks,
            spanned_pages,
            present_pages,
            managed_pages,
            cma_pages,
            protection,
            pagesets,
            start_pfn,
        }
    }

    /// Everything printed but the pagesets.
    fn head(&self) -> ZoneHead {
        ZoneHead {
            node: self.node,
            zone_type: self.zone_type,
            free_pages: self.free_pages,
            boost_pages: self.boost_pages,
            watermarks: self.watermarks,
            spanned_pages: self.spanned_pages,
            present_pages: self.present_pages,
            managed_pages: self.managed_pages,
            cma_pages: self.cma_pages,
            protection: self.protection,
            start_pfn: self.start_pfn,
        }
    }
}

/// Writes a live allocator's zones as its kernel's /proc/zoneinfo prints them: every zone
/// type of every node, an unpopulated zone abbreviated (as zoneinfo_show() walks every zone,
/// where buddyinfo and pagetypeinfo skip the unpopulated ones). Needs no heap.
///
/// ```
/// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
/// use pagealloc::platform::TestPlatform;
/// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16), TestPlatform::new(1)).unwrap();
/// let mut text = String::new();
/// pagealloc::views::write_zoneinfo(&mut text, &allocator).unwrap();
/// assert!(text.starts_with("Node 0, zone      DMA\n  pages free     0"));
/// assert!(text.contains("Node 0, zone   Normal\n  pages free     65536"));
/// ```
pub fn write_zoneinfo<P: Platform>(out: &mut impl Write, allocator: &PageAllocator<P>) -> fmt::Result {
    let sizing = allocator.sizing();
    let mut next_free_pfn: Pfn = 0;
    for zone_sizing in sizing.zones.iter() {
        let mut head = ZoneHead::at_rest(zone_sizing, &mut next_free_pfn);
        let live = allocator
            .zones()
            .iter()
            .find(|z| z.state().node() as usize == head.node && z.state().zone_type() == head.zone_type);
        let Some(live) = live else {
            let pagesets = (0..sizing.online_cpus as usize).map(|cpu| PagesetLine::at_rest(zone_sizing, cpu));
            write_zone(out, &head, pagesets, LinuxVersion::MAINLINE)?;
            continue;
        };
        head.update_from(live);
        // A CPU's line is live where the zone has its pageset (pagesets may be off).
        let pagesets = (0..sizing.online_cpus as usize).map(|cpu| {
            let line = PagesetLine::at_rest(zone_sizing, cpu);
            live.pagesets().get(cpu).map_or(line, |slot| line.live(allocator.platform(), slot))
        });
        write_zone(out, &head, pagesets, LinuxVersion::MAINLINE)?;
    }
    Ok(())
}

/// Writes zones in the layout of the given kernel version (promo line from 6.12, widened
/// pageset lines with high_min/high_max from 6.13): a description's zones
/// ([`ZoneinfoZone::from_sizing`]) or a live allocator's.
#[cfg(feature = "alloc")]
pub fn write_zoneinfo_zones(out: &mut impl Write, zones: &[ZoneinfoZone], version: LinuxVersion) -> fmt::Result {
    for zone in zones {
        let head = zone.head();
        write_zone(out, &head, zone.pagesets.iter().copied(), version)?;
    }
    Ok(())
}

/// A zone's lines but its pagesets'.
struct ZoneHead {
    node: usize,
    zone_type: ZoneType,
    free_pages: u64,
    boost_pages: u64,
    watermarks: Watermarks,
    spanned_pages: u64,
    present_pages: u64,
    managed_pages: u64,
    cma_pages: u64,
    protection: [u64; MAX_NR_ZONES],
    start_pfn: Pfn,
}

impl ZoneHead {
    /// A described zone at rest. Spans and start pfns are not part of a description:
    /// spanned = present = managed, and zones are laid out back to back from their
    /// conventional bases (DMA at pfn 1, DMA32 at 16 MiB, Normal at 4 GiB), from
    /// `next_free_pfn` on.
    fn at_rest(zone: &ZoneSizing, next_free_pfn: &mut Pfn) -> ZoneHead {
        let conventional_base = match zone.zone_type {
            ZoneType::Dma => 1,
            ZoneType::Dma32 => 1 << 12,
            _ => 1 << 20,
        };
        let start_pfn = if zone.managed_pages == 0 { 0 } else { (*next_free_pfn).max(conventional_base) };
        if zone.managed_pages > 0 {
            *next_free_pfn = start_pfn + zone.managed_pages;
        }
        ZoneHead {
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
            start_pfn,
        }
    }

    /// The live zone's counts; memory online and offline re-derive its parameters, which
    /// the build's sizing has only the first of.
    fn update_from<P: Platform>(&mut self, zone: &crate::zone::Zone<P>) {
        let params = zone.state().params();
        self.managed_pages = zone.state().managed_pages();
        self.watermarks = params.watermarks;
        self.protection = params.lowmem_reserve;
        self.free_pages = zone.free_pages();
        self.boost_pages = zone.state().boost_pages();
        self.spanned_pages = zone.spanned_pages();
        self.present_pages = zone.state().present_pages();
        self.start_pfn = zone.start_pfn();
    }
}

impl PagesetLine {
    /// An empty pageset of a described zone. An idle CPU's high decays to high_min (6.7+),
    /// except in DMA, which CPUs normally never touch, so its high stays at the boot value 0.
    fn at_rest(zone: &ZoneSizing, cpu: usize) -> PagesetLine {
        let idle_high_pages = if zone.zone_type == ZoneType::Dma && zone.pcp.high_min_pages != zone.pcp.high_max_pages {
            0
        } else {
            zone.pcp.high_min_pages
        };
        PagesetLine {
            cpu,
            count_pages: 0,
            high_pages: idle_high_pages,
            batch_pages: zone.pcp.batch_pages,
            high_min_pages: zone.pcp.high_min_pages,
            high_max_pages: zone.pcp.high_max_pages,
            stat_threshold: zone.stat_threshold,
        }
    }
}

impl PagesetLine {
    /// The line with the live pageset's count and bounds.
    fn live<P: Platform>(mut self, platform: &P, slot: &crate::pcp::PcpSlot<P>) -> PagesetLine {
        slot.inspect(platform, |pageset| {
            self.count_pages = pageset.count_pages() as u64;
            self.high_pages = pageset.high_pages() as u64;
            self.batch_pages = pageset.batch_pages() as u64;
            self.high_min_pages = pageset.high_min_pages() as u64;
            self.high_max_pages = pageset.high_max_pages() as u64;
        });
        self
    }
}

fn write_zone(
    out: &mut impl Write,
    zone: &ZoneHead,
    pagesets: impl Iterator<Item = PagesetLine>,
    version: LinuxVersion,
) -> fmt::Result {
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
        return writeln!(out);
    }
    write!(out, "\n  pagesets")?;
    for pageset in pagesets {
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
    writeln!(out)
}

#[cfg(all(test, feature = "alloc"))]
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
        write_zoneinfo_zones(&mut text, &ZoneinfoZone::from_sizing(&sizing()), LinuxVersion::MAINLINE).unwrap();
        // 1 GiB DMA32 alone: min_free_kbytes = sqrt(16 * 1 GiB / 1 KiB) = 4096 -> min 1024,
        // spacing max(256, 262) = 262; batch 63; high_min = low = 1286 (one CPU); high_max =
        // 262144 / 8 = 32768; threshold 2 * fls(1) * (1 + fls(8)) = 10.
        assert_eq!(text, include_str!("testdata/zoneinfo-mainline.txt"));
    }

    #[test]
    fn pre_6_13_layout_has_narrow_pagesets_and_no_promo_before_6_12() {
        let mut text = String::new();
        write_zoneinfo_zones(&mut text, &ZoneinfoZone::from_sizing(&sizing()), LinuxVersion::new(6, 8)).unwrap();
        assert!(!text.contains("promo"));
        assert!(text.contains("\n              count: 0\n              high:  1286\n              batch: 63\n"));
        assert!(!text.contains("high_min"));
    }
}
