//! The role schedule: when a pair's sender and receiver trade CPUs.

use crate::rng::SplitMix64;

/// When a pair's two tasks trade CPUs. Both CPUs of a pair hold a copy seeded alike, so they
/// agree on the schedule without sharing state: the swap points are a fixed sequence in
/// time with intervals uniform in [mean / 2, 3 * mean / 2).
pub(super) struct RoleSchedule {
    rng: SplitMix64,
    mean_ns: Option<u64>,
    next_swap_ns: u64,
    swapped: bool,
}

impl RoleSchedule {
    pub(super) fn new(mean_ns: Option<u64>, seed: u64) -> RoleSchedule {
        let mut schedule = RoleSchedule { rng: SplitMix64::new(seed), mean_ns, next_swap_ns: 0, swapped: false };
        schedule.next_swap_ns = schedule.interval_ns().max(1);
        schedule
    }

    fn interval_ns(&mut self) -> u64 {
        match self.mean_ns {
            Some(mean_ns) => mean_ns / 2 + self.rng.below(mean_ns.max(1)),
            None => u64::MAX,
        }
    }

    pub(super) fn is_pinned(&self) -> bool {
        self.mean_ns.is_none()
    }

    /// Whether the pair's first task (the sender at the start) runs on the other CPU at `now_ns`.
    pub(super) fn swapped_at(&mut self, now_ns: u64) -> bool {
        // Bounded: each round moves the next swap at least mean / 2 >= 1 ns later.
        while now_ns >= self.next_swap_ns {
            self.swapped = !self.swapped;
            self.next_swap_ns = self.next_swap_ns.saturating_add(self.interval_ns().max(1));
        }
        self.swapped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_cpus_of_a_pair_agree_on_the_role_schedule() {
        let (mut first, mut second) = (RoleSchedule::new(Some(1_000), 9), RoleSchedule::new(Some(1_000), 9));
        let mut swaps = 0;
        let mut previous = false;
        // The second CPU also asks in between; both see the same schedule.
        for now_ns in (0..100_000u64).step_by(7) {
            second.swapped_at(now_ns.saturating_sub(4));
            let swapped = first.swapped_at(now_ns);
            assert_eq!(swapped, second.swapped_at(now_ns), "at {now_ns} ns");
            if swapped != previous {
                swaps += 1;
                previous = swapped;
            }
        }
        // Intervals are uniform in [500, 1500) ns: between 66 and 200 swaps in 100 us.
        assert!((66..=200).contains(&swaps), "{swaps} swaps");
    }

    #[test]
    fn a_schedule_without_an_interval_never_swaps() {
        let mut pinned = RoleSchedule::new(None, 1);
        assert!(!pinned.swapped_at(0));
        assert!(!pinned.swapped_at(u64::MAX - 1));
    }
}
