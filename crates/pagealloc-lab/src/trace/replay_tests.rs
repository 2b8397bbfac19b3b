use super::*;
use crate::trace::writer::{FtraceWriter, Tee};
use pagealloc::AllocRequest;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

#[derive(Clone, Default)]
struct SharedText(Arc<Mutex<Vec<u8>>>);
impl Write for SharedText {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Random allocations and frees of orders 0-3 on 2 CPUs within one timer interval: the
/// replay of our own trace gives our counts back exactly.
#[test]
fn replaying_our_own_trace_reproduces_our_counts() {
    let (cpu, clock_ns) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicU64::new(0)));
    let text = SharedText::default();
    let recorded = Arc::new(Counts::default());
    let (cpu_seen, clock_seen) = (cpu.clone(), clock_ns.clone());
    let writer =
        FtraceWriter::new(Box::new(text.clone()), Box::new(move || (cpu_seen.load(Relaxed), clock_seen.load(Relaxed))));
    let builder = pagealloc::AllocatorBuilder::pc_layout(512).event_sink(Box::new(Tee(writer, recorded.clone())));
    let allocator = PageAllocator::build(builder, pagealloc::platform::TestPlatform::new(2)).unwrap();
    let mut zoneinfo = String::new();
    let zones = pagealloc::views::ZoneinfoZone::from_allocator(&allocator);
    pagealloc::views::write_zoneinfo_zones(&mut zoneinfo, &zones, pagealloc::sizing::LinuxVersion::MAINLINE).unwrap();
    let mut rng = crate::rng::SplitMix64::new(7);
    let mut live: Vec<Block> = Vec::new();
    // Bursts: CPU 0 allocates 1000 blocks, CPU 1 frees most of them (its pagesets
    // overflow and drain), with random steps the other way.
    for step in 0..20_000u64 {
        let allocating = (step / 1000) % 2 == 0;
        let on_cpu = if rng.below(10) == 0 { usize::from(allocating) } else { usize::from(!allocating) };
        allocator.platform().set_cpu(on_cpu);
        cpu.store(on_cpu, Relaxed);
        allocator.platform().advance_ns(10_000);
        clock_ns.store((step + 1) * 10_000, Relaxed);
        if live.is_empty() || (allocating && rng.below(100) < 90) || (!allocating && rng.below(100) < 10) {
            let request = if rng.below(2) == 0 { AllocRequest::USER_MOVABLE } else { AllocRequest::KERNEL };
            live.push(allocator.alloc_pages(rng.below(4) as u8, request).unwrap());
        } else {
            let victim = rng.below(live.len() as u64) as usize;
            allocator.free_pages(live.swap_remove(victim)).unwrap();
        }
    }
    let dir = std::env::temp_dir().join(format!("pagelab-replay-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (trace, zoneinfo_path) = (dir.join("own.trace"), dir.join("own.zoneinfo"));
    std::fs::write(&trace, text.0.lock().unwrap().as_slice()).unwrap();
    std::fs::write(&zoneinfo_path, zoneinfo).unwrap();
    let trace = Trace::load(&trace).unwrap();
    let machine = Machine::for_trace(&trace, Some(&zoneinfo_path)).unwrap();
    let options = ReplayOptions {
        stock: PagesetStock::Empty,
        timeline_ms: None,
        trace_out: None,
        after: None,
        timers: TimerMode::Trace,
        samples: Vec::new(),
    };
    let replay = replay(&trace, &machine, "mainline", options).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(replay.skipped, Skipped::default());
    assert_eq!(replay.kernel, recorded.to_map(), "the trace holds what the sink saw");
    assert_eq!(replay.ours, recorded.to_map(), "the replay does what the run did");
    assert!(replay.ours.keys().any(|key| key.starts_with("pcpu_drain")), "{:?}", replay.ours);
}
