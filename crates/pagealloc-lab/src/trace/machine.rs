//! The machine a trace replays on: the traced one, from its /proc/zoneinfo, or else a PC
//! layout spanning the trace's highest pfn with its CPUs; and its last-level cache.

use std::path::Path;

use pagealloc::{AllocatorBuilder, LastLevelCache};

use super::parse::Trace;

/// The machine to replay on: the traced one's zones, or a PC layout of some MiB.
pub struct Machine {
    pub cpus: usize,
    /// The last-level cache (pagesets free in batches when one CPU's share of it holds them).
    pub llc: Option<LastLevelCache>,
    pub zoneinfo: Option<Vec<pagealloc::views::ZoneinfoZone>>,
    pub pc_mib: u64,
}

impl Machine {
    /// From a /proc/zoneinfo file, or else a PC layout spanning the trace's highest pfn
    /// with its CPUs.
    pub fn for_trace(trace: &Trace, zoneinfo: Option<&Path>) -> Result<Machine, String> {
        if let Some(path) = zoneinfo {
            let text = std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
            let zones = super::zoneinfo::parse_zoneinfo(&text)?;
            return Ok(Machine {
                cpus: super::zoneinfo::cpu_count(&zones),
                llc: None,
                zoneinfo: Some(zones),
                pc_mib: 0,
            });
        }
        let (mut max_cpu, mut max_pfn) = (0u32, 0u64);
        for event in &trace.events {
            max_cpu = max_cpu.max(event.cpu);
            max_pfn = max_pfn.max(event.pfn + (1 << event.order));
        }
        Ok(Machine { cpus: max_cpu as usize + 1, llc: None, zoneinfo: None, pc_mib: (max_pfn >> 8).max(64) + 1 })
    }

    pub fn builder(&self) -> Result<AllocatorBuilder, String> {
        let builder = match &self.zoneinfo {
            Some(zones) => super::zoneinfo::machine(zones)?,
            None => AllocatorBuilder::pc_layout(self.pc_mib),
        };
        Ok(match self.llc {
            Some(llc) => builder.last_level_cache(llc),
            None => builder,
        })
    }
}
