//! The host a calibration ran on, read from procfs and sysfs: kernel release, CPU model,
//! each online CPU's package and core, CPU 0's caches, and /proc/zoneinfo.

use std::path::Path;

use super::profile::{CacheInfo, CpuPlace, HostInfo};
use super::sysfs_text::{parse_cache_size_kib, parse_cpu_list};

const CPU_SYSFS: &str = "/sys/devices/system/cpu";

fn read_trimmed(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map(|text| text.trim().to_string()).map_err(|e| format!("{}: {e}", path.display()))
}

fn cpu_places() -> Result<Vec<CpuPlace>, String> {
    let online = parse_cpu_list(&read_trimmed(&Path::new(CPU_SYSFS).join("online"))?)?;
    online
        .into_iter()
        .map(|cpu| {
            let topology = Path::new(CPU_SYSFS).join(format!("cpu{cpu}/topology"));
            let id = |name: &str| -> Result<u32, String> {
                let text = read_trimmed(&topology.join(name))?;
                text.parse().map_err(|_| format!("{}: '{text}'", topology.join(name).display()))
            };
            Ok(CpuPlace { cpu, package: id("physical_package_id")?, core: id("core_id")? })
        })
        .collect()
}

fn caches() -> Result<Vec<CacheInfo>, String> {
    let dir = Path::new(CPU_SYSFS).join("cpu0/cache");
    let mut caches = Vec::new();
    for index in 0.. {
        let entry = dir.join(format!("index{index}"));
        if !entry.exists() {
            break;
        }
        caches.push(CacheInfo {
            level: read_trimmed(&entry.join("level"))?.parse().map_err(|_| format!("{}: level", entry.display()))?,
            kind: read_trimmed(&entry.join("type"))?,
            size_kib: parse_cache_size_kib(&read_trimmed(&entry.join("size"))?)?,
            shared_cpu_list: read_trimmed(&entry.join("shared_cpu_list"))?,
        });
    }
    Ok(caches)
}

fn kernel_release() -> String {
    // SAFETY: uname fills the zeroed struct it is given; its fields are NUL-terminated.
    unsafe {
        let mut name: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut name) != 0 {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(name.release.as_ptr()).to_string_lossy().into_owned()
    }
}

fn cpu_model() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name").and_then(|rest| rest.split_once(':')).map(|(_, v)| v.trim()))
        .unwrap_or("unknown")
        .to_string()
}

/// CPU 0's clock, MHz: cpufreq's maximum where the kernel has a cpufreq driver, else
/// /proc/cpuinfo's `cpu MHz` (on a guest, the clock the hypervisor reports); 0 if neither.
fn clock_mhz() -> f64 {
    let cpufreq = Path::new(CPU_SYSFS).join("cpu0/cpufreq/cpuinfo_max_freq");
    if let Some(khz) = read_trimmed(&cpufreq).ok().and_then(|text| text.parse::<f64>().ok()) {
        return khz / 1000.0;
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("cpu MHz").and_then(|rest| rest.split_once(':')))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The host now.
pub fn read_host() -> Result<HostInfo, String> {
    Ok(HostInfo {
        kernel: kernel_release(),
        cpu_model: cpu_model(),
        clock_mhz: clock_mhz(),
        cpus: cpu_places()?,
        caches: caches()?,
        zoneinfo: std::fs::read_to_string("/proc/zoneinfo").unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_cache_sizes_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,8,10-11").unwrap(), [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("5").unwrap(), [5]);
        assert!(parse_cpu_list("3-1").is_err() && parse_cpu_list("a").is_err());
        assert_eq!(parse_cache_size_kib("48K").unwrap(), 48);
        assert_eq!(parse_cache_size_kib("2M").unwrap(), 2048);
        assert!(parse_cache_size_kib("lots").is_err());
    }

    #[test]
    fn this_host_reads_with_cpu_0_and_its_caches() {
        let host = read_host().unwrap();
        assert!(host.cpus.iter().any(|place| place.cpu == 0));
        assert!(host.packages() >= 1);
        assert!(!host.kernel.is_empty());
    }
}
