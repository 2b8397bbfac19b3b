//! A machine's memory bandwidth curve decides how far page_fault1 scales: a profile whose
//! socket gives no more bandwidth past 4 CPUs holds 16 processes to what 4 CPUs' bandwidth
//! can zero; one without sharing scales with its CPUs.

use crate::machine::profile::{CacheInfo, CpuPlace, Curve, CurvePoint, MachineProfile, Measurement};

/// Zeroing a page from memory on this made-up machine, ns: slow enough that zeroing is much
/// of a fault.
const ZERO_NS: f64 = 1_500.0;

/// The reference profile on a 16-CPU package, its zeroing slow, with a bandwidth curve of
/// per-CPU costs `(cpus, ns)` if given.
fn profile(curve: Option<&[(u32, f64)]>) -> MachineProfile {
    let mut profile = crate::machine::seeds::reference_profile().clone();
    profile.host.cpus = (0..16).map(|cpu| CpuPlace { cpu, package: 0, core: cpu as u32 }).collect();
    for cache in &mut profile.host.caches {
        cache.shared_cpu_list = if cache.level == 3 { "0-15".into() } else { "0".into() };
    }
    profile.host.caches.retain(|cache: &CacheInfo| cache.level >= 2);
    let set = |profile: &mut MachineProfile, name: &str, value: f64| {
        profile.constants.iter_mut().find(|(key, _)| key == name).expect(name).1.value = value;
    };
    let fault_ns = profile.constant("page_fault1_page_ns").unwrap().value;
    set(&mut profile, "page_zero_ns", ZERO_NS);
    set(&mut profile, "page_fault1_page_ns", fault_ns + ZERO_NS);
    profile.curves = curve
        .map(|points| {
            let points = points
                .iter()
                .map(|&(cpus, ns)| CurvePoint::new(cpus, &Measurement::from_samples(vec![ns], "ns", "test")))
                .collect();
            vec![("page_zero_per_cpu_ns".to_string(), Curve { unit: "ns".into(), method: "test".into(), points })]
        })
        .unwrap_or_default();
    profile
}

/// page_fault1's processes' faults per second at `tasks` on `profile`.
fn faults_per_s(profile: &MachineProfile, tasks: u32) -> f64 {
    let path = std::env::temp_dir().join(format!("pagelab-bandwidth-{}-{tasks}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string(profile).unwrap()).unwrap();
    let words = ["run", "page_fault1", "--mode", "process", "--cpus", &tasks.to_string(), "--duration-ms", "40"];
    let machine = ["--machine", path.to_str().unwrap(), "--preset", "mainline"];
    let all: Vec<&str> = words.iter().chain(&machine).copied().collect();
    let args = super::RunArgs::try_parse_words(&all).unwrap();
    let workload = args.workload().unwrap();
    let rate = super::run_sim(workload.as_ref(), &args).unwrap().work_per_sec;
    std::fs::remove_file(&path).unwrap();
    rate
}

#[test]
fn a_bandwidth_curve_flat_past_four_cpus_flattens_page_fault1_processes() {
    let unshared = profile(None);
    let (four, sixteen) = (faults_per_s(&unshared, 4), faults_per_s(&unshared, 16));
    assert!(sixteen > 3.8 * four, "without sharing 16 processes scale: {four:.0} -> {sixteen:.0}");
    // Past 4 CPUs the socket gives no more: n CPUs each pay n / 4 of one alone.
    let flat = profile(Some(&[(1, ZERO_NS), (2, ZERO_NS), (4, ZERO_NS), (8, 2.0 * ZERO_NS), (16, 4.0 * ZERO_NS)]));
    let (flat_four, flat_sixteen) = (faults_per_s(&flat, 4), faults_per_s(&flat, 16));
    assert!((flat_four / four - 1.0).abs() < 0.05, "4 CPUs fit the socket: {four:.0} against {flat_four:.0}");
    // Every fault zeroes a page: 16 processes fault no faster than 4 CPUs' bandwidth zeroes.
    let bandwidth_bound = 4.0 * 1e9 / ZERO_NS;
    assert!(flat_sixteen <= 1.05 * bandwidth_bound, "{flat_sixteen:.0} faults/s past {bandwidth_bound:.0}");
    assert!(flat_sixteen < 0.75 * sixteen, "flattened: {flat_sixteen:.0} against {sixteen:.0} unshared");
}

#[test]
fn a_huge_page_fault_zeroes_its_512_pages_from_one_order_9_block() {
    let words = ["run", "page_fault1", "--order", "9", "--cpus", "1", "--duration-ms", "20", "--preset", "mainline"];
    let args = super::RunArgs::try_parse_words(&words).unwrap();
    let report = super::run_sim(args.workload().unwrap().as_ref(), &args).unwrap();
    let touches = report.sim.as_ref().unwrap().page_touches;
    assert!(report.work_units > 10, "{} faults", report.work_units);
    assert_eq!(touches, 512 * report.work_units, "every fault zeroes a huge page");
    assert_eq!(report.params["fault_order"], 9);
}
