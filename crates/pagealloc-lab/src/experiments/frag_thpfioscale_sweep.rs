//! `frag-thpfioscale-sweep`: how much the fragmentation results of `frag-thpfioscale` owe
//! to the parameters the seed does not give. The seed names neither its machines' memory
//! nor the workload's slab and metadata rates, nor its storage, so each is varied one at a
//! time around the base point (1 socket of 8 CPUs, no madvise, 4 GiB (then 8 and 16), a
//! slab page per 3 files, a metadata page per 64 files, no storage model (then 1024 and 256
//! MiB/s of writeback and refault reads), the machine's measured cost to create a file (then
//! a quarter and four times it) and to copy a page (then half and twice it)) for the
//! presets of the seed's goal rows: vanilla-4.20, lowzone
//! (patch 1), boost (patches 1-4) and stall (patch 5). `speedup_pct` is the change of
//! `extfrag_events` against vanilla-4.20 at the same point; every metric is the median of
//! three seeds (one with --quick, which also runs at a quarter of the memory and each
//! parameter at its lower value only).

use super::experiment::{Job, Row};
use super::frag_thpfioscale::{medians, run_metrics, SEEDS};
use super::simulate::{run_args, Setup};
use crate::run::{RunArgs, TopologyKind, WorkloadKind};
use crate::workload::ThpFioScale;

/// The presets swept: the vanilla baseline first.
pub(super) const SWEEP_PRESETS: &[&str] = &["vanilla-4.20", "lowzone", "boost", "stall"];

/// One point of the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Point {
    memory_gib: u64,
    files_per_slab_page: u64,
    files_per_metadata_page: u64,
    /// 0: writers dirty pages at memory speed.
    storage_mib_per_s: u64,
    create_ns: u64,
    copy_page_ns: u64,
}

/// The machine every point runs on: 1 socket of 8 CPUs.
fn setup(memory_gib: u64, machine: Option<&crate::machine::SimMachine>) -> Setup {
    Setup {
        workload: WorkloadKind::Thpfioscale,
        topology: TopologyKind::SmallCache,
        cpus: 8,
        memory_gib,
        duration_ms: 600_000,
        machine: machine.cloned(),
    }
}

/// The base point at full size: frag-thpfioscale's 1-socket machine without madvise, with
/// the machine's file-create and page-copy costs.
fn base_point(machine: Option<&crate::machine::SimMachine>) -> Point {
    let kernel = super::simulate::machine(&setup(4, machine)).kernel;
    Point {
        memory_gib: 4,
        files_per_slab_page: 3,
        files_per_metadata_page: 64,
        storage_mib_per_s: 0,
        create_ns: kernel.file_create_ns,
        copy_page_ns: kernel.page_copy_ns,
    }
}

/// The base point, then each parameter at a lower and a higher value with the others at base
/// (--quick: the lower value only).
fn points(quick: bool, machine: Option<&crate::machine::SimMachine>) -> Vec<Point> {
    let scale = if quick { 4 } else { 1 };
    let base = Point { memory_gib: 4 / scale, ..base_point(machine) };
    let mut points = vec![base];
    // Below 4 GiB node 0 is all DMA32, and patch 1 (lowzone) has no higher zone to spare.
    for memory_gib in [8, 16] {
        points.push(Point { memory_gib: memory_gib / scale, ..base });
    }
    for files_per_slab_page in [1, 8] {
        points.push(Point { files_per_slab_page, ..base });
    }
    for files_per_metadata_page in [16, 256] {
        points.push(Point { files_per_metadata_page, ..base });
    }
    // A fast SSD's writeback, then a slower disk's: kswapd keeps up with writers it did not
    // keep up with at memory speed.
    for storage_mib_per_s in [1024, 256] {
        points.push(Point { storage_mib_per_s, ..base });
    }
    // The writers' own CPU time per file and per page, around the machine's.
    for create_ns in [base.create_ns / 4, base.create_ns * 4] {
        points.push(Point { create_ns, ..base });
    }
    for copy_page_ns in [base.copy_page_ns / 2, base.copy_page_ns * 2] {
        points.push(Point { copy_page_ns, ..base });
    }
    if quick {
        // A smoke run: each parameter at its lower value only (the base, then every other).
        let mut index = 0;
        points.retain(|_| {
            index += 1;
            index == 1 || index % 2 == 0
        });
    }
    points
}

