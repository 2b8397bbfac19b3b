//! `pagelab zoneinfo`: a machine description on the command line, sized as Linux would.

use std::collections::BTreeMap;

use clap::Args;
use pagealloc::sizing::{LinuxVersion, MachineSizing, MachineSpec, NodeSpec, Tunables};
use pagealloc::types::{ZoneType, MAX_NR_ZONES};
use pagealloc::views::{write_zoneinfo_zones, ZoneinfoZone};

#[derive(Args, Debug)]
pub struct ZoneinfoArgs {
    /// Online CPUs in total (split evenly over nodes without --node-cpus); at most 8192,
    /// x86's largest NR_CPUS.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub cpus: Option<u32>,
    /// A zone: NAME=MANAGED_PAGES, optionally NODE/ before and :BOOT_MANAGED_PAGES after;
    /// NAME one of DMA, DMA32, Normal, Movable. BOOT_MANAGED_PAGES is the count when the
    /// kernel sized watermarks at boot (before initrd and init memory were freed); it
    /// defaults to MANAGED_PAGES.
    #[arg(long = "zone", required = true, value_name = "[NODE/]NAME=MANAGED")]
    pub zones: Vec<String>,
    /// CPUs of one node: NODE=N (repeatable).
    #[arg(long = "node-cpus", value_name = "NODE=N")]
    pub node_cpus: Vec<String>,
    /// vm.min_free_kbytes in force; computed as Linux does when absent.
    #[arg(long)]
    pub min_free_kbytes: Option<u64>,
    /// Transparent hugepages enabled: khugepaged raises min_free_kbytes at boot.
    #[arg(long)]
    pub thp: bool,
    /// vm.watermark_scale_factor: the sysctl accepts 1..=3000.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3000))]
    pub watermark_scale_factor: u32,
    /// vm.percpu_pagelist_high_fraction (0, or >= 8).
    #[arg(long, default_value_t = 0)]
    pub percpu_pagelist_high_fraction: u32,
    /// Kernel release whose rules and layout to follow (e.g. 6.1, 6.8, 6.14, mainline).
    #[arg(long, default_value = "mainline")]
    pub kernel: String,
    /// /proc/zoneinfo text, or its numbers per zone as JSON or `key,value` CSV rows.
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::output_format::OutputFormat,
}

fn parse_node_value(text: &str, what: &str) -> Result<(usize, u64), String> {
    let (node, value) = text.split_once('=').ok_or_else(|| format!("{what} '{text}': expected NODE=N"))?;
    let node = node.trim().parse().map_err(|_| format!("{what} '{text}': bad node number"))?;
    let value = value.trim().parse().map_err(|_| format!("{what} '{text}': bad number"))?;
    Ok((node, value))
}

/// Parses `[NODE/]NAME=MANAGED[:BOOT]`.
fn parse_zone(text: &str) -> Result<(usize, ZoneType, u64, u64), String> {
    let (left, pages) = text.split_once('=').ok_or_else(|| format!("zone '{text}': expected [NODE/]NAME=PAGES"))?;
    let (node, name) = match left.split_once('/') {
        Some((node, name)) => (node.trim().parse().map_err(|_| format!("zone '{text}': bad node number"))?, name),
        None => (0, left),
    };
    let zone_type = ZoneType::parse(name.trim())
        .filter(|z| *z != ZoneType::Device)
        .ok_or_else(|| format!("zone '{text}': unknown zone '{name}' (DMA, DMA32, Normal, Movable)"))?;
    let parse_pages = |s: &str| s.trim().parse::<u64>().map_err(|_| format!("zone '{text}': bad page count '{s}'"));
    let (managed, boot) = match pages.split_once(':') {
        Some((managed, boot)) => (parse_pages(managed)?, parse_pages(boot)?),
        None => (parse_pages(pages)?, parse_pages(pages)?),
    };
    Ok((node, zone_type, managed, boot))
}

