//! A shared word's atomic read-modify-writes served one at a time in simulated time, whatever
//! order the engine runs them in. The engine runs a whole step of the CPU with the earliest
//! clock, so an RMW made late in one CPU's step may sit, in simulated time, after an RMW
//! another CPU makes later on the host but earlier in time; a server that only remembers
//! when it is next free would make that second RMW wait for the first one's future. The
//! calendar keeps the word's busy intervals and puts each RMW in the first gap at or after
//! its arrival that fits it.

/// Busy intervals of one word, `(start, end)` in ns, sorted and disjoint.
#[derive(Debug, Default)]
pub(super) struct RmwCalendar {
    busy: Vec<(u64, u64)>,
}

/// Intervals kept before the oldest are dropped: a CPU arriving before all of them is
/// further behind than the engine lets it fall in practice, and is served as if the word
/// had been free then.
const KEPT_INTERVALS: usize = 256;

impl RmwCalendar {
    /// Serves an RMW arriving at `arrival_ns` that holds the word `service_ns`; returns when
    /// it starts.
    pub(super) fn serve(&mut self, arrival_ns: u64, service_ns: u64) -> u64 {
        let mut start_ns = arrival_ns;
        // The first interval ending after the arrival, then gaps from there.
        let mut index = self.busy.partition_point(|&(_, end)| end <= arrival_ns);
        while let Some(&(busy_start, busy_end)) = self.busy.get(index) {
            if start_ns + service_ns <= busy_start {
                break;
            }
            start_ns = start_ns.max(busy_end);
            index += 1;
        }
        debug_assert!(index == 0 || self.busy[index - 1].1 <= start_ns);
        self.busy.insert(index, (start_ns, start_ns + service_ns));
        if self.busy.len() > KEPT_INTERVALS {
            self.busy.drain(..KEPT_INTERVALS / 2);
        }
        start_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rmw_earlier_in_time_fits_before_a_later_one_served_first() {
        let mut word = RmwCalendar::default();
        assert_eq!(word.serve(1_000, 50), 1_000);
        assert_eq!(word.serve(100, 50), 100, "served later on the host, earlier in time: no wait");
        assert_eq!(word.serve(980, 50), 1_050, "does not fit before the busy 1000..1050");
        assert_eq!(word.serve(1_020, 50), 1_100, "queues behind both");
        assert_eq!(word.serve(130, 20), 150, "fits the gap after 100..150");
    }

    #[test]
    fn the_calendar_keeps_a_bounded_history() {
        let mut word = RmwCalendar::default();
        for arrival in 0..10_000u64 {
            word.serve(arrival * 100, 10);
        }
        assert!(word.busy.len() <= KEPT_INTERVALS);
        assert!(word.busy.windows(2).all(|pair| pair[0].1 <= pair[1].0), "sorted and disjoint");
    }
}
