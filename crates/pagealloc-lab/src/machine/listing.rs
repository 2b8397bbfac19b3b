//! `pagelab machines`: the built-in machines, every constant with where it comes from.

use serde_json::json;

use super::seeds::{reference, SeedHardware, SEED_MACHINES};
use super::SimMachine;

#[derive(clap::Args, Debug)]
pub struct MachinesArgs {
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::output_format::OutputFormat,
}

/// A cited transfer as JSON: its value, source and method.
fn transfer(cited: &super::seeds::CitedTransfer) -> serde_json::Value {
    json!([cited.value, cited.source, format!("{:?}", cited.method)])
}

/// One machine's costs as JSON: hardware, kernel, and the citations where it has them.
fn machine_json(machine: &SimMachine, seed: Option<&SeedHardware>) -> serde_json::Value {
    let sources = seed.map(|seed| {
        json!({
            "cpu": seed.cpu,
            "base_clock_mhz": [seed.base_clock_mhz.value, seed.base_clock_mhz.source],
            "line_smt_ns": transfer(&seed.line_smt_ns),
            "line_same_socket_ns": transfer(&seed.line_same_socket_ns),
            "line_other_llc_ns": seed.line_other_llc_ns.as_ref().map(transfer),
            "line_other_socket_ns": transfer(&seed.line_other_socket_ns),
            "line_llc_ns": [seed.llc_ns.value, seed.llc_ns.source],
            "line_memory_ns": [seed.memory_ns.value, seed.memory_ns.source],
            "locked_rmw_cycles": [seed.locked_rmw_cycles.value, seed.locked_rmw_cycles.source],
            "load_gb_per_s": seed.load_gb_per_s.map(|b| json!([b.value, b.source])),
            "socket_bandwidth": seed.socket_bandwidth.map(|bandwidth| match bandwidth {
                super::seeds::SocketBandwidth::Curve { load_gb_per_s, source } => json!([load_gb_per_s, source]),
                super::seeds::SocketBandwidth::Saturated(cited) => json!([cited.value, cited.source]),
            }),
            "tlb_shootdown_caller_ns": [super::seeds::SHOOTDOWN_CALLER_NS, super::seeds::SHOOTDOWN_SOURCE],
        })
    });
    json!({
        "name": machine.topology.name,
        "topology": machine.topology,
        "hardware": machine.calibration,
        "kernel": machine.kernel,
        "cited": sources,
    })
}

pub fn run(args: &MachinesArgs) -> Result<(), String> {
    let mut machines = vec![machine_json(reference(), None)];
    machines.extend(SEED_MACHINES.iter().map(|seed| machine_json(&seed.machine(), Some(seed))));
    let all = serde_json::Value::Array(machines);
    crate::output_format::print_report(args.format, &all, || {
        print!("{}", table(reference(), &SEED_MACHINES));
        Ok(())
    })
}

/// A table row: a constant's name and how to read it from a machine.
type Row = (&'static str, fn(&SimMachine) -> u64);

/// A column per machine, a row per constant.
fn table(reference: &SimMachine, seeds: &[SeedHardware]) -> String {
    let machines: Vec<SimMachine> =
        std::iter::once(reference.clone()).chain(seeds.iter().map(SeedHardware::machine)).collect();
    let rows: [Row; 33] = [
        ("line_smt_ns", |m| m.calibration.line_smt_ns),
        ("line_same_socket_ns", |m| m.calibration.line_same_socket_ns),
        ("line_other_llc_ns", |m| m.calibration.line_other_llc_ns),
        ("line_other_socket_ns", |m| m.calibration.line_other_socket_ns),
        ("line_llc_ns", |m| m.calibration.line_llc_ns),
        ("line_memory_ns", |m| m.calibration.line_memory_ns),
        ("atomic_rmw_ns", |m| m.calibration.atomic_rmw_ns),
        ("page_l2_hit_ns", |m| m.calibration.page_l2_hit_ns),
        ("page_llc_hit_ns", |m| m.calibration.page_llc_hit_ns),
        ("page_miss_ns", |m| m.calibration.page_miss_ns),
        // A page from memory with every CPU of a socket streaming, per mille of one alone.
        ("page_miss_all_permille", |m| m.calibration.memory_sharing.per_mille(m.topology.cpus() / m.topology.sockets)),
        ("page_other_l2_write_ns", |m| m.calibration.page_other_l2_write_ns),
        ("page_other_l2_read_ns", |m| m.calibration.page_other_l2_read_ns),
        ("counter_update_ps", |m| m.calibration.percpu_counter_update_ps),
        ("kernel_alloc_ns o0", |m| m.kernel.kernel_calls.alloc_ns[0]),
        ("kernel_alloc_ns o1+", |m| m.kernel.kernel_calls.alloc_ns[1]),
        ("kernel_free_ns o0", |m| m.kernel.kernel_calls.free_ns[0]),
        ("kernel_free_ns o1+", |m| m.kernel.kernel_calls.free_ns[1]),
        ("fault_ns", |m| m.kernel.fault_ns),
        ("map_unmap_ns", |m| m.kernel.map_unmap_ns),
        ("unix_cross_cpu_ns", |m| m.kernel.unix_cross_cpu_ns),
        ("tcp_cross_cpu_ns", |m| m.kernel.tcp_cross_cpu_ns),
        ("wake_other_cpu_ns", |m| m.kernel.wake_other_cpu_ns),
        ("wake_waker_ns", |m| m.kernel.wake_waker_ns),
        ("switch_same_cpu_ns", |m| m.kernel.switch_same_cpu_ns),
        ("process_spawn_ns", |m| m.kernel.process_spawn_ns),
        ("file_create_ns", |m| m.kernel.file_create_ns),
        ("page_cache_fill_ns", |m| m.kernel.page_cache_fill_ns),
        ("page_cache_trunc_ns", |m| m.kernel.page_cache_truncate_ns),
        ("page_copy_ns", |m| m.kernel.page_copy_ns),
        ("clear_page_ns", |m| m.kernel.clear_page_ns),
        ("shootdown_caller_ns 1", |m| m.kernel.shootdown_caller_ns.first().map_or(0, |&(_, ns)| ns)),
        ("shootdown_target_ns 1", |m| m.kernel.shootdown_target_ns.first().map_or(0, |&(_, ns)| ns)),
    ];
    let mut text = format!("{:<22}", "constant");
    for machine in &machines {
        text += &format!(" {:>19}", machine.topology.name);
    }
    text.push('\n');
    for (name, value) in rows {
        text += &format!("{name:<22}");
        for machine in &machines {
            text += &format!(" {:>19}", value(machine));
        }
        text.push('\n');
    }
    text + "sources: pagelab machines --format json (\"cited\"), docs/simulator.md\n"
}
