//! The real kernel's process and page-cache costs, timed from userspace: spawning a process
//! (fork, exec and exit of /bin/true, reaped), creating a file, and filling page cache by
//! writing a tmpfs file (order-0 pages, as the page cache of the seeds' kernels: a disk
//! file system's large folios would amortise a page's cost over many) and truncating it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::machine::profile::Measurement;

const PAGE_BYTES: u64 = 4096;

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("pagelab-calibrate-{}-{name}", std::process::id()))
}

/// One process spawned, run to its exit and reaped, ns: `/bin/true`, `count` times.
pub fn process_spawn(count: usize, repeats: usize) -> Result<Measurement, String> {
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        for _ in 0..count {
            let status = std::process::Command::new("/bin/true").status().map_err(|e| format!("/bin/true: {e}"))?;
            if !status.success() {
                return Err(format!("/bin/true exited with {status}"));
            }
        }
        samples.push(start.elapsed().as_nanos() as f64 / count as f64);
    }
    let method = format!("spawn /bin/true (fork, exec, exit) and wait for it, {count} times; time / processes");
    Ok(Measurement::from_samples(samples, "ns", &method))
}

/// One file created and closed in the temporary directory, ns (unlinking is not timed).
pub fn file_create(count: usize, repeats: usize) -> Result<Measurement, String> {
    let dir = scratch("files");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let mut elapsed_ns = 0u128;
        for file in 0..count {
            let path = dir.join(file.to_string());
            let start = Instant::now();
            drop(std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?);
            elapsed_ns += start.elapsed().as_nanos();
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        samples.push(elapsed_ns as f64 / count as f64);
    }
    let _ = std::fs::remove_dir(&dir);
    let method =
        format!("create and close an empty file in {}, {count} files; time / files", std::env::temp_dir().display());
    Ok(Measurement::from_samples(samples, "ns", &method))
}

/// Where page-cache pages are order 0: tmpfs (`/dev/shm`) unless it is missing.
fn page_cache_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Filling the page cache by writing a new file whole, and truncating it to nothing, ns per
/// 4 KiB page each.
pub fn page_cache_fill_and_truncate(mib: u64, repeats: usize) -> Result<(Measurement, Measurement), String> {
    let dir = page_cache_dir();
    let path = dir.join(format!("pagelab-calibrate-{}-cache", std::process::id()));
    let pages = (mib << 20) / PAGE_BYTES;
    let (mut fill, mut truncate) = (Vec::with_capacity(repeats), Vec::with_capacity(repeats));
    let chunk = vec![0x3cu8; 64 << 10];
    for _ in 0..repeats {
        let mut file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let start = Instant::now();
        for _ in 0..(mib << 20) / chunk.len() as u64 {
            file.write_all(&chunk).map_err(|e| format!("write: {e}"))?;
        }
        fill.push(start.elapsed().as_nanos() as f64 / pages as f64);
        let start = Instant::now();
        file.set_len(0).map_err(|e| format!("ftruncate: {e}"))?;
        truncate.push(start.elapsed().as_nanos() as f64 / pages as f64);
    }
    let _ = std::fs::remove_file(&path);
    let method = |what: &str| format!("a {mib} MiB file in {}: {what}; time / 4 KiB pages", dir.display());
    Ok((
        Measurement::from_samples(fill, "ns", &method("written whole in 64 KiB writes (page cache filled)")),
        Measurement::from_samples(truncate, "ns", &method("then truncated to 0 bytes")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_and_file_loops_run() {
        assert!(process_spawn(3, 1).unwrap().value > 0.0);
        assert!(file_create(10, 1).unwrap().value > 0.0);
        let (fill, truncate) = page_cache_fill_and_truncate(4, 1).unwrap();
        assert!(fill.value > 0.0 && truncate.value > 0.0);
    }
}
