//! Explicit pageset drains: this CPU's, every CPU's, and an offlined CPU's (mirrors
//! drain_local_pages(), drain_all_pages() and page_alloc_cpu_dead()).

use super::PageAllocator;
use crate::pcp::{self, DrainCause};
use crate::platform::Platform;

impl<P: Platform> PageAllocator<P> {
    /// Empties `cpu`'s pagesets in every zone; returns pages drained.
    fn drain_cpu_pagesets(&self, cpu: usize, cause: DrainCause) -> u64 {
        self.zones
            .iter()
            .filter_map(|zone| zone.pcp.get(cpu).map(|slot| (zone, slot)))
            .map(|(zone, slot)| pcp::drain_pcp(zone.buddy(&self.platform), slot, &self.policy.pcp, cause) as u64)
            .sum()
    }

    /// Drains the calling CPU's pagesets (mirrors drain_local_pages()).
    pub fn drain_local(&self) -> u64 {
        self.drain_cpu_pagesets(self.platform.current_cpu(), DrainCause::Explicit)
    }

    /// Drains every CPU's pagesets that hold pages (mirrors drain_all_pages()).
    pub fn drain_all(&self) -> u64 {
        (0..self.platform.nr_cpus()).map(|cpu| self.drain_cpu_pagesets(cpu, DrainCause::Explicit)).sum()
    }

    /// A CPU went offline: return its cached pages (mirrors page_alloc_cpu_dead()).
    pub fn cpu_offline(&self, cpu: usize) -> u64 {
        self.drain_cpu_pagesets(cpu, DrainCause::CpuOffline)
    }
}
