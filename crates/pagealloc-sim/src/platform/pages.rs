//! Page data, cached a whole page at a time: a touch leaves the page in the toucher's L2
//! alone and in its LLC instance, and costs an L2 hit, an LLC hit or memory.

use pagealloc::types::Pfn;

use super::state::SimState;
use crate::cache_key::CacheKey;
use crate::dense_table;

/// Page data is cached a whole page at a time.
const PAGE_BYTES: u32 = pagealloc::types::PAGE_SIZE_BYTES as u32;

impl SimState {
    /// A touch is a write (zeroing, copying in) or a read after another CPU's write: either
    /// way the page ends up in this CPU's L2 alone, and in its LLC instance.
    pub(super) fn touch_pages(&mut self, pfn: Pfn, pages: u64) {
        let cpu = self.current;
        let llc = self.llc_of(cpu);
        let mut cost_ns = 0;
        for page in pfn..pfn + pages {
            self.stats.page_touches += 1;
            let key = CacheKey::page(page);
            let owner_slot = dense_table::slot(&mut self.l2_owner, page as usize);
            let previous_owner = core::mem::replace(owner_slot, cpu as u16 + 1).checked_sub(1);
            if let Some(owner) = previous_owner.map(u32::from).filter(|&owner| owner as usize != cpu) {
                self.l2.invalidate(owner as usize, key);
                let owner_llc = self.llc_of(owner as usize);
                if owner_llc != llc {
                    // The other LLC's copy is stale after this touch.
                    self.llc.invalidate(owner_llc, key);
                }
            }
            let in_l2 = self.l2.touch(cpu, key, PAGE_BYTES);
            let in_llc = self.llc.touch(llc, key, PAGE_BYTES);
            cost_ns += if in_l2 {
                self.calibration.page_l2_hit_ns
            } else if in_llc {
                self.stats.page_llc_hits += 1;
                self.calibration.page_llc_hit_ns
            } else {
                self.stats.page_misses += 1;
                self.calibration.page_miss_ns
            };
        }
        self.clocks_ns[cpu] += cost_ns;
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::Platform;

    use super::super::SimPlatform;
    use crate::calibration::Calibration;
    use crate::topology::Topology;

    #[test]
    fn page_data_moves_between_l2_llc_and_memory() {
        let topology = Topology::SERVER_128;
        let platform = SimPlatform::new(topology.clone(), Calibration::XEON);
        let sim = platform.handle();
        let cal = Calibration::XEON;
        let charge = |cpu: usize, pfn: u64| {
            sim.set_cpu(cpu);
            let before = sim.clock_ns(cpu);
            platform.touch_pages(pfn, 1);
            sim.clock_ns(cpu) - before
        };
        assert_eq!(charge(0, 1000), cal.page_miss_ns, "first touch comes from memory");
        assert_eq!(charge(0, 1000), cal.page_l2_hit_ns, "then it is in CPU 0's L2");
        assert_eq!(charge(1, 1000), cal.page_llc_hit_ns, "CPU 1 on the socket finds it in the LLC");
        assert_eq!(charge(0, 1000), cal.page_llc_hit_ns, "CPU 1's write took it out of CPU 0's L2");
        assert_eq!(charge(32, 1000), cal.page_miss_ns, "the other socket's LLC does not have it");
        assert_eq!(charge(0, 1000), cal.page_miss_ns, "and its write made socket 0's LLC copy stale");
        // A full L2's worth of other pages evicts it from CPU 0's L2, not from the LLC.
        let l2_pages = topology.l2_share_bytes() / 4096;
        sim.set_cpu(0);
        platform.touch_pages(1_000_000, l2_pages);
        assert_eq!(charge(0, 1000), cal.page_llc_hit_ns);
        let stats = sim.stats();
        assert_eq!(stats.page_touches, 7 + l2_pages);
        assert_eq!(stats.page_misses, 3 + l2_pages);
    }
}
