//! How long the tables indexed by pfn or line number (`dense_table`) grow for a machine's
//! zones. Sized once up front, each is one zeroed allocation the host maps lazily, page by
//! page as entries are written; grown on demand instead, each doubling copies the old part
//! and faults in every page of it.

use core::ops::Range;

use pagealloc::platform::SharedLine;
use pagealloc::types::Pfn;

use crate::cache_key::{CacheKey, KeyKind};
use crate::metadata_layout::MetadataLayout;

/// Entries each dense table needs for a set of zones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableSizes {
    /// Tables indexed by pfn: one past the highest pfn.
    pub pages: usize,
    /// Per row (one kind of line of one zone), lines: only the frame-metadata rows, the
    /// others being a few lines long.
    pub rows: Vec<usize>,
}

impl TableSizes {
    /// The sizes for zones spanning `zone_spans`, zone `i` the `i`-th span, whose frame
    /// metadata `layout` places on lines.
    pub fn for_zones(zone_spans: &[Range<Pfn>], layout: MetadataLayout) -> TableSizes {
        let mut sizes = TableSizes { pages: 0, rows: Vec::new() };
        for (zone, span) in zone_spans.iter().enumerate() {
            let frames = span.end.saturating_sub(span.start);
            sizes.pages = sizes.pages.max(span.end as usize);
            let (Ok(zone), Ok(last_frame)) = (u16::try_from(zone), u32::try_from(frames)) else { continue };
            if last_frame == 0 {
                continue;
            }
            let key = CacheKey::line(SharedLine::frame_meta(zone, last_frame - 1), layout);
            let KeyKind::Line { row, number } = key.kind() else { unreachable!("a line key") };
            if sizes.rows.len() <= row {
                sizes.rows.resize(row + 1, 0);
            }
            sizes.rows[row] = number + 1;
        }
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zones_last_frame_is_the_last_entry_of_its_row() {
        let spans = [0x1000..0x1_0000, 0x1_0000..0x10_0000];
        for layout in [MetadataLayout::Pagealloc, MetadataLayout::LinuxStructPage] {
            let sizes = TableSizes::for_zones(&spans, layout);
            assert_eq!(sizes.pages, 0x10_0000);
            for (zone, span) in spans.iter().enumerate() {
                let frames = (span.end - span.start) as u32;
                let last = CacheKey::line(SharedLine::frame_meta(zone as u16, frames - 1), layout).kind();
                let KeyKind::Line { row, number } = last else { panic!("a line") };
                assert_eq!(sizes.rows[row], number + 1, "{layout:?} zone {zone}");
            }
        }
        let empty = TableSizes::for_zones(&[5..5, 9..9], MetadataLayout::Pagealloc);
        assert_eq!((empty.pages, empty.rows), (9, Vec::new()), "empty zones need no row");
    }
}
