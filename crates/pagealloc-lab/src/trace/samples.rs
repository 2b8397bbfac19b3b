//! The kernel's pagesets while the traced command runs: `pagelab trace capture
//! --sample-ms N` reads /proc/zoneinfo every N ms and marks each read in the trace itself
//! (a `trace_marker` write, `tracing_mark_write: pagelab-sample K`), so the replay can set
//! each CPU's pageset count and high beside ours at the very point of the event stream where
//! the kernel's were read. The trace shows refills and drains, not high: these samples show
//! where the auto-tuned high of the model and of the kernel part.
//!
//! File format (`zoneinfo.samples`): for each sample, a line `pagelab-sample K` and then the
//! /proc/zoneinfo text as read.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pagealloc::views::ZoneinfoZone;

use super::zoneinfo::{pageset_ends, PagesetEnd};

pub const SAMPLES_FILE: &str = "zoneinfo.samples";
/// The text a sample's trace_marker write starts with.
pub const SAMPLE_TAG: &str = "pagelab-sample ";

/// Samples until `stop`: marker first, then the read, so that the sample reflects every
/// event before the marker (and a few after it). Returns the samples taken.
pub fn run_sampler(instance: &Path, out: &Path, period: Duration, stop: &AtomicBool) -> Result<u64, String> {
    let marker_path = instance.join("trace_marker");
    let mut marker = OpenOptions::new()
        .write(true)
        .open(&marker_path)
        .map_err(|e| format!("cannot open {}: {e}", marker_path.display()))?;
    let samples_path = out.join(SAMPLES_FILE);
    let mut samples =
        File::create(&samples_path).map_err(|e| format!("cannot create {}: {e}", samples_path.display()))?;
    let mut taken = 0;
    while !stop.load(Ordering::SeqCst) {
        let tag = format!("{SAMPLE_TAG}{taken}\n");
        marker.write_all(tag.as_bytes()).map_err(|e| format!("cannot write the trace marker: {e}"))?;
        let zoneinfo = std::fs::read("/proc/zoneinfo").map_err(|e| format!("cannot read /proc/zoneinfo: {e}"))?;
        samples
            .write_all(tag.as_bytes())
            .and_then(|()| samples.write_all(&zoneinfo))
            .map_err(|e| format!("cannot write {}: {e}", samples_path.display()))?;
        taken += 1;
        // In short steps, so that the capture does not wait a whole period once the
        // command has exited.
        let mut slept = Duration::ZERO;
        while slept < period && !stop.load(Ordering::SeqCst) {
            let step = (period - slept).min(Duration::from_millis(5));
            std::thread::sleep(step);
            slept += step;
        }
    }
    Ok(taken)
}

/// The samples a sampler took (0 if none ran). Samples are a cross-check: a sampler that
/// failed warns, and the trace stands.
pub fn taken_or_warn(sampler: Option<Result<u64, String>>) -> u64 {
    match sampler {
        Some(Ok(taken)) => taken,
        Some(Err(error)) => {
            eprintln!("warning: zoneinfo sampling stopped: {error}");
            0
        }
        None => 0,
    }
}

/// The samples of a `zoneinfo.samples` file, by sample number.
pub fn parse_samples(text: &str) -> Result<Vec<Vec<ZoneinfoZone>>, String> {
    let mut samples = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(SAMPLE_TAG) {
        let body = &rest[start + SAMPLE_TAG.len()..];
        let (number, body) = body.split_once('\n').ok_or("a sample tag without a line end")?;
        let number: usize = number.trim().parse().map_err(|_| format!("bad sample number {number:?}"))?;
        if number != samples.len() {
            return Err(format!("sample {number} out of order (expected {})", samples.len()));
        }
        let end = body.find(SAMPLE_TAG).unwrap_or(body.len());
        samples.push(super::zoneinfo::parse_zoneinfo(&body[..end])?);
        rest = &body[end..];
    }
    Ok(samples)
}

/// One CPU's pageset in one zone, the kernel's at a sample and ours at the same event.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PagesetPair {
    pub sample: usize,
    pub ts_ns: u64,
    #[serde(flatten)]
    pub pageset: PagesetEnd,
}

/// The pairs of one sample: every pageset of a zone with managed pages in both.
pub fn pair_up(sample: usize, ts_ns: u64, kernel: &[ZoneinfoZone], ours: &[ZoneinfoZone]) -> Vec<PagesetPair> {
    pageset_ends(kernel, ours).into_iter().map(|pageset| PagesetPair { sample, ts_ns, pageset }).collect()
}

/// The pairs of a replay: at each sample event, the kernel's pagesets from its read and ours
/// as they stand.
#[derive(Debug, Default)]
pub struct SampleLog {
    samples: Vec<Vec<ZoneinfoZone>>,
    pub pairs: Vec<PagesetPair>,
}

impl SampleLog {
    pub fn new(samples: Vec<Vec<ZoneinfoZone>>) -> SampleLog {
        SampleLog { samples, pairs: Vec::new() }
    }

    /// Pairs sample `event.pfn` with `ours()`, if the event is a sample the file holds.
    pub fn observe(&mut self, event: &super::parse::TraceEvent, ours: impl FnOnce() -> Vec<ZoneinfoZone>) {
        if event.kind != super::parse::EventKind::Sample {
            return;
        }
        let Some(kernel) = usize::try_from(event.pfn).ok().and_then(|index| self.samples.get(index)) else { return };
        let pairs = pair_up(event.pfn as usize, event.ts_ns, kernel, &ours());
        self.pairs.extend(pairs);
    }
}

/// Median of |ours - kernel| over the pairs, for count and for high.
pub fn median_differences(pairs: &[&PagesetPair]) -> Option<(u64, u64)> {
    if pairs.is_empty() {
        return None;
    }
    let off = |of: fn(&PagesetEnd) -> (u64, u64)| {
        crate::stats::median_count(
            pairs.iter().map(|pair| of(&pair.pageset)).map(|(kernel, ours)| kernel.abs_diff(ours)).collect(),
        )
    };
    Some((off(|end| (end.kernel_count, end.ours_count)), off(|end| (end.kernel_high, end.ours_high))))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZONEINFO: &str = "Node 0, zone   Normal
  pages free     1000
        boost    0
        min      10
        low      12
        high     14
        promo    16
        spanned  4096
        present  4096
        managed  4096
        cma      0
        protection: (0, 0, 0, 0, 0)
  pagesets
    cpu: 0
              count:    COUNT
              high:     500
              batch:    63
  vm stats threshold: 16
  node_unreclaimable:  0
  start_pfn:           0
";

    #[test]
    fn samples_parse_in_order_and_pair_with_ours() {
        let text = format!(
            "{SAMPLE_TAG}0\n{}{SAMPLE_TAG}1\n{}",
            ZONEINFO.replace("COUNT", "7"),
            ZONEINFO.replace("COUNT", "9")
        );
        let samples = parse_samples(&text).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[1][0].pagesets[0].count_pages, 9);
        let pairs = pair_up(1, 5, &samples[1], &samples[0]);
        assert_eq!(pairs.len(), 1);
        let pageset = &pairs[0].pageset;
        assert_eq!((pageset.kernel_count, pageset.ours_count, pageset.kernel_high), (9, 7, 500));
        assert_eq!(median_differences(&pairs.iter().collect::<Vec<_>>()), Some((2, 0)));
        assert!(parse_samples(&format!("{SAMPLE_TAG}1\n{ZONEINFO}")).is_err(), "a missing sample 0 is refused");
    }
}
