//! The vmstat switches: how NUMA events and the zone's free-page count are kept.

/// How the NUMA event counters (numa_hit, numa_miss, numa_foreign, interleave_hit, local,
/// other) are kept: the stages of the 2017-2021 NUMA-statistics work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NumaStats {
    /// Ordinary zone statistics (before v4.14): a per-CPU diff per counter, folded into the
    /// zone's and the global counters past the threshold with the half-threshold overstep.
    /// `threshold: None` is the zone's `stat_threshold` (normal or pressure formula);
    /// `Some(t)`, 32..=32765, fixes it, as the 2017 RFC swept it.
    ZoneStat { threshold: Option<u16> },
    /// A class of its own (v4.14 .. v5.13): u16 per-CPU diffs folded past a large threshold
    /// (the kernel's is U16_MAX - 2), on their own shared lines.
    SeparateClass { threshold: u16 },
    /// Plain per-CPU counters with no threshold, folded only when read (v5.14 on).
    PerCpu,
    /// Not counted (`vm.numa_stat = 0`, v4.16 on).
    Disabled,
}

impl NumaStats {
    /// The separate class's threshold in Linux (NUMA_STATS_THRESHOLD).
    pub const SEPARATE_CLASS_THRESHOLD: u16 = u16::MAX - 2;
    /// Range of a fixed zone-stat threshold (an i16 diff with room for the overstep).
    pub const ZONE_STAT_THRESHOLDS: core::ops::RangeInclusive<u16> = 32..=32_765;
}

impl NumaStats {
    /// Parses the names [`core::fmt::Display`] prints: `zone-stat`, `threshold-N`,
    /// `separate-class`, `separate-class-N`, `per-cpu`, `disabled`. Values outside the ranges
    /// the builder accepts are `None`.
    pub fn parse(text: &str) -> Option<NumaStats> {
        let stats = match text {
            "zone-stat" => NumaStats::ZoneStat { threshold: None },
            "separate-class" => NumaStats::SeparateClass { threshold: Self::SEPARATE_CLASS_THRESHOLD },
            "per-cpu" => NumaStats::PerCpu,
            "disabled" => NumaStats::Disabled,
            _ => {
                if let Some(number) = text.strip_prefix("threshold-") {
                    let threshold = number.parse().ok().filter(|t| Self::ZONE_STAT_THRESHOLDS.contains(t))?;
                    NumaStats::ZoneStat { threshold: Some(threshold) }
                } else {
                    let number = text.strip_prefix("separate-class-")?;
                    let threshold =
                        number.parse().ok().filter(|&t| (1..=Self::SEPARATE_CLASS_THRESHOLD).contains(&t))?;
                    NumaStats::SeparateClass { threshold }
                }
            }
        };
        Some(stats)
    }
}

impl core::fmt::Display for NumaStats {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            NumaStats::ZoneStat { threshold: None } => write!(f, "zone-stat"),
            NumaStats::ZoneStat { threshold: Some(threshold) } => write!(f, "threshold-{threshold}"),
            NumaStats::SeparateClass { threshold } if threshold == Self::SEPARATE_CLASS_THRESHOLD => {
                write!(f, "separate-class")
            }
            NumaStats::SeparateClass { threshold } => write!(f, "separate-class-{threshold}"),
            NumaStats::PerCpu => write!(f, "per-cpu"),
            NumaStats::Disabled => write!(f, "disabled"),
        }
    }
}

/// How a zone's free-page count (NR_FREE_PAGES), which every watermark check reads, is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FreePagesCount {
    /// Exact, published once per zone-lock hold (this project's default, and the Linux
    /// presets' so far: the seeds' experiments never come near the watermarks).
    Published,
    /// As Linux keeps it: a vmstat counter whose per-CPU diffs fold past the zone's
    /// `stat_threshold`, so checks read a count that may lag by up to CPUs x threshold;
    /// `zone_watermark_ok_safe` reads the exact count below `percpu_drift_mark`.
    PerCpuDiffs,
}

/// vmstat behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VmstatPolicy {
    pub numa: NumaStats,
    pub free_pages: FreePagesCount,
}

impl VmstatPolicy {
    /// NUMA counters per CPU since v5.14; the free count published exactly (see
    /// [`FreePagesCount::Published`]).
    pub const MAINLINE: VmstatPolicy = VmstatPolicy { numa: NumaStats::PerCpu, free_pages: FreePagesCount::Published };
    /// v4.14 - v5.13: NUMA counters in their own class with the u16 threshold.
    pub const LINUX_4_14: VmstatPolicy = VmstatPolicy {
        numa: NumaStats::SeparateClass { threshold: NumaStats::SEPARATE_CLASS_THRESHOLD },
        ..VmstatPolicy::MAINLINE
    };
}