pub fn machine_spec(args: &ZoneinfoArgs) -> Result<MachineSpec, String> {
    let mut nodes: BTreeMap<usize, NodeSpec> = BTreeMap::new();
    for text in &args.zones {
        let (node, zone_type, managed, boot) = parse_zone(text)?;
        let spec = nodes.entry(node).or_insert_with(|| NodeSpec::new(0, [0; MAX_NR_ZONES]));
        spec.managed_pages[zone_type.index()] = managed;
        spec.boot_managed_pages[zone_type.index()] = boot;
    }
    let mut explicit_cpus = BTreeMap::new();
    for text in &args.node_cpus {
        let (node, cpus) = parse_node_value(text, "--node-cpus")?;
        nodes.entry(node).or_insert_with(|| NodeSpec::new(0, [0; MAX_NR_ZONES]));
        explicit_cpus.insert(node, cpus as u32);
    }
    let node_count = nodes.keys().max().map_or(1, |&max| max + 1);
    // Nodes are numbered densely: a node named only by a higher id exists, empty.
    let nodes: Vec<NodeSpec> =
        (0..node_count).map(|n| nodes.remove(&n).unwrap_or_else(|| NodeSpec::new(0, [0; MAX_NR_ZONES]))).collect();
    let explicit_total: u32 = explicit_cpus.values().sum();
    let implicit_nodes: Vec<usize> = (0..node_count).filter(|n| !explicit_cpus.contains_key(n)).collect();
    let total_cpus = args.cpus.unwrap_or(explicit_total);
    if total_cpus < explicit_total {
        return Err(format!("--cpus {total_cpus} is less than the {explicit_total} CPUs given per node"));
    }
    if implicit_nodes.is_empty() && total_cpus != explicit_total {
        return Err(format!("--cpus {total_cpus} but the nodes' CPUs add up to {explicit_total}"));
    }
    let remaining = total_cpus - explicit_total;
    let mut nodes = nodes;
    for (i, &node) in implicit_nodes.iter().enumerate() {
        let share = remaining / implicit_nodes.len() as u32;
        let extra = u32::from((i as u32) < remaining % implicit_nodes.len() as u32);
        nodes[node].cpus = share + extra;
    }
    for (node, cpus) in explicit_cpus {
        nodes[node].cpus = cpus;
    }
    let kernel =
        LinuxVersion::parse(&args.kernel).ok_or_else(|| format!("--kernel '{}': expected e.g. 6.8", args.kernel))?;
    if !kernel.is_modelled() {
        return Err(format!(
            "--kernel {kernel}: the releases modelled are {} to {}",
            LinuxVersion::OLDEST,
            LinuxVersion::MAINLINE
        ));
    }
    let tunables = Tunables {
        min_free_kbytes: args.min_free_kbytes,
        thp: args.thp,
        watermark_scale_factor: args.watermark_scale_factor,
        percpu_pagelist_high_fraction: args.percpu_pagelist_high_fraction,
        ..Tunables::default()
    };
    Ok(MachineSpec { nodes: nodes.into(), tunables, kernel })
}

pub fn run_zoneinfo(args: &ZoneinfoArgs) -> Result<(), String> {
    let spec = machine_spec(args)?;
    let sizing = MachineSizing::derive(&spec).map_err(|e| e.to_string())?;
    let zones = ZoneinfoZone::from_sizing(&sizing);
    crate::output_format::print_report(args.format, &zones_json(&zones), || {
        let mut text = String::new();
        write_zoneinfo_zones(&mut text, &zones, spec.kernel).map_err(|e| e.to_string())?;
        print!("{text}");
        Ok(())
    })
}

/// The zones' derived numbers, by name (watermarks unboosted, as the sizing gives them).
fn zones_json(zones: &[ZoneinfoZone]) -> serde_json::Value {
    let zone_json = |zone: &ZoneinfoZone| {
        let pagesets: Vec<serde_json::Value> = zone
            .pagesets
            .iter()
            .map(|line| {
                serde_json::json!({
                    "cpu": line.cpu,
                    "count": line.count_pages,
                    "high": line.high_pages,
                    "batch": line.batch_pages,
                    "high_min": line.high_min_pages,
                    "high_max": line.high_max_pages,
                    "vm_stats_threshold": line.stat_threshold,
                })
            })
            .collect();
        serde_json::json!({
            "node": zone.node,
            "zone": zone.zone_type.kernel_name(),
            "min": zone.watermarks.min_pages,
            "low": zone.watermarks.low_pages,
            "high": zone.watermarks.high_pages,
            "promo": zone.watermarks.promo_pages,
            "spanned": zone.spanned_pages,
            "present": zone.present_pages,
            "managed": zone.managed_pages,
            "protection": zone.protection,
            "pagesets": pagesets,
        })
    };
    serde_json::Value::Array(zones.iter().map(zone_json).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cpus: Option<u32>, zones: &[&str], node_cpus: &[&str]) -> ZoneinfoArgs {
        ZoneinfoArgs {
            cpus,
            zones: zones.iter().map(|s| s.to_string()).collect(),
            node_cpus: node_cpus.iter().map(|s| s.to_string()).collect(),
            min_free_kbytes: None,
            thp: false,
            watermark_scale_factor: 10,
            percpu_pagelist_high_fraction: 0,
            kernel: "mainline".into(),
            format: crate::output_format::OutputFormat::Table,
        }
    }

    #[test]
    fn splits_cpus_over_nodes_and_reads_boot_counts() {
        let spec = machine_spec(&args(Some(5), &["DMA32=1000", "1/Normal=2000:1990"], &[])).unwrap();
        assert_eq!(spec.nodes.len(), 2);
        assert_eq!((spec.nodes[0].cpus, spec.nodes[1].cpus), (3, 2));
        assert_eq!(spec.nodes[1].managed_pages[ZoneType::Normal.index()], 2000);
        assert_eq!(spec.nodes[1].boot_managed_pages[ZoneType::Normal.index()], 1990);
    }

    #[test]
    fn explicit_node_cpus_win_and_must_add_up() {
        let spec = machine_spec(&args(Some(8), &["Normal=1000", "1/Normal=1000"], &["1=2"])).unwrap();
        assert_eq!((spec.nodes[0].cpus, spec.nodes[1].cpus), (6, 2));
        assert!(machine_spec(&args(Some(8), &["Normal=1000"], &["0=4"])).is_err());
        assert!(machine_spec(&args(None, &["Bogus=1"], &[])).is_err());
    }
}
