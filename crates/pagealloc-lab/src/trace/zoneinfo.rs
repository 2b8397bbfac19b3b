//! The traced machine from its /proc/zoneinfo: zones (start pfn, spanned, present, managed),
//! nodes, and CPUs from the pagesets; and the places where the parameters we derive for that
//! machine (watermarks, lowmem protection, pageset high and batch) differ from the file's.

use pagealloc::platform::TestPlatform;
use pagealloc::sizing::{Tunables, Watermarks};
use pagealloc::types::{ZoneType, MAX_NR_ZONES};
use pagealloc::views::{PagesetLine, ZoneinfoZone};
use pagealloc::{AllocatorBuilder, PageAllocator};

/// Parses /proc/zoneinfo text (any kernel since 4.x; fields it lacks stay 0).
pub fn parse_zoneinfo(text: &str) -> Result<Vec<ZoneinfoZone>, String> {
    let mut zones: Vec<ZoneinfoZone> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("Node ") {
            zones.push(
                zone_header(rest).ok_or_else(|| format!("zoneinfo line {}: bad header {trimmed:?}", number + 1))?,
            );
            continue;
        }
        let Some(zone) = zones.last_mut() else { continue };
        let mut words = trimmed.split_whitespace();
        let (Some(first), second) = (words.next(), words.next()) else { continue };
        let value = || second.and_then(|word| word.parse::<u64>().ok()).unwrap_or(0);
        match (first, second) {
            ("pages", Some("free")) => zone.free_pages = words.next().and_then(|w| w.parse().ok()).unwrap_or(0),
            ("min", _) => zone.watermarks.min_pages = value(),
            ("low", _) => zone.watermarks.low_pages = value(),
            ("high", _) => zone.watermarks.high_pages = value(),
            ("promo", _) => zone.watermarks.promo_pages = value(),
            ("spanned", _) => zone.spanned_pages = value(),
            ("present", _) => zone.present_pages = value(),
            ("managed", _) => zone.managed_pages = value(),
            ("cma", _) => zone.cma_pages = value(),
            ("boost", _) => zone.boost_pages = value(),
            ("protection:", _) => zone.protection = protection(trimmed),
            ("start_pfn:", _) => zone.start_pfn = value(),
            ("cpu:", _) => zone.pagesets.push(PagesetLine { cpu: value() as usize, ..EMPTY_PAGESET }),
            (key, _) => pageset_field(zone.pagesets.last_mut(), key, value()),
        }
    }
    if zones.is_empty() {
        return Err("no \"Node N, zone NAME\" section: not a /proc/zoneinfo".into());
    }
    // The printed watermarks include the boost; keep them unboosted, as ours are.
    for zone in &mut zones {
        let (boost, marks) = (zone.boost_pages, &mut zone.watermarks);
        for mark in [&mut marks.min_pages, &mut marks.low_pages, &mut marks.high_pages, &mut marks.promo_pages] {
            *mark = mark.saturating_sub(boost);
        }
    }
    Ok(zones)
}

const EMPTY_PAGESET: PagesetLine = PagesetLine {
    cpu: 0,
    count_pages: 0,
    high_pages: 0,
    batch_pages: 0,
    high_min_pages: 0,
    high_max_pages: 0,
    stat_threshold: 0,
};

fn pageset_field(pageset: Option<&mut PagesetLine>, key: &str, value: u64) {
    let Some(pageset) = pageset else { return };
    match key {
        "count:" => pageset.count_pages = value,
        "high:" => pageset.high_pages = value,
        "batch:" => pageset.batch_pages = value,
        "high_min:" => pageset.high_min_pages = value,
        "high_max:" => pageset.high_max_pages = value,
        _ => {}
    }
}

