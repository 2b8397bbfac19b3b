//! The simulator's topology and hardware costs from a profile.
//!
//! Rules (each constant measured by `pagelab calibrate`, see its `method`):
//! - a line transfer is the ping-pong's time per turn: each turn a load that waits for the
//!   other CPU's store, then a store, with no locked instruction, so nothing is subtracted
//!   (the simulator charges `atomic_rmw_ns` apart, on top of a transfer, for an RMW);
//! - a line from the LLC or from DRAM is the pointer chase's load-to-use latency;
//! - a page touch costs what zeroing a page did with the buffer in the L2, in the LLC, or
//!   in neither (DRAM); a page another core holds, its measured count of line transfers
//!   (writing or reading it in turns with that core, over the ping-pong) at the host's
//!   transfer;
//! - a page from memory costs each CPU what zeroing one did with as many CPUs zeroing at once
//!   as stream at the time (the `page_zero_per_cpu_ns` curve, relative to its first point);
//! - a line this CPU holds costs 1 ns (an L1 or L2 hit, 4 to 14 cycles): not measured;
//! - a kind of transfer the host lacks (SMT siblings, a second LLC, a second socket) costs what a transfer
//!   between two of its cores does; the topology then never asks for it.

use std::collections::BTreeSet;

use pagealloc_sim::{BandwidthCurve, Calibration, Topology};

use super::Constants;
use crate::machine::profile::HostInfo;

/// The host's sockets, cores and caches as a simulator topology. A socket has as many LLC
/// instances as its CPUs fill CPU 0's LLC sharer list (several on parts whose L3 is split
/// among core complexes); where they do not divide evenly, one of their summed size.
pub(super) fn topology(host: &HostInfo, name: &str) -> Result<Topology, String> {
    if host.cpus.is_empty() {
        return Err("the profile lists no CPUs".into());
    }
    let sockets = host.packages() as u32;
    let cores: BTreeSet<(u32, u32)> = host.cpus.iter().map(|place| (place.package, place.core)).collect();
    let cores_total = cores.len() as u32;
    let threads_per_core = (host.cpus.len() as u32 / cores_total).max(1);
    let first_package = host.cpus[0].package;
    let package_cores = cores.iter().filter(|(package, _)| *package == first_package).count() as u32;
    if package_cores * sockets != cores_total || cores_total * threads_per_core != host.cpus.len() as u32 {
        return Err(format!(
            "{} CPUs on {cores_total} cores in {sockets} packages: not a symmetric topology",
            host.cpus.len()
        ));
    }
    let l2_kib = host.cache_kib(2).ok_or("the profile has no L2 cache size")?;
    let llc_kib = host.llc_kib().ok_or("the profile has no last-level cache size")?;
    let package_cpus = package_cores * threads_per_core;
    let llc_sharers = host.llc_sharers().unwrap_or(package_cpus).clamp(1, package_cpus);
    let instances = package_cpus.div_ceil(llc_sharers);
    let even = package_cpus.is_multiple_of(llc_sharers)
        && package_cores.is_multiple_of(instances)
        && (sockets * instances) as usize <= pagealloc_sim::platform::MAX_LLCS;
    Ok(Topology {
        name: Box::leak(name.to_string().into_boxed_str()),
        sockets,
        cores_per_socket: package_cores,
        threads_per_core,
        l2_bytes_per_core: l2_kib << 10,
        llc_bytes_per_socket: (llc_kib << 10) * u64::from(instances),
        llcs_per_socket: if even { instances } else { 1 },
    })
}

/// How the socket's memory bandwidth is shared, from the curve of N CPUs zeroing pages at
/// once; a profile without it (measured before curves were) shares nothing.
fn memory_sharing(constants: &Constants<'_>) -> Result<BandwidthCurve, String> {
    let Some(curve) = constants.curve("page_zero_per_cpu_ns") else { return Ok(BandwidthCurve::UNSHARED) };
    let points: Vec<(u32, f64)> = curve.points.iter().map(|point| (point.cpus, point.value)).collect();
    BandwidthCurve::from_per_cpu_ns(&points).map_err(|error| format!("page_zero_per_cpu_ns: {error:?}"))
}

/// The hardware costs, rounded to whole nanoseconds (the counter update to picoseconds).
pub(super) fn calibration(constants: &Constants<'_>, name: &str) -> Result<Calibration, String> {
    let transfer =
        |key: &str| -> Option<u64> { constants.get(key).map(|measured| measured.value.round().max(1.0) as u64) };
    let same_socket_ns = transfer("line_same_socket_ns").ok_or("the profile has no line_same_socket_ns")?;
    let other_socket_ns = transfer("line_other_socket_ns").unwrap_or(same_socket_ns);
    let ns = |key: &str| constants.value(key).map(|value| value.round().max(1.0) as u64);
    // A page another core holds: this host's handoff as measured; a profile measured before
    // it was kept in ns has its line transfers at this host's transfer, and one measured
    // before either has the LLC's figure, as was charged then.
    let handoff = |key: &str, transfer_ns: u64| {
        if constants.get(&format!("{key}_ns")).is_some() {
            return ns(&format!("{key}_ns"));
        }
        match constants.get(&format!("{key}_lines")) {
            Some(_) => constants
                .value(&format!("{key}_lines"))
                .map(|lines| (lines * transfer_ns as f64).round().max(1.0) as u64),
            None => ns("page_zero_llc_ns"),
        }
    };
    Ok(Calibration {
        name: Box::leak(name.to_string().into_boxed_str()),
        line_local_ns: 1,
        line_smt_ns: transfer("line_smt_ns").unwrap_or(same_socket_ns),
        line_same_socket_ns: same_socket_ns,
        // A host with one LLC per socket has no such transfer: the topology never asks.
        line_other_llc_ns: transfer("line_other_llc_ns").unwrap_or(same_socket_ns),
        line_other_socket_ns: other_socket_ns,
        line_llc_ns: ns("line_llc_ns")?,
        line_memory_ns: ns("line_memory_ns")?,
        atomic_rmw_ns: ns("atomic_rmw_ns")?,
        page_l2_hit_ns: ns("page_zero_l2_ns")?,
        page_llc_hit_ns: ns("page_zero_llc_ns")?,
        page_miss_ns: ns("page_zero_ns")?,
        page_other_l2_write_ns: handoff("page_write_other_l2", same_socket_ns)?,
        page_other_l2_read_ns: handoff("page_read_other_l2", same_socket_ns)?,
        memory_sharing: memory_sharing(constants)?,
        percpu_counter_update_ps: (constants.value("percpu_counter_update_ns")? * 1000.0).round() as u64,
    })
}
