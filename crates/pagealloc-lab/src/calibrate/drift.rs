//! How far the host has moved since its profile was taken: `calibrate --check` measures a few
//! of the profile's own constants again after its workloads, so that a reader can tell a
//! model's miss from a host that changed under it (a guest's vCPUs moved to other cores, a
//! busier neighbour). Nothing here feeds a prediction.

use super::{hardware, kernel, kernel_files, page_handoff};
use crate::machine::profile::{MachineProfile, Measurement};

/// One constant: as the profile has it, and as measured now.
pub struct Drift {
    pub name: &'static str,
    pub profiled: f64,
    pub now: Measurement,
}

impl Drift {
    /// now / profiled - 1.
    pub fn change(&self) -> f64 {
        self.now.value / self.profiled - 1.0
    }
}

/// Measures again the profile's constants that the 2-CPU predictions lean on most, between
/// CPUs `a` and `b`; the profile's constants it lacks are skipped.
pub fn measure(
    profile: &MachineProfile,
    (a, b): (usize, usize),
    repeats: usize,
    quick: bool,
) -> Result<Vec<Drift>, String> {
    let scale = if quick { 10 } else { 1 };
    let mut now: Vec<(&'static str, Measurement)> = Vec::new();
    now.push(("line_same_socket_ns", hardware::ping_pong(a, b, 1_000_000 / scale, repeats, "two cores")?));
    let (write, _) = page_handoff::page_handoff(a, b, 20_000 / scale, repeats)?;
    now.push(("page_write_other_l2_ns", write));
    crate::pinning::pin_to_cpu_id(a)?;
    now.push(("page_fault1_page_ns", kernel::page_fault1((20 / scale).max(2) as usize, repeats)?));
    for (name, bytes) in [("unix_stream_4k_ns", 4096), ("unix_stream_64k_ns", 65_536)] {
        let messages = 100_000 / scale as usize;
        now.push((name, kernel::stream_message(kernel::StreamFamily::Unix, bytes, messages, repeats)?));
    }
    now.push(("process_spawn_ns", kernel_files::process_spawn(500 / scale as usize, repeats)?));
    Ok(now
        .into_iter()
        .filter_map(|(name, now)| Some(Drift { name, profiled: profile.constant(name)?.value, now }))
        .collect())
}

/// The table `--check` prints after its own.
pub fn table(drifts: &[Drift]) -> String {
    let mut text = format!("{:<28} {:>12} {:>12} {:>8} {:>7}\n", "the host now", "profiled", "now", "change", "spread");
    for drift in drifts {
        text += &format!(
            "{:<28} {:>12.1} {:>12.1} {:>+7.1}% {:>6.0}%\n",
            drift.name,
            drift.profiled,
            drift.now.value,
            drift.change() * 100.0,
            drift.now.spread() * 100.0
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drift_is_the_change_from_the_profile() {
        let drift = Drift {
            name: "unix_stream_64k_ns",
            profiled: 8_000.0,
            now: Measurement::from_samples(vec![9_000.0, 10_000.0, 11_000.0], "ns", "test"),
        };
        assert!((drift.change() - 0.25).abs() < 1e-12);
        let text = table(&[drift]);
        assert!(text.contains("unix_stream_64k_ns") && text.contains("+25.0%") && text.contains("20%"), "{text}");
    }
}
