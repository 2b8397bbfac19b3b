//! ftrace text of the six kmem page-allocator events, one line at a time, plain, `.gz` or
//! `.xz`. A line is `TASK-PID [CPU] FLAGS SECONDS.MICROS: EVENT: key=value ...`; the task
//! name may hold spaces and dashes, so the parser anchors on the event name and reads
//! backwards for the timestamp and CPU. Lines of other events, headers and comments are
//! skipped. Cost: one pass over the bytes, no allocation and no UTF-8 check per line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::gfp::Gfp;

/// Which tracepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Alloc,
    Free,
    FreeBatched,
    ZoneLocked,
    PcpuDrain,
    Extfrag,
    /// `pagelab trace capture --sample-ms`'s trace_marker write before it read
    /// /proc/zoneinfo; the sample number is in `pfn`.
    Sample,
}

/// One event: the fields the replay and the counts read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub kind: EventKind,
    pub cpu: u32,
    pub ts_ns: u64,
    pub pfn: u64,
    /// order (alloc_order for extfrag).
    pub order: u8,
    /// -1 when the event has none.
    pub migratetype: i8,
    pub percpu_refill: bool,
    pub gfp: Gfp,
    /// Extfrag: the fallback block's order, and whether the pageblock changed type.
    pub fallback_order: u8,
    pub change_ownership: bool,
    /// The task is a kernel worker (`kworker/...`): timer and drain work.
    pub kworker: bool,
}

/// The six event names after their common `mm_page_` prefix, with the ": " that ends them.
const EVENTS: [(&[u8], EventKind); 6] = [
    (b"alloc_zone_locked: ", EventKind::ZoneLocked),
    (b"alloc_extfrag: ", EventKind::Extfrag),
    (b"alloc: ", EventKind::Alloc),
    (b"free_batched: ", EventKind::FreeBatched),
    (b"free: ", EventKind::Free),
    (b"pcpu_drain: ", EventKind::PcpuDrain),
];

const MARKER: &[u8] = b": mm_page_";

/// Parses one line; `None` for anything that is not one of the six events.
#[cfg(test)]
pub fn parse_line(line: &str) -> Option<TraceEvent> {
    parse_bytes(line.as_bytes())
}

/// Parses one line of bytes (no UTF-8 check: every field read is ASCII).
pub fn parse_bytes(line: &[u8]) -> Option<TraceEvent> {
    let Some(marker) = find_marker(line) else { return parse_sample(line) };
    let after = &line[marker + MARKER.len()..];
    let (kind, name_len) =
        EVENTS.iter().find(|(name, _)| after.starts_with(name)).map(|(name, kind)| (*kind, name.len()))?;
    let fields = &after[name_len..];
    let mut event = event_at(kind, &line[..marker])?;
    for field in fields.split(|&byte| byte == b' ') {
        let Some(equals) = field.iter().position(|&byte| byte == b'=') else { continue };
        let (key, value) = (&field[..equals], &field[equals + 1..]);
        match key {
            b"pfn" => event.pfn = parse_hex_or_dec(value)?,
            b"order" | b"alloc_order" => event.order = parse_decimal(value)? as u8,
            b"migratetype" | b"alloc_migratetype" => event.migratetype = parse_signed(value)?,
            b"percpu_refill" => event.percpu_refill = value == b"1",
            b"gfp_flags" => event.gfp = Gfp::parse(std::str::from_utf8(value).ok()?),
            b"fallback_order" => event.fallback_order = parse_decimal(value)? as u8,
            b"change_ownership" => event.change_ownership = value == b"1",
            _ => {}
        }
    }
    Some(event)
}

/// A `tracing_mark_write: pagelab-sample K` line (not one of the six events, so only
/// lines without them pay for this look).
fn parse_sample(line: &[u8]) -> Option<TraceEvent> {
    const SAMPLE_MARKER: &[u8] = b": tracing_mark_write: pagelab-sample ";
    let at = line.windows(SAMPLE_MARKER.len()).position(|window| window == SAMPLE_MARKER)?;
    let mut event = event_at(EventKind::Sample, &line[..at])?;
    event.pfn = parse_decimal(line[at + SAMPLE_MARKER.len()..].trim_ascii())?;
    Some(event)
}

