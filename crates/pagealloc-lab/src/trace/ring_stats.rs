//! The trace ring buffer's loss counters: a trace that silently lost events would replay
//! as leaks and double frees, so a capture checks every CPU's counters and fails with
//! what was lost.

use std::fs;
use std::path::Path;

/// One CPU's ring-buffer loss counters (from `per_cpu/cpuN/stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CpuStats {
    pub cpu: u32,
    /// Events overwritten before they were read.
    pub overrun: u64,
    pub commit_overrun: u64,
    /// Events not recorded because the buffer was full.
    pub dropped_events: u64,
}

impl CpuStats {
    pub fn lost(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped_events
    }
}

/// Parses one CPU's `per_cpu/cpuN/stats` text (lines such as `overrun: 0`).
pub fn parse_cpu_stats(cpu: u32, text: &str) -> Result<CpuStats, String> {
    let mut stats = CpuStats { cpu, ..CpuStats::default() };
    let mut seen = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let field = match key.trim() {
            "overrun" => &mut stats.overrun,
            "commit overrun" => &mut stats.commit_overrun,
            "dropped events" => &mut stats.dropped_events,
            _ => continue,
        };
        *field = value.trim().parse().map_err(|_| format!("cpu{cpu} stats: cannot parse {line:?}"))?;
        seen += 1;
    }
    if seen != 3 {
        return Err(format!("cpu{cpu} stats: expected overrun, commit overrun and dropped events lines"));
    }
    Ok(stats)
}

/// The stats of every CPU directory under `<instance>/per_cpu`, by CPU number.
pub fn read_all_cpu_stats(instance: &Path) -> Result<Vec<CpuStats>, String> {
    let dir = instance.join("per_cpu");
    let entries = fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut all = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name();
        let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse().ok()) else {
            continue;
        };
        let path = entry.path().join("stats");
        let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        all.push(parse_cpu_stats(cpu, &text)?);
    }
    all.sort_by_key(|s| s.cpu);
    Ok(all)
}

/// None if no CPU lost events; else a message naming the CPUs and their losses.
pub fn loss_report(per_cpu: &[CpuStats], buffer_kib: u64) -> Option<String> {
    let lossy: Vec<String> = per_cpu
        .iter()
        .filter(|s| s.lost() > 0)
        .map(|s| {
            format!(
                "cpu{} lost {} (overrun {}, commit overrun {}, dropped {})",
                s.cpu,
                s.lost(),
                s.overrun,
                s.commit_overrun,
                s.dropped_events
            )
        })
        .collect();
    if lossy.is_empty() {
        return None;
    }
    let total: u64 = per_cpu.iter().map(CpuStats::lost).sum();
    Some(format!(
        "the trace ring buffer lost {total} events: {}; the files were written but the trace is incomplete; \
         rerun with a larger --buffer-kib than {buffer_kib} (e.g. {})",
        lossy.join(", "),
        buffer_kib.saturating_mul(4)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATS: &str = "entries: 12\noverrun: 3\ncommit overrun: 0\nbytes: 4096\n\
        oldest event ts:  16297.098371\nnow ts: 16628.329822\ndropped events: 7\nread events: 100\n";

    #[test]
    fn parses_the_three_loss_counters() {
        let stats = parse_cpu_stats(1, STATS).expect("parses");
        assert_eq!(stats, CpuStats { cpu: 1, overrun: 3, commit_overrun: 0, dropped_events: 7 });
        assert_eq!(stats.lost(), 10);
    }

    #[test]
    fn rejects_missing_or_bad_counters() {
        assert!(parse_cpu_stats(0, "entries: 0\noverrun: 0\n").is_err());
        let bad = STATS.replace("overrun: 3", "overrun: x");
        assert!(parse_cpu_stats(0, &bad).unwrap_err().contains("overrun: x"));
    }

    #[test]
    fn loss_report_is_silent_without_losses() {
        let clean = [CpuStats { cpu: 0, ..CpuStats::default() }, CpuStats { cpu: 1, ..CpuStats::default() }];
        assert_eq!(loss_report(&clean, 65536), None);
    }

    #[test]
    fn loss_report_names_cpus_counts_and_remedy() {
        let per_cpu = [
            CpuStats { cpu: 0, ..CpuStats::default() },
            CpuStats { cpu: 3, overrun: 5, commit_overrun: 1, dropped_events: 2 },
        ];
        let message = loss_report(&per_cpu, 1024).expect("reports");
        assert!(message.contains("lost 8 events"), "{message}");
        assert!(message.contains("cpu3 lost 8 (overrun 5, commit overrun 1, dropped 2)"), "{message}");
        assert!(!message.contains("cpu0"), "{message}");
        assert!(message.contains("--buffer-kib") && message.contains("4096"), "{message}");
    }
}
