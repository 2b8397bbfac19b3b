//! The kernel's text formats that a host description reads from sysfs: CPU lists and
//! cache sizes.

/// Parses a kernel CPU list (`0-3,8,10-11`).
pub fn parse_cpu_list(list: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|part| !part.is_empty()) {
        let number = |text: &str| text.parse::<usize>().map_err(|_| format!("bad CPU list '{list}'"));
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                if first > last {
                    return Err(format!("bad CPU list '{list}'"));
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(number(part)?),
        }
    }
    Ok(cpus)
}

/// Parses a sysfs cache size (`48K`, `32768K`, `1M`) into KiB.
pub fn parse_cache_size_kib(size: &str) -> Result<u64, String> {
    let size = size.trim();
    let (digits, scale) = match size.chars().last() {
        Some('K') => (&size[..size.len() - 1], 1),
        Some('M') => (&size[..size.len() - 1], 1024),
        Some('G') => (&size[..size.len() - 1], 1024 * 1024),
        _ => (size, 1),
    };
    digits.parse::<u64>().map(|value| value * scale).map_err(|_| format!("bad cache size '{size}'"))
}