/// An event of `kind` with the CPU, time and task of `head` (the line before the event
/// name), its fields not yet read.
fn event_at(kind: EventKind, head: &[u8]) -> Option<TraceEvent> {
    let ts_start = head.iter().rposition(|&byte| byte == b' ').map_or(0, |at| at + 1);
    Some(TraceEvent {
        kind,
        cpu: parse_cpu(&head[..ts_start])?,
        ts_ns: parse_seconds_ns(&head[ts_start..])?,
        pfn: 0,
        order: 0,
        migratetype: -1,
        percpu_refill: false,
        gfp: Gfp::default(),
        fallback_order: 0,
        change_ownership: false,
        kworker: head.trim_ascii_start().starts_with(b"kworker/"),
    })
}

/// Where ": mm_page_" starts: colons are few in a line (timestamp, event, some task names).
fn find_marker(line: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(offset) = line[from..].iter().position(|&byte| byte == b':') {
        let at = from + offset;
        if line[at..].starts_with(MARKER) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn parse_decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 19 {
        return None;
    }
    text.iter().try_fold(0u64, |value, &byte| byte.is_ascii_digit().then(|| value * 10 + u64::from(byte - b'0')))
}

fn parse_signed(text: &[u8]) -> Option<i8> {
    match text.strip_prefix(b"-") {
        Some(digits) => i8::try_from(-(parse_decimal(digits)? as i64)).ok(),
        None => i8::try_from(parse_decimal(text)?).ok(),
    }
}

/// "16297.098371" -> ns.
fn parse_seconds_ns(text: &[u8]) -> Option<u64> {
    let dot = text.iter().position(|&byte| byte == b'.');
    let (seconds, fraction) = match dot {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &b""[..]),
    };
    let seconds = parse_decimal(seconds)?;
    let digits = fraction.len().min(9);
    let fraction_ns = if digits == 0 { 0 } else { parse_decimal(&fraction[..digits])? };
    Some(seconds * 1_000_000_000 + fraction_ns * 10u64.pow(9 - digits as u32))
}

/// The last `[digits]` before the timestamp.
fn parse_cpu(head: &[u8]) -> Option<u32> {
    let close = head.iter().rposition(|&byte| byte == b']')?;
    let open = head[..close].iter().rposition(|&byte| byte == b'[')?;
    let digits = head[open + 1..close].trim_ascii();
    u32::try_from(parse_decimal(digits)?).ok()
}

fn parse_hex_or_dec(text: &[u8]) -> Option<u64> {
    match text.strip_prefix(b"0x") {
        Some(hex) if !hex.is_empty() && hex.len() <= 16 => hex.iter().try_fold(0u64, |value, &byte| {
            let digit = (byte as char).to_digit(16)?;
            Some(value << 4 | u64::from(digit))
        }),
        Some(_) => None,
        None => parse_decimal(text),
    }
}

/// A trace file's lines: plain text, or compressed by name (`.gz`, `.xz`).
pub fn open_trace(path: &Path) -> Result<Box<dyn BufRead>, String> {
    let file = File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let name = path.to_string_lossy();
    let reader: Box<dyn Read> = if name.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 20, file)))
    } else if name.ends_with(".xz") {
        let mut compressed = BufReader::new(file);
        let mut text = Vec::new();
        lzma_rs::xz_decompress(&mut compressed, &mut text).map_err(|error| format!("{}: {error}", path.display()))?;
        Box::new(std::io::Cursor::new(text))
    } else {
        Box::new(file)
    };
    Ok(Box::new(BufReader::with_capacity(1 << 20, reader)))
}