/// "0, zone   Normal" after "Node ".
fn zone_header(rest: &str) -> Option<ZoneinfoZone> {
    let (node, name) = rest.split_once(", zone")?;
    let zone_type = match name.trim() {
        "DMA" => ZoneType::Dma,
        "DMA32" => ZoneType::Dma32,
        "Normal" => ZoneType::Normal,
        "Movable" => ZoneType::Movable,
        "Device" => ZoneType::Device,
        _ => return None,
    };
    Some(ZoneinfoZone {
        node: node.trim().parse().ok()?,
        zone_type,
        free_pages: 0,
        boost_pages: 0,
        watermarks: Watermarks { min_pages: 0, low_pages: 0, high_pages: 0, promo_pages: 0 },
        spanned_pages: 0,
        present_pages: 0,
        managed_pages: 0,
        cma_pages: 0,
        protection: [0; MAX_NR_ZONES],
        pagesets: Vec::new(),
        start_pfn: 0,
    })
}

/// "protection: (0, 3019, 9163, 9163, 9163)".
fn protection(line: &str) -> [u64; MAX_NR_ZONES] {
    let inner = line.split(['(', ')']).nth(1).unwrap_or("");
    let mut out = [0; MAX_NR_ZONES];
    for (slot, word) in out.iter_mut().zip(inner.split(',')) {
        *slot = word.trim().parse().unwrap_or(0);
    }
    out
}

/// CPUs of the traced machine: those with a pageset line, as a dense 0..n range.
pub fn cpu_count(zones: &[ZoneinfoZone]) -> usize {
    zones.iter().flat_map(|zone| zone.pagesets.iter().map(|line| line.cpu + 1)).max().unwrap_or(1)
}

/// A builder for the traced machine: each zone with pages spans its file span; the pages it
/// spans but does not have are a hole at its end, and those it has but does not manage
/// (boot allocations, the kernel image) are reserved at its start. Which frames they are is
/// not in the file; their number is what the sizing reads.
pub fn machine(zones: &[ZoneinfoZone]) -> Result<AllocatorBuilder, String> {
    layout(zones, tunables(zones))
}

fn layout(zones: &[ZoneinfoZone], tunables: Tunables) -> Result<AllocatorBuilder, String> {
    let nodes = zones.iter().map(|zone| zone.node).max().unwrap_or(0) + 1;
    let cpus = cpu_count(zones);
    let mut cpu_node = vec![0u16; cpus];
    let mut builder = AllocatorBuilder::new();
    for node in 0..nodes {
        let node_cpus: Vec<usize> = zones
            .iter()
            .filter(|zone| zone.node == node && zone.managed_pages > 0)
            .flat_map(|zone| zone.pagesets.iter().map(|line| line.cpu))
            .collect();
        let mut node_cpus = node_cpus;
        node_cpus.sort_unstable();
        node_cpus.dedup();
        for &cpu in &node_cpus {
            cpu_node[cpu] = node as u16;
        }
        builder = builder.node(node_cpus.len() as u32);
    }
    builder = builder.cpu_node_map(cpu_node).tunables(tunables);
    for zone in zones.iter().filter(|zone| zone.managed_pages > 0 && zone.zone_type != ZoneType::Device) {
        if zone.present_pages > zone.spanned_pages || zone.managed_pages > zone.present_pages {
            return Err(format!("node {} {:?}: present or managed above spanned", zone.node, zone.zone_type));
        }
        let (start, end) = (zone.start_pfn, zone.start_pfn + zone.spanned_pages);
        builder = builder.zone(zone.node as u16, zone.zone_type, start..end);
        let present_end = start + zone.present_pages;
        if present_end < end {
            builder = builder.hole(present_end..end);
        }
        let reserved_pages = zone.present_pages - zone.managed_pages;
        if reserved_pages > 0 {
            builder = builder.reserve(start..start + reserved_pages);
        }
    }
    Ok(builder)
}

