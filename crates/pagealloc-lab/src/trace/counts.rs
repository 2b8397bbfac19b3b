//! Counts of tracepoint firings, one per block, keyed as the replay reports them:
//! `alloc_oN`, `free_oN`, `zone_locked_refill_oN`, `zone_locked_direct_oN`, `pcpu_drain_oN`
//! and `extfrag`. A batched free is counted once, by its `mm_page_free`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use pagealloc::types::MAX_ORDER;
use pagealloc::{EventSink, ExtfragEvent, PageEvent};

use super::parse::{EventKind, TraceEvent};

const ORDERS: usize = MAX_ORDER as usize + 1;
/// Per-order series, in key order.
const SERIES: [&str; 4] = ["alloc", "free", "zone_locked_refill", "zone_locked_direct"];
const DRAIN: usize = SERIES.len();

/// Counters, shareable with the allocator as its event sink.
#[derive(Debug, Default)]
pub struct Counts {
    /// SERIES then pcpu_drain, by order.
    per_order: [[AtomicU64; ORDERS]; SERIES.len() + 1],
    extfrag: AtomicU64,
}

impl Counts {
    fn add(&self, series: usize, order: u8) {
        if let Some(counter) = self.per_order[series].get(order as usize) {
            counter.fetch_add(1, Relaxed);
        }
    }

    /// Counts one event of a kernel trace.
    pub fn count_kernel(&self, event: &TraceEvent) {
        match event.kind {
            EventKind::Alloc => self.add(0, event.order),
            EventKind::Free => self.add(1, event.order),
            EventKind::FreeBatched | EventKind::Sample => {}
            EventKind::ZoneLocked => self.add(if event.percpu_refill { 2 } else { 3 }, event.order),
            EventKind::PcpuDrain => self.add(DRAIN, event.order),
            EventKind::Extfrag => {
                self.extfrag.fetch_add(1, Relaxed);
            }
        }
    }

    /// Back to zero.
    pub fn reset(&self) {
        self.per_order.iter().flatten().chain([&self.extfrag]).for_each(|counter| counter.store(0, Relaxed));
    }

    /// The counts as a map; zero counts are left out.
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        let mut map = BTreeMap::new();
        for (series, name) in SERIES.iter().chain(["pcpu_drain"].iter()).enumerate() {
            for (order, counter) in self.per_order[series].iter().enumerate() {
                let count = counter.load(Relaxed);
                if count > 0 {
                    map.insert(format!("{name}_o{order}"), count);
                }
            }
        }
        let extfrag = self.extfrag.load(Relaxed);
        if extfrag > 0 {
            map.insert("extfrag".into(), extfrag);
        }
        map
    }
}

/// Our allocator's events, counted exactly as the tracepoints count.
impl EventSink for Counts {
    fn extfrag(&self, _event: &ExtfragEvent) {
        self.extfrag.fetch_add(1, Relaxed);
    }

    fn page(&self, event: &PageEvent) {
        match *event {
            PageEvent::Alloc { order, .. } => self.add(0, order),
            PageEvent::Free { order, .. } => self.add(1, order),
            PageEvent::FreeBatched { .. } => {}
            PageEvent::ZoneLocked { order, percpu_refill, .. } => self.add(if percpu_refill { 2 } else { 3 }, order),
            PageEvent::PcpuDrain { order, .. } => self.add(DRAIN, order),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::parse::parse_line;

    #[test]
    fn kernel_lines_count_once_per_block_and_batched_frees_once() {
        let counts = Counts::default();
        for line in [
            "a-1 [000] ..... 1.000001: mm_page_alloc: page=0 pfn=0x10 order=3 migratetype=0 gfp_flags=GFP_KERNEL",
            "a-1 [000] ..... 1.000002: mm_page_alloc_zone_locked: page=0 pfn=0x10 order=3 migratetype=0 percpu_refill=1",
            "a-1 [000] ..... 1.000003: mm_page_alloc_zone_locked: page=0 pfn=0x20 order=9 migratetype=1 percpu_refill=0",
            "a-1 [000] ..... 1.000004: mm_page_free: page=0 pfn=0x10 order=0",
            "a-1 [000] ..... 1.000005: mm_page_free_batched: page=0 pfn=0x10 order=0",
            "a-1 [000] ..... 1.000006: mm_page_pcpu_drain: page=0 pfn=0x10 order=0 migratetype=0",
        ] {
            counts.count_kernel(&parse_line(line).unwrap());
        }
        let map = counts.to_map();
        let expected: BTreeMap<String, u64> = [
            ("alloc_o3", 1),
            ("zone_locked_refill_o3", 1),
            ("zone_locked_direct_o9", 1),
            ("free_o0", 1),
            ("pcpu_drain_o0", 1),
        ]
        .into_iter()
        .map(|(key, count)| (key.to_string(), count))
        .collect();
        assert_eq!(map, expected);
    }
}
