//! Our allocator's tracepoints written as ftrace text, the format `pagelab replay` and the
//! kernel's scripts (trace-pagealloc-postprocess.pl) read: one line per event, the task
//! named after the CPU, the timestamp from the CPU's clock. `.gz` names are compressed.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use pagealloc::{EventSink, ExtfragEvent, PageEvent, PAGEBLOCK_ORDER};

use super::gfp::Gfp;

/// Which CPU is running, and its clock in ns.
pub type Clock = Box<dyn Fn() -> (usize, u64) + Send + Sync>;

/// Flushed, and a compressed stream finished, when dropped with its allocator.
pub struct FtraceWriter {
    out: Mutex<Box<dyn Write + Send>>,
    clock: Clock,
}

impl FtraceWriter {
    pub fn create(path: &Path, clock: Clock) -> Result<FtraceWriter, String> {
        let file = File::create(path).map_err(|error| format!("{}: {error}", path.display()))?;
        let buffered = BufWriter::with_capacity(1 << 20, file);
        let out: Box<dyn Write + Send> = if path.to_string_lossy().ends_with(".gz") {
            Box::new(flate2::write::GzEncoder::new(buffered, flate2::Compression::fast()))
        } else {
            Box::new(buffered)
        };
        Ok(FtraceWriter::new(out, clock))
    }

    pub fn new(out: Box<dyn Write + Send>, clock: Clock) -> FtraceWriter {
        FtraceWriter { out: Mutex::new(out), clock }
    }

    fn line(&self, event: &str, fields: std::fmt::Arguments<'_>) {
        let (cpu, now_ns) = (self.clock)();
        // Nanoseconds (the kernel prints microseconds): a replay then runs timer work at the
        // very point of the run. Readers of ftrace text take any number of decimals.
        let (seconds, nanos) = (now_ns / 1_000_000_000, now_ns % 1_000_000_000);
        let mut out = self.out.lock().expect("trace writer");
        // A failed write leaves the trace short; the flush at the end reports it.
        let _ = writeln!(out, "     pagelab-{cpu}     [{cpu:03}] ..... {seconds}.{nanos:09}: {event}: {fields}");
    }
}

impl EventSink for FtraceWriter {
    fn extfrag(&self, event: &ExtfragEvent) {
        let fragmenting = u8::from(event.fallback_order < PAGEBLOCK_ORDER);
        let change = u8::from(event.kind == pagealloc::FallbackKind::Claim);
        self.line(
            "mm_page_alloc_extfrag",
            format_args!(
                "page=0 pfn={:#x} alloc_order={} fallback_order={} pageblock_order={PAGEBLOCK_ORDER} alloc_migratetype={} fallback_migratetype={} fragmenting={fragmenting} change_ownership={change}",
                event.pfn,
                event.order,
                event.fallback_order,
                event.start_migratetype.index(),
                event.fallback_migratetype.index()
            ),
        );
    }

    fn page(&self, event: &PageEvent) {
        match *event {
            PageEvent::Alloc { pfn, order, migratetype, request } => self.line(
                "mm_page_alloc",
                format_args!(
                    "page=0 pfn={pfn:#x} order={order} migratetype={} gfp_flags={}",
                    migratetype.index(),
                    Gfp::of_request(&request).render()
                ),
            ),
            PageEvent::Free { pfn, order } => {
                self.line("mm_page_free", format_args!("page=0 pfn={pfn:#x} order={order}"))
            }
            PageEvent::FreeBatched { pfn, order } => {
                self.line("mm_page_free_batched", format_args!("page=0 pfn={pfn:#x} order={order}"))
            }
            PageEvent::ZoneLocked { pfn, order, migratetype, percpu_refill } => self.line(
                "mm_page_alloc_zone_locked",
                format_args!(
                    "page=0 pfn={pfn:#x} order={order} migratetype={} percpu_refill={}",
                    migratetype.index(),
                    u8::from(percpu_refill)
                ),
            ),
            PageEvent::PcpuDrain { pfn, order, migratetype } => self.line(
                "mm_page_pcpu_drain",
                format_args!("page=0 pfn={pfn:#x} order={order} migratetype={}", migratetype.index()),
            ),
        }
    }
}

/// Two subscribers seeing every event.
pub struct Tee<A, B>(pub A, pub B);

impl<A: EventSink, B: EventSink> EventSink for Tee<A, B> {
    fn extfrag(&self, event: &ExtfragEvent) {
        self.0.extfrag(event);
        self.1.extfrag(event);
    }
    fn page(&self, event: &PageEvent) {
        self.0.page(event);
        self.1.page(event);
    }
}