/// vm.min_free_kbytes is not in the file, but the zones' min watermarks are its shares. The
/// boot formula, with or without the transparent-hugepage raise (khugepaged), is taken if
/// it gives the file's minimums exactly; otherwise their sum, which is it up to rounding
/// (a sysctl write). Everything else keeps its default.
fn tunables(zones: &[ZoneinfoZone]) -> Tunables {
    let mins_match = |tunables: &Tunables| {
        let Ok(builder) = layout(zones, tunables.clone()) else { return false };
        let Ok(allocator) = PageAllocator::build(builder, TestPlatform::new(cpu_count(zones))) else { return false };
        let ours = ZoneinfoZone::from_allocator(&allocator);
        zones.iter().filter(|zone| zone.managed_pages > 0).all(|theirs| {
            ours.iter().any(|mine| {
                (mine.node, mine.zone_type, mine.watermarks.min_pages)
                    == (theirs.node, theirs.zone_type, theirs.watermarks.min_pages)
            })
        })
    };
    for thp in [false, true] {
        let tunables = Tunables { thp, ..Tunables::default() };
        if mins_match(&tunables) {
            return tunables;
        }
    }
    let min_pages: u64 = zones.iter().map(|zone| zone.watermarks.min_pages).sum();
    Tunables { min_free_kbytes: (min_pages > 0).then_some(min_pages * 4), ..Tunables::default() }
}

/// Where our zone differs from the file's: one line per differing value.
pub fn differences(file: &[ZoneinfoZone], ours: &[ZoneinfoZone]) -> Vec<String> {
    let mut lines = Vec::new();
    for theirs in file.iter().filter(|zone| zone.managed_pages > 0) {
        let name = format!("node {} {:?}", theirs.node, theirs.zone_type);
        let Some(mine) = ours.iter().find(|zone| zone.node == theirs.node && zone.zone_type == theirs.zone_type) else {
            lines.push(format!("{name}: not built"));
            continue;
        };
        let mut compare = |what: &str, file_value: u64, our_value: u64| {
            if file_value != our_value {
                lines.push(format!("{name} {what}: file {file_value}, ours {our_value}"));
            }
        };
        compare("managed", theirs.managed_pages, mine.managed_pages);
        compare("min", theirs.watermarks.min_pages, mine.watermarks.min_pages);
        compare("low", theirs.watermarks.low_pages, mine.watermarks.low_pages);
        compare("high", theirs.watermarks.high_pages, mine.watermarks.high_pages);
        for (index, (&file_value, &our_value)) in theirs.protection.iter().zip(&mine.protection).enumerate() {
            compare(&format!("protection[{index}]"), file_value, our_value);
        }
        // Pageset bounds are the same for every CPU of a zone; compare the first.
        if let (Some(file_line), Some(our_line)) = (theirs.pagesets.first(), mine.pagesets.first()) {
            compare("pcp batch", file_line.batch_pages, our_line.batch_pages);
            compare("pcp high_min", file_line.high_min_pages, our_line.high_min_pages);
            compare("pcp high_max", file_line.high_max_pages, our_line.high_max_pages);
        }
    }
    lines
}

/// One pageset at the end of a replay: the kernel's and ours.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PagesetEnd {
    pub zone: String,
    pub cpu: usize,
    pub kernel_count: u64,
    pub kernel_high: u64,
    pub ours_count: u64,
    pub ours_high: u64,
}

/// The pagesets of `file`'s populated zones, each beside `ours`'s of the same node, zone
/// and CPU.
pub fn paired_pagesets<'a>(
    file: &'a [ZoneinfoZone],
    ours: &'a [ZoneinfoZone],
) -> Vec<(&'a ZoneinfoZone, &'a PagesetLine, &'a PagesetLine)> {
    let mut pairs = Vec::new();
    for theirs in file.iter().filter(|zone| zone.managed_pages > 0) {
        let Some(mine) = ours.iter().find(|zone| zone.node == theirs.node && zone.zone_type == theirs.zone_type) else {
            continue;
        };
        for line in &theirs.pagesets {
            let Some(our_line) = mine.pagesets.iter().find(|our_line| our_line.cpu == line.cpu) else { continue };
            pairs.push((theirs, line, our_line));
        }
    }
    pairs
}

