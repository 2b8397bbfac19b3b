//! The errors a description warrants, predicted from the builder's documentation rather than
//! from its code: every rule the description breaks gives one acceptable `BuildError`,
//! whatever order the builder checks them in.

use pagealloc::builder::{DMA32_START_PFN, NORMAL_START_PFN};
use pagealloc::sizing::{SizingError, Tunables};
use pagealloc::types::PFN_LIMIT;
use pagealloc::{BuildError, ZoneType};

use super::machine::Machine;

/// Every error the description warrants, derived from the builder's documentation and
/// independent of the order in which it checks. `InvalidPolicy`'s text is not compared.
pub fn expected_errors(machine: &Machine) -> Vec<BuildError> {
    let mut errors = Vec::new();
    if machine.zones.is_empty() {
        errors.push(BuildError::NoZones);
    }
    let node_cpus = node_cpus(machine, &mut errors);
    let pcp = &machine.policy.pcp;
    let too_large = |pages: u32| pages > 1 << 24;
    let inert = inert_switch(&machine.policy);
    if pcp.max_cached_order > 3
        || pcp.thp_lists > 2
        || pcp.batch_scale_max.is_some_and(|scale| scale > 6)
        || pcp.batch_override.is_some_and(|batch| batch == 0 || too_large(batch))
        || pcp.high_override.is_some_and(too_large)
        || inert
    {
        errors.push(BuildError::InvalidPolicy(""));
    }
    for (kind, ranges) in [("hole", &machine.holes), ("reserve", &machine.reserves)] {
        for range in ranges.iter().filter(|range| range.start > range.end) {
            errors.push(BuildError::InvertedRange { kind, range: range.clone() });
        }
    }
    zone_errors(machine, node_cpus.len(), &mut errors);
    let fraction = machine.tunables.percpu_pagelist_high_fraction;
    if fraction != 0 && fraction < Tunables::MIN_PERCPU_PAGELIST_HIGH_FRACTION {
        errors.push(BuildError::Sizing(SizingError::HighFractionRejected(fraction)));
    }
    errors
}

/// The CPUs of each node the machine declares (by count or by CPU map; one node of every
/// CPU when neither), adding the `CpuMismatch` errors a declaration warrants.
fn node_cpus(machine: &Machine, errors: &mut Vec<BuildError>) -> Vec<u32> {
    let node_cpus: Vec<u32> = match (&machine.cpu_map, &machine.node_cpus) {
        (Some(map), _) => {
            if map.len() != machine.cpus {
                errors.push(BuildError::CpuMismatch { node_cpus: map.len() as u32, platform_cpus: machine.cpus });
            }
            let nodes = map.iter().max().map_or(0, |&max| usize::from(max) + 1);
            (0..nodes).map(|node| map.iter().filter(|&&n| usize::from(n) == node).count() as u32).collect()
        }
        (None, Some(declared)) if !declared.is_empty() => declared.clone(),
        _ => vec![machine.cpus as u32],
    };
    let sum: u32 = node_cpus.iter().sum();
    if machine.cpu_map.is_none() && sum as usize != machine.cpus {
        errors.push(BuildError::CpuMismatch { node_cpus: sum, platform_cpus: machine.cpus });
    }
    node_cpus
}

/// The errors each zone warrants alone (node, type, span, limit, size) and with each zone
/// before it (duplicate, overlap), on a machine of `nodes` nodes.
fn zone_errors(machine: &Machine, nodes: usize, errors: &mut Vec<BuildError>) {
    for (i, (node, zone_type, span)) in machine.zones.iter().enumerate() {
        let zone_type = *zone_type;
        if usize::from(*node) >= nodes {
            errors.push(BuildError::UnknownNode { node: *node });
        }
        if zone_type == ZoneType::Device {
            errors.push(BuildError::DeviceZone);
        }
        if span.start >= span.end {
            errors.push(BuildError::EmptySpan { zone_type });
        }
        // DMA below 16 MiB, DMA32 below 4 GiB, and every zone at or below `PFN_LIMIT`.
        let limit_pfn = match zone_type {
            ZoneType::Dma => DMA32_START_PFN,
            ZoneType::Dma32 => NORMAL_START_PFN,
            _ => PFN_LIMIT,
        };
        if span.end > limit_pfn {
            errors.push(BuildError::ZoneAboveLimit { zone_type, end_pfn: span.end, limit_pfn });
        }
        let spanned_pages = span.end.saturating_sub(span.start);
        if spanned_pages >= u64::from(u32::MAX) {
            errors.push(BuildError::ZoneTooLarge { zone_type, spanned_pages });
        }
        for (other_node, other_type, other_span) in &machine.zones[..i] {
            if other_node == node && *other_type == zone_type {
                errors.push(BuildError::DuplicateZone { node: *node, zone_type });
            }
            if other_span.start < span.end && span.start < other_span.end {
                // The builder sorts zones by (node, type) first: either order may be named.
                errors.push(BuildError::Overlap { first: other_span.clone(), second: span.clone() });
                errors.push(BuildError::Overlap { first: span.clone(), second: other_span.clone() });
            }
        }
    }
}

/// A switch set where it does nothing, as the builder documents the rules: single-pass
/// drains for coalesced runs, free_high for its cap, THP lists for their batch shift, a
/// buddy-bound list (fullest-first or per-CPU arenas) to warm, per-CPU arenas to hand frees
/// to, fullest-first for its threshold (128 is the neutral value). Pageset switches count
/// only with pagesets on.
fn inert_switch(policy: &pagealloc::Policy) -> bool {
    use pagealloc::policy::{ArenaRule, FreeHighRule};
    let (pcp, frag) = (&policy.pcp, &policy.frag.beyond_linux);
    let (drain, per_cpu_arenas) = (&pcp.drain, policy.arenas == ArenaRule::PerCpu);
    let pageset_rules = [
        drain.beyond_linux.coalesce_runs && drain.two_pass,
        pcp.free_high_capped && pcp.free_high == FreeHighRule::Off,
        pcp.thp_batch_shift != 0 && pcp.thp_lists == 0,
        drain.beyond_linux.warm_merges && !frag.fullest_first && !per_cpu_arenas,
        drain.beyond_linux.hand_remote_frees && !per_cpu_arenas,
    ];
    (pcp.enabled && pageset_rules.contains(&true)) || (frag.buddy_bound_free_pages != 128 && !frag.fullest_first)
}

/// Whether `actual` is the error `expected` predicts (any `InvalidPolicy` text will do).
pub(super) fn same_error(expected: &BuildError, actual: &BuildError) -> bool {
    expected == actual || matches!((expected, actual), (BuildError::InvalidPolicy(_), BuildError::InvalidPolicy(_)))
}
