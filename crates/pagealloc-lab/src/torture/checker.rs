//! The checks at quiescent points: with every worker between batches (the gate's write
//! side held), the allocator's invariant checker must pass and its census of allocated
//! pages must equal the pages the shadow says the workers hold. At the end, with every block
//! freed, all memory must be free again.

use std::time::Instant;

use pagealloc::platform::Platform;
use pagealloc::PageCensus;

use super::worker::Shared;

/// What the checks did and saw.
#[derive(Clone, Debug, Default)]
pub struct CheckStats {
    pub checks: u64,
    pub total_ns: u64,
    pub max_ns: u64,
    /// Most pages the workers held at a check: how close to the watermarks the run got.
    pub peak_held_pages: u64,
    /// CPUs taken offline at quiescent points (none of their users mid-call, as when Linux
    /// runs page_alloc_cpu_dead()).
    pub offlined_cpus: u64,
}

/// Brings the workers to a quiescent point and checks; then, still quiescent, brings the
/// CPU offlined at the last check back online and offlines the next (round robin), so the
/// next batches find its pagesets empty and the next check finds its node's background
/// work on another CPU.
pub fn quiescent_check(shared: &Shared<'_>, stats: &mut CheckStats) {
    let quiet = shared.gate.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    let start = Instant::now();
    let context = format!("check {}", stats.checks + 1);
    if let Some(census) = check_census(shared, &context) {
        stats.peak_held_pages = stats.peak_held_pages.max(census.allocated_pages);
    }
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    let cpus = shared.allocator.platform().nr_cpus() as u64;
    let cpu = (stats.checks % cpus) as usize;
    if stats.checks > 0 {
        shared.allocator.hotplug().cpu_online(((stats.checks - 1) % cpus) as usize);
    }
    shared.allocator.hotplug().cpu_offline(cpu);
    drop(quiet);
    stats.offlined_cpus += 1;
    stats.checks += 1;
    stats.total_ns += elapsed_ns;
    stats.max_ns = stats.max_ns.max(elapsed_ns);
}

/// Runs the invariant checker and compares its census with the shadow (allowing for blocks
/// set aside after an earlier violation); returns the census, or `None` after reporting a
/// violation.
fn check_census(shared: &Shared<'_>, context: &str) -> Option<PageCensus> {
    let census = match shared.allocator.check_invariants() {
        Ok(census) => census,
        Err(violation) => {
            shared.violations.report(format!("{context}: invariant checker: {violation}"));
            return None;
        }
    };
    let held_pages = shared.shadow.held_pages();
    let quarantined_pages = shared.violations.quarantined_pages();
    if census.allocated_pages != held_pages + quarantined_pages {
        shared.violations.report(format!(
            "{context}: the allocator counts {} pages allocated, the shadow {held_pages} held (+{quarantined_pages} set aside)",
            census.allocated_pages
        ));
        return None;
    }
    Some(census)
}

/// After the workers freed everything and stopped: with the pagesets drained, every managed
/// page but those set aside is free, and the shadow holds nothing.
pub fn final_check(shared: &Shared<'_>, stats: &mut CheckStats) {
    let allocator = shared.allocator;
    allocator.pagesets().drain_all();
    if let Some(census) = check_census(shared, "final check") {
        let expected_free = allocator.counters().managed_pages() - shared.violations.quarantined_pages();
        if census.free_pages != expected_free || shared.shadow.held_pages() != 0 {
            shared.violations.report(format!(
                "final check: {} pages free of {expected_free} expected, {} still held in the shadow",
                census.free_pages,
                shared.shadow.held_pages()
            ));
        }
    }
    stats.checks += 1;
}