/// A trace's events in memory: read, decompressed and parsed once, however many passes
/// and presets use them (about 40 bytes an event).
pub struct Trace {
    pub name: String,
    pub events: Vec<TraceEvent>,
    /// Lines read, events or not.
    pub lines: u64,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, String> {
        let mut events = Vec::new();
        let lines = for_each_event(open_trace(path)?, |event| events.push(*event))?;
        Ok(Trace { name: path.display().to_string(), events, lines })
    }
}

/// Calls `each` with every event of the trace, in file order; returns the lines read.
pub fn for_each_event(mut reader: impl BufRead, mut each: impl FnMut(&TraceEvent)) -> Result<u64, String> {
    let mut line = Vec::with_capacity(256);
    let mut lines = 0;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(|error| format!("reading the trace: {error}"))?;
        if read == 0 {
            return Ok(lines);
        }
        lines += 1;
        if let Some(event) = parse_bytes(line.trim_ascii_end()) {
            each(&event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_event_of_a_real_trace() {
        let alloc = parse_line("            bash-3804    [000] ..... 16297.098371: mm_page_alloc: page=000000008dd11164 pfn=0x102db7 order=0 migratetype=0 gfp_flags=GFP_KERNEL_ACCOUNT|__GFP_ZERO|__GFP_COMP").unwrap();
        assert_eq!(
            (alloc.kind, alloc.cpu, alloc.ts_ns, alloc.pfn),
            (EventKind::Alloc, 0, 16_297_098_371_000, 0x102db7)
        );
        assert!(alloc.gfp.contains(Gfp::DIRECT_RECLAIM));
        let sample =
            parse_line("       pagelab-19829   [001] ..... 36801.700100: tracing_mark_write: pagelab-sample 12")
                .unwrap();
        assert_eq!((sample.kind, sample.pfn, sample.cpu, sample.ts_ns), (EventKind::Sample, 12, 1, 36_801_700_100_000));
        let locked = parse_line("              dd-3808    [001] d..1. 16297.101962: mm_page_alloc_zone_locked: page=000000006e39c6a1 pfn=0x20f800 order=8 migratetype=1 percpu_refill=0").unwrap();
        assert_eq!((locked.kind, locked.cpu, locked.order, locked.migratetype), (EventKind::ZoneLocked, 1, 8, 1));
        assert!(!locked.percpu_refill);
        let drain = parse_line("     kworker/1:1-7783    [001] d..2. 16297.112007: mm_page_pcpu_drain: page=000000001b2febc6 pfn=0x107b89 order=0 migratetype=0").unwrap();
        assert_eq!(drain.kind, EventKind::PcpuDrain);
        let batched = parse_line("            bash-3807    [001] ...4. 16297.100339: mm_page_free_batched: page=000000006d66298d pfn=0x22b87a order=0").unwrap();
        assert_eq!(batched.kind, EventKind::FreeBatched);
        let free = parse_line("          <idle>-0       [000] ..s1. 16297.099968: mm_page_free: page=000000005d47f37a pfn=0x1049e8 order=0").unwrap();
        assert_eq!((free.kind, free.pfn), (EventKind::Free, 0x1049e8));
        let extfrag = parse_line("              ls-3810    [001] d..3. 16297.437840: mm_page_alloc_extfrag: page=00000000a41be167 pfn=0x192400 alloc_order=0 fallback_order=10 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1").unwrap();
        assert_eq!((extfrag.kind, extfrag.order, extfrag.fallback_order), (EventKind::Extfrag, 0, 10));
        assert!(extfrag.change_ownership);
    }

    #[test]
    fn task_names_with_spaces_and_brackets_do_not_confuse_it() {
        let event =
            parse_line(" Web Content [x]-77 [001] ..... 5.000001: mm_page_free: page=0 pfn=0x10 order=2").unwrap();
        assert_eq!((event.cpu, event.ts_ns, event.order), (1, 5_000_001_000, 2));
    }

    #[test]
    fn other_lines_are_skipped() {
        for line in ["# tracer: nop", "", "bash-1 [000] ..... 1.0: kmalloc: call_site=x", "garbage: mm_page_free"] {
            assert_eq!(parse_line(line), None, "{line}");
        }
    }
}
