//! Page data, cached a whole page at a time: a touch leaves the page in the toucher's L2
//! alone and in its LLC instance, and costs an L2 hit, a transfer from another core's L2,
//! an LLC hit or memory, whose bandwidth the socket's CPUs share.

use pagealloc::types::Pfn;

use super::state::SimState;
use crate::cache_key::CacheKey;
use crate::dense_table;

/// Page data is cached a whole page at a time.
const PAGE_BYTES: u32 = pagealloc::types::PAGE_SIZE_BYTES as u32;

/// How a touch uses a page's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageAccess {
    /// Zeroing, copying in: another core's copy of a line is invalidated.
    Write,
    /// Copying out what another CPU wrote.
    Read,
}

impl SimState {
    /// A touch leaves the page in this CPU's L2 alone (a write drops the other copies; a
    /// read of another CPU's page, the receiver's copy of a message, is modelled as moving
    /// it), and in its LLC instance. A page another core under the same LLC still holds comes
    /// core to core; one from memory shares the socket's bandwidth with the socket's other
    /// CPUs streaming from memory at the time.
    pub(super) fn touch_pages(&mut self, pfn: Pfn, pages: u64, access: PageAccess) {
        let cpu = self.current;
        let llc = self.llc_of(cpu);
        let mut cost_ns = 0;
        for page in pfn..pfn + pages {
            self.stats.page_touches += 1;
            let key = CacheKey::page(page);
            let owner_slot = dense_table::slot(&mut self.l2_owner, page as usize);
            let previous_owner = core::mem::replace(owner_slot, cpu as u16 + 1).checked_sub(1);
            let mut from_other_l2 = false;
            if let Some(owner) = previous_owner.map(usize::from).filter(|&owner| owner != cpu) {
                let owner_held = self.l2.invalidate(owner, key);
                let owner_llc = self.llc_of(owner);
                if owner_llc != llc {
                    // The other LLC's copy is stale after this touch.
                    self.llc.invalidate(owner_llc, key);
                }
                from_other_l2 = owner_held && owner_llc == llc;
            }
            let in_l2 = self.l2.touch(cpu, key, PAGE_BYTES);
            let in_llc = self.llc.touch(llc, key, PAGE_BYTES);
            cost_ns += if in_l2 {
                self.calibration.page_l2_hit_ns
            } else if from_other_l2 {
                self.stats.page_other_l2_hits += 1;
                match access {
                    PageAccess::Write => self.calibration.page_other_l2_write_ns,
                    PageAccess::Read => self.calibration.page_other_l2_read_ns,
                }
            } else if in_llc {
                self.stats.page_llc_hits += 1;
                self.calibration.page_llc_hit_ns
            } else {
                self.stats.page_misses += 1;
                let started_ns = self.clocks_ns[cpu] + cost_ns;
                self.memory_transfer(cpu, started_ns)
            };
        }
        self.clocks_ns[cpu] += cost_ns;
    }

