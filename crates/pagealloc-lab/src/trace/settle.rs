//! Before a capture, every CPU's pagesets are put in a state the replay can know without
//! reading the kernel's answer: each CPU faults in and unmaps more order-0 movable pages
//! than its largest pageset may hold, so the pageset of the zone those faults come from (the
//! CPU's node's highest zone with the memory) ends at its high, its order-0 movable list
//! full (`pagelab replay --pageset-stock movable`); other zones' pagesets are not touched. The other lists keep what they held:
//! a drain starts with the list being freed to (free_pcppages_bulk()), which here never
//! empties, and no interface reachable from userspace drains them all.

use super::zoneinfo::parse_zoneinfo;

/// Pages each CPU faults and frees: the largest pageset high_max (or high) of any zone,
/// plus room for the drains' batches.
fn settle_pages(zoneinfo: &str) -> Result<u64, String> {
    let zones = parse_zoneinfo(zoneinfo)?;
    let largest = zones
        .iter()
        .flat_map(|zone| zone.pagesets.iter())
        .map(|line| line.high_max_pages.max(line.high_pages) + 8 * line.batch_pages)
        .max()
        .unwrap_or(0);
    Ok(largest.max(1 << 15))
}

/// Settles every online CPU's pageset of the zone its faults come from; returns the pages
/// each CPU faulted and freed.
pub fn settle_pagesets() -> Result<u64, String> {
    let zoneinfo = std::fs::read_to_string("/proc/zoneinfo").map_err(|error| format!("/proc/zoneinfo: {error}"))?;
    let pages = settle_pages(&zoneinfo)?;
    let host = crate::machine::host::read_host()?;
    for place in &host.cpus {
        let cpu = place.cpu;
        std::thread::scope(|scope| {
            scope
                .spawn(move || -> Result<(), String> {
                    crate::pinning::pin_to_cpu_id(cpu)?;
                    crate::calibrate::kernel::fault_and_unmap(pages as usize * 4096)
                })
                .join()
                .map_err(|_| format!("settling CPU {cpu} panicked"))?
        })?;
    }
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cpu_frees_more_than_its_largest_pageset_holds() {
        let zoneinfo = "Node 0, zone   Normal\n  pages free     1000\n        min      10\n        low      12\n        high     14\n        spanned  5000\n        present  5000\n        managed  5000\n  pagesets\n    cpu: 0\n              count: 5\n              high:  70000\n              batch: 63\n  vm stats threshold: 24\n    cpu: 1\n              count: 5\n              high:  100\n              batch: 63\n  vm stats threshold: 24\n  node_unreclaimable:  0\n  start_pfn:           4096\n";
        assert_eq!(settle_pages(zoneinfo).unwrap(), 70_000 + 8 * 63);
        let small = zoneinfo.replace("70000", "100");
        assert_eq!(settle_pages(&small).unwrap(), 1 << 15, "at least a page_fault1 mapping");
        assert!(settle_pages("").is_err(), "not a zoneinfo");
    }
}