pub(super) fn frag_thpfioscale_sweep(job: &Job<'_>) -> Result<Vec<Row>, String> {
    let &Job { preset, quick, seed, bar, machine } = job;
    let mut rows = Vec::new();
    for point in points(quick, machine) {
        let Point {
            memory_gib,
            files_per_slab_page,
            files_per_metadata_page,
            storage_mib_per_s,
            create_ns,
            copy_page_ns,
        } = point;
        bar.set_message(format!(
            "{preset}, {memory_gib} GiB, slab page per {files_per_slab_page} files, metadata page per \
             {files_per_metadata_page}, storage {storage_mib_per_s} MiB/s, create {create_ns} ns, copy {copy_page_ns} ns"
        ));
        let setup = setup(memory_gib, machine);
        let workload = ThpFioScale {
            files_per_slab_page,
            files_per_metadata_page,
            storage_mib_per_s,
            create_ns,
            copy_page_ns,
            ..ThpFioScale::new(memory_gib << 18, 8, false).with_costs(&super::simulate::machine(&setup).kernel)
        };
        let seeds = if quick { 1 } else { SEEDS };
        let mut runs = Vec::with_capacity(seeds as usize);
        for run_seed in seed..seed + seeds {
            let args = RunArgs { dma32: true, ..run_args(&setup, preset, run_seed, false) };
            runs.push(run_metrics(&workload, &args)?);
        }
        let params = serde_json::json!({
            "memory_gib": memory_gib,
            "files_per_slab_page": files_per_slab_page,
            "files_per_metadata_page": files_per_metadata_page,
            "storage_mib_per_s": storage_mib_per_s,
            "create_ns": create_ns,
            "copy_page_ns": copy_page_ns,
            "seeds": seeds,
        });
        let mut label = format!("{preset} {memory_gib}G s{files_per_slab_page} m{files_per_metadata_page}");
        if storage_mib_per_s > 0 {
            label += &format!(" io{storage_mib_per_s}");
        }
        if create_ns != base_point(machine).create_ns {
            label += &format!(" create{}us", create_ns / 1_000);
        }
        if copy_page_ns != base_point(machine).copy_page_ns {
            label += &format!(" copy{copy_page_ns}ns");
        }
        rows.push(Row { preset: label, params, metrics: medians(&runs) });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_parameter_moves_alone_around_the_base() {
        for quick in [false, true] {
            let points = points(quick, None);
            let base = points[0];
            for point in &points[1..] {
                let changed = [
                    point.memory_gib != base.memory_gib,
                    point.files_per_slab_page != base.files_per_slab_page,
                    point.files_per_metadata_page != base.files_per_metadata_page,
                    point.storage_mib_per_s != base.storage_mib_per_s,
                    point.create_ns != base.create_ns,
                    point.copy_page_ns != base.copy_page_ns,
                ];
                assert_eq!(changed.iter().filter(|&&c| c).count(), 1, "{point:?} against {base:?}");
            }
        }
        assert_eq!(points(false, None).len(), 13);
        let (full, quick) = (points(false, None), points(true, None));
        assert_eq!(quick.len(), 7);
        for (quick_point, full_point) in quick[1..].iter().zip(full[1..].iter().step_by(2)) {
            let scaled = Point { memory_gib: full_point.memory_gib / 4, ..*full_point };
            assert_eq!(*quick_point, scaled, "each parameter's lower value");
        }
    }
}