    /// A page from memory for `cpu`, started at `started_ns`: its cost, with the socket's
    /// bandwidth shared by every other CPU of the socket whose last transfer from memory
    /// overlaps this one's window. The engine runs whole steps in order of their start, so
    /// a transfer sees the earlier of each overlapping pair and not the later, whose own
    /// transfer will see it: the window reaches one unshared page time either side, which
    /// counts each pair once at the rate two-sided overlaps occur.
    fn memory_transfer(&mut self, cpu: usize, started_ns: u64) -> u64 {
        let alone_ns = self.calibration.page_miss_ns;
        let curve = self.calibration.memory_sharing;
        if curve == crate::bandwidth::BandwidthCurve::UNSHARED {
            return alone_ns;
        }
        let socket = usize::from(self.places[cpu].socket);
        let window_start_ns = started_ns.saturating_sub(alone_ns);
        let window_end_ns = started_ns + alone_ns;
        let sharers = self.socket_cpus[socket]
            .iter()
            .filter(|&&other| {
                let (start_ns, end_ns) = self.memory_transfers[usize::from(other)];
                usize::from(other) != cpu && end_ns > window_start_ns && start_ns < window_end_ns
            })
            .count() as u32;
        let cost_ns = alone_ns * curve.per_mille(1 + sharers) / 1000;
        debug_assert!(cost_ns >= alone_ns, "sharing never makes a page cheaper");
        self.memory_transfers[cpu] = (started_ns, started_ns + cost_ns);
        self.stats.memory_shared_ns += cost_ns - alone_ns;
        cost_ns
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::Platform;

    use super::super::SimPlatform;
    use crate::bandwidth::BandwidthCurve;
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

    #[test]
    fn a_page_another_core_holds_comes_core_to_core_by_how_it_is_used() {
        let cal = Calibration { page_other_l2_write_ns: 400, page_other_l2_read_ns: 200, ..Calibration::XEON };
        let platform = SimPlatform::new(Topology::SERVER_128, cal.clone());
        let sim = platform.handle();
        let charge = |cpu: usize, read: bool| {
            sim.set_cpu(cpu);
            let before = sim.clock_ns(cpu);
            if read {
                platform.read_pages(1000, 1);
            } else {
                platform.touch_pages(1000, 1);
            }
            sim.clock_ns(cpu) - before
        };
        assert_eq!(charge(0, false), cal.page_miss_ns);
        assert_eq!(charge(1, true), cal.page_other_l2_read_ns, "CPU 1 reads what CPU 0 wrote");
        assert_eq!(charge(0, false), cal.page_other_l2_write_ns, "CPU 0 writes what CPU 1 holds");
        // Once the holder's L2 has let it go, the LLC serves it.
        sim.set_cpu(0);
        platform.touch_pages(1_000_000, Topology::SERVER_128.l2_share_bytes() / 4096);
        assert_eq!(charge(1, false), cal.page_llc_hit_ns);
        assert_eq!(sim.stats().page_other_l2_hits, 2);
    }

    /// Each of `streams` CPUs touches `pages` fresh pages from memory, in turns of one page
    /// each at the same simulated time; returns each one's cost per page.
    fn streaming_cost_per_page(calibration: &Calibration, streams: usize, pages: u64) -> Vec<u64> {
        let platform = SimPlatform::new(Topology::flat(8), calibration.clone());
        let sim = platform.handle();
        for page in 0..pages {
            for cpu in 0..streams {
                sim.set_cpu(cpu);
                platform.touch_pages(cpu as u64 * 1_000_000 + page, 1);
            }
        }
        (0..streams).map(|cpu| sim.clock_ns(cpu) / pages).collect()
    }

    #[test]
    fn cpus_streaming_from_memory_at_once_share_its_bandwidth() {
        let sharing = BandwidthCurve::from_per_cpu_ns(&[(1, 100.0), (2, 100.0), (4, 200.0)]).unwrap();
        let cal = Calibration { memory_sharing: sharing, ..Calibration::XEON };
        assert_eq!(streaming_cost_per_page(&cal, 1, 100), [cal.page_miss_ns]);
        assert_eq!(streaming_cost_per_page(&cal, 2, 100), [cal.page_miss_ns; 2], "two CPUs fit");
        let four = streaming_cost_per_page(&cal, 4, 100);
        assert!(four.iter().all(|&ns| ns >= cal.page_miss_ns * 19 / 10), "four share it: {four:?}");
        let unshared = streaming_cost_per_page(&Calibration::XEON, 4, 100);
        assert_eq!(unshared, [Calibration::XEON.page_miss_ns; 4]);
    }

    #[test]
    fn transfers_far_apart_in_time_do_not_share() {
        let sharing = BandwidthCurve::from_per_cpu_ns(&[(1, 100.0), (2, 200.0)]).unwrap();
        let cal = Calibration { memory_sharing: sharing, ..Calibration::XEON };
        let platform = SimPlatform::new(Topology::flat(2), cal.clone());
        let sim = platform.handle();
        sim.set_cpu(0);
        platform.touch_pages(1, 1);
        sim.set_cpu(1);
        sim.advance(10 * cal.page_miss_ns);
        platform.touch_pages(2, 1);
        assert_eq!(sim.clock_ns(1), 11 * cal.page_miss_ns, "CPU 0's transfer ended long before");
        sim.set_cpu(0);
        sim.advance(10 * cal.page_miss_ns - 1);
        platform.touch_pages(3, 1);
        assert_eq!(sim.clock_ns(0) - (11 * cal.page_miss_ns - 1), 2 * cal.page_miss_ns, "overlapping CPU 1's");
        assert_eq!(sim.stats().memory_shared_ns, cal.page_miss_ns);
    }
}
