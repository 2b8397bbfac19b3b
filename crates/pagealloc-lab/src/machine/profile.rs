//! A machine profile as `pagelab calibrate` writes it: the host (kernel, CPU, topology,
//! zones) and every measured constant with its unit, how it was measured and its spread over
//! the repeats. The format is JSON, read back with the same types.

use serde::{Deserialize, Serialize};

/// One measured constant: the median of `repeats` runs, with their extremes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub value: f64,
    pub unit: String,
    /// What was timed, and how the value is derived from it.
    pub method: String,
    pub repeats: usize,
    pub min: f64,
    pub max: f64,
}

impl Measurement {
    /// The median of `samples` (at least one), with their spread.
    pub fn from_samples(mut samples: Vec<f64>, unit: &str, method: &str) -> Measurement {
        assert!(!samples.is_empty(), "a measurement needs a sample");
        assert!(samples.iter().all(|sample| sample.is_finite()), "samples are finite: {samples:?}");
        let spread = crate::stats::Spread::of(&mut samples).expect("a sample");
        Measurement {
            value: spread.median,
            unit: unit.to_string(),
            method: method.to_string(),
            repeats: samples.len(),
            min: spread.min,
            max: spread.max,
        }
    }

    /// The spread, (max - min) / median, as a fraction.
    pub fn spread(&self) -> f64 {
        if self.value == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.value
        }
    }
}

/// A shared resource measured with 1, 2, 4, ... CPUs using it at once (every CPU of the host
/// last): each point the median over the repeats, with its extremes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// The unit of every point's value (`ns` per operation per CPU, say).
    pub unit: String,
    /// What was timed at each point, and how the value is derived from it.
    pub method: String,
    /// By CPU count, ascending, the first at 1 CPU.
    pub points: Vec<CurvePoint>,
}

/// One point of a [`Curve`]: `cpus` CPUs at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub cpus: u32,
    pub value: f64,
    pub repeats: usize,
    pub min: f64,
    pub max: f64,
}

impl CurvePoint {
    /// The point of a measurement at `cpus` CPUs.
    pub fn new(cpus: u32, measured: &Measurement) -> CurvePoint {
        CurvePoint { cpus, value: measured.value, repeats: measured.repeats, min: measured.min, max: measured.max }
    }
}

impl Curve {
    /// The point at `cpus`, if measured.
    pub fn at(&self, cpus: u32) -> Option<&CurvePoint> {
        self.points.iter().find(|point| point.cpus == cpus)
    }

    /// The CPU counts a curve is measured at on a host of `cpus` CPUs: the powers of two
    /// below it, and `cpus` itself.
    pub fn cpu_series(cpus: u32) -> Vec<u32> {
        let mut series: Vec<u32> = (0..u32::BITS).map(|shift| 1u32 << shift).take_while(|&n| n < cpus).collect();
        series.push(cpus.max(1));
        series
    }
}

/// A cache as sysfs describes it (`/sys/devices/system/cpu/cpu0/cache/index*`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub size_kib: u64,
    /// CPUs sharing it, as the kernel lists them (`0-1`).
    pub shared_cpu_list: String,
}

/// One online CPU's place in the topology (sysfs `topology/`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlace {
    pub cpu: usize,
    pub package: u32,
    pub core: u32,
}

/// The host as calibrated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -r`.
    pub kernel: String,
    /// `/proc/cpuinfo`'s model name.
    pub cpu_model: String,
    /// CPU 0's clock, MHz (0: unknown), for scaling this host's kernel costs to another
    /// machine's clock.
    #[serde(default)]
    pub clock_mhz: f64,
    pub cpus: Vec<CpuPlace>,
    /// CPU 0's caches.
    pub caches: Vec<CacheInfo>,
    /// `/proc/zoneinfo` as read, for `--machine` users to build zones from.
    pub zoneinfo: String,
}

impl HostInfo {
    pub fn packages(&self) -> usize {
        let mut packages: Vec<u32> = self.cpus.iter().map(|place| place.package).collect();
        packages.sort_unstable();
        packages.dedup();
        packages.len()
    }

    /// The size of CPU 0's data or unified cache of `level`, KiB.
    pub fn cache_kib(&self, level: u32) -> Option<u64> {
        self.caches.iter().find(|cache| cache.level == level && cache.kind != "Instruction").map(|c| c.size_kib)
    }

    /// The last-level cache: the highest level, unified or data.
    fn llc(&self) -> Option<&CacheInfo> {
        self.caches.iter().filter(|cache| cache.kind != "Instruction").max_by_key(|cache| cache.level)
    }

    /// CPUs sharing CPU 0's last-level cache (its `shared_cpu_list`), if it parses.
    pub fn llc_sharer_cpus(&self) -> Option<Vec<usize>> {
        let cpus = super::sysfs_text::parse_cpu_list(&self.llc()?.shared_cpu_list).ok()?;
        (!cpus.is_empty()).then_some(cpus)
    }