/// The pagesets of populated zones, the file's beside ours.
pub fn pageset_ends(file: &[ZoneinfoZone], ours: &[ZoneinfoZone]) -> Vec<PagesetEnd> {
    paired_pagesets(file, ours)
        .into_iter()
        .map(|(zone, line, our_line)| PagesetEnd {
            zone: format!("node {} {:?}", zone.node, zone.zone_type),
            cpu: line.cpu,
            kernel_count: line.count_pages,
            kernel_high: line.high_pages,
            ours_count: our_line.count_pages,
            ours_high: our_line.high_pages,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first zones of this machine's /proc/zoneinfo (Linux 6.18, 2 CPUs), trimmed.
    pub(crate) const SAMPLE: &str = "Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 1
  pages free     3840
        boost    0
        min      27
        low      33
        high     39
        spanned  4095
        present  3998
        managed  3840
        cma      0
        protection: (0, 3019, 9163, 9163, 9163)
  pagesets
    cpu: 0
              count:    0
              high:     0
              batch:    1
              high_min: 16
              high_max: 240
  vm stats threshold: 6
    cpu: 1
              count:    0
              high:     0
              batch:    1
              high_min: 16
              high_max: 240
  vm stats threshold: 6
  node_unreclaimable:  0
  start_pfn:           1
Node 0, zone    DMA32
  pages free     772919
        boost    0
        min      5558
        low      6947
        high     8336
        spanned  1044480
        present  782336
        managed  772919
        cma      0
        protection: (0, 0, 6144, 6144, 6144)
  pagesets
    cpu: 0
              count:    0
              high:     3473
              batch:    63
              high_min: 3473
              high_max: 48307
  vm stats threshold: 36
    cpu: 1
              count:    5
              high:     3473
              batch:    63
              high_min: 3473
              high_max: 48307
  vm stats threshold: 36
  node_unreclaimable:  0
  start_pfn:           4096
";

    #[test]
    fn parses_zones_watermarks_and_pagesets() {
        let zones = parse_zoneinfo(SAMPLE).unwrap();
        assert_eq!(zones.len(), 2);
        let dma32 = &zones[1];
        assert_eq!((dma32.zone_type, dma32.start_pfn, dma32.spanned_pages), (ZoneType::Dma32, 4096, 1044480));
        assert_eq!((dma32.present_pages, dma32.managed_pages), (782336, 772919));
        assert_eq!((dma32.watermarks.min_pages, dma32.watermarks.high_pages), (5558, 8336));
        assert_eq!(dma32.protection, [0, 0, 6144, 6144, 6144]);
        assert_eq!(dma32.pagesets.len(), 2);
        assert_eq!((dma32.pagesets[1].count_pages, dma32.pagesets[1].high_max_pages), (5, 48307));
        assert_eq!(cpu_count(&zones), 2);
    }

    #[test]
    fn builds_the_machine_and_reports_what_differs() {
        let zones = parse_zoneinfo(SAMPLE).unwrap();
        let allocator =
            pagealloc::PageAllocator::build(machine(&zones).unwrap(), pagealloc::platform::TestPlatform::new(2))
                .unwrap();
        let ours = ZoneinfoZone::from_allocator(&allocator);
        let dma32 = ours.iter().find(|zone| zone.zone_type == ZoneType::Dma32).unwrap();
        assert_eq!((dma32.managed_pages, dma32.present_pages, dma32.spanned_pages), (772919, 782336, 1044480));
        // Without the file's Normal zone our lowmem protection has nothing to protect
        // against, and min_free_kbytes is sized from less memory: both are reported.
        let lines = differences(&zones, &ours);
        assert!(lines.iter().any(|line| line.contains("protection[2]")), "{lines:?}");
        assert!(lines.iter().all(|line| !line.contains("managed")), "{lines:?}");
    }

    #[test]
    fn rejects_text_that_is_not_zoneinfo() {
        assert!(parse_zoneinfo("MemTotal: 1 kB\n").is_err());
        assert!(parse_zoneinfo("Node 0, zone Weird\n").is_err());
    }
}