    /// How many CPUs share CPU 0's last-level cache, if its list parses.
    pub fn llc_sharers(&self) -> Option<u32> {
        self.llc_sharer_cpus().map(|cpus| cpus.len() as u32)
    }

    /// The last-level cache's size, KiB.
    pub fn llc_kib(&self) -> Option<u64> {
        self.llc().map(|cache| cache.size_kib)
    }
}

/// What `pagelab calibrate` writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineProfile {
    /// Format version: a reader refuses another.
    pub format: u32,
    /// When, as seconds since the Unix epoch.
    pub measured_at_s: u64,
    pub host: HostInfo,
    /// Named constants, in the order measured (`line_same_core_ns`, `page_fault_ns`, ...).
    pub constants: Vec<(String, Measurement)>,
    /// Named shared-resource curves (`page_zero_per_cpu_ns`, ...); a profile written before
    /// they were measured has none.
    #[serde(default)]
    pub curves: Vec<(String, Curve)>,
}

impl MachineProfile {
    pub const FORMAT: u32 = 1;

    pub fn constant(&self, name: &str) -> Option<&Measurement> {
        self.constants.iter().find(|(key, _)| key == name).map(|(_, measurement)| measurement)
    }

    pub fn curve(&self, name: &str) -> Option<&Curve> {
        self.curves.iter().find(|(key, _)| key == name).map(|(_, curve)| curve)
    }

    /// Reads a profile, refusing another format version or malformed JSON with a message
    /// naming the file.
    pub fn read(path: &std::path::Path) -> Result<MachineProfile, String> {
        let text = std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
        let profile: MachineProfile = serde_json::from_str(&text)
            .map_err(|error| format!("{}: not a machine profile: {error}", path.display()))?;
        if profile.format != Self::FORMAT {
            return Err(format!(
                "{}: profile format {} (this pagelab reads {})",
                path.display(),
                profile.format,
                Self::FORMAT
            ));
        }
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measurement_is_the_median_with_its_extremes() {
        let odd = Measurement::from_samples(vec![5.0, 1.0, 3.0], "ns", "test");
        assert_eq!((odd.value, odd.min, odd.max, odd.repeats), (3.0, 1.0, 5.0, 3));
        let even = Measurement::from_samples(vec![4.0, 1.0, 3.0, 2.0], "ns", "test");
        assert_eq!(even.value, 2.5);
        assert!((even.spread() - 1.2).abs() < 1e-12);
    }

    #[test]
    fn curves_are_measured_at_powers_of_two_and_every_cpu() {
        assert_eq!(Curve::cpu_series(1), [1]);
        assert_eq!(Curve::cpu_series(2), [1, 2]);
        assert_eq!(Curve::cpu_series(6), [1, 2, 4, 6]);
        assert_eq!(Curve::cpu_series(16), [1, 2, 4, 8, 16]);
    }

    #[test]
    fn a_profile_round_trips_and_other_formats_are_refused() {
        let profile = MachineProfile {
            format: MachineProfile::FORMAT,
            measured_at_s: 1,
            host: HostInfo {
                kernel: "6.18".into(),
                cpu_model: "test".into(),
                clock_mhz: 2600.0,
                cpus: vec![CpuPlace { cpu: 0, package: 0, core: 0 }],
                caches: vec![CacheInfo {
                    level: 3,
                    kind: "Unified".into(),
                    size_kib: 32768,
                    shared_cpu_list: "0".into(),
                }],
                zoneinfo: String::new(),
            },
            constants: vec![("atomic_rmw_ns".into(), Measurement::from_samples(vec![7.0], "ns", "test"))],
            curves: vec![(
                "page_zero_per_cpu_ns".into(),
                Curve {
                    unit: "ns".into(),
                    method: "test".into(),
                    points: vec![CurvePoint::new(1, &Measurement::from_samples(vec![150.0, 160.0], "ns", "test"))],
                },
            )],
        };
        let dir = std::env::temp_dir().join(format!("pagelab-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("profile.json");
        std::fs::write(&path, serde_json::to_string(&profile).unwrap()).unwrap();
        assert_eq!(MachineProfile::read(&path).unwrap(), profile);
        assert_eq!(profile.host.llc_kib(), Some(32768));
        assert_eq!(profile.curve("page_zero_per_cpu_ns").unwrap().at(1).unwrap().value, 155.0);
        // A profile without curves (written before they were measured) still reads.
        let mut old = serde_json::to_value(&profile).unwrap();
        old.as_object_mut().unwrap().remove("curves");
        std::fs::write(&path, old.to_string()).unwrap();
        assert!(MachineProfile::read(&path).unwrap().curves.is_empty());
        let mut other = profile.clone();
        other.format = 99;
        std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
        assert!(MachineProfile::read(&path).unwrap_err().contains("format 99"));
        std::fs::write(&path, "{").unwrap();
        assert!(MachineProfile::read(&path).unwrap_err().contains("not a machine profile"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
