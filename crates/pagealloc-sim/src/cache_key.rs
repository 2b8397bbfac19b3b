//! Names of what the simulated caches hold: pages of data, keyed by page frame number, and
//! shared lines, keyed by kind, zone and number. Lines are numbered densely within a row
//! (one kind of one zone), so tables indexed by them (line states, the caches' node
//! indexes) are arrays, not maps.

use pagealloc::platform::SharedLine;
use pagealloc::types::Pfn;

use crate::metadata_layout::MetadataLayout;

/// One cache key: bit 63 clear for a page (the rest is its pfn); set for a line, with the
/// line's kind in bits 56..63, its zone in bits 32..48 and its number in bits 0..32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey(u64);

/// What a key names, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Page(Pfn),
    /// The `number`-th line of `row`: one kind of line (frame metadata, free-list heads,
    /// pageset headers, ...) of one zone.
    Line {
        row: usize,
        number: usize,
    },
}

const LINE_TAG: u64 = 1 << 63;
const FRAME_META_KIND: u64 = 3;
/// Frames' state words to a 64-byte line: each word is a `pagealloc::frame::Frame`.
const WORDS_PER_LINE: u32 = (64 / core::mem::size_of::<pagealloc::frame::Frame>()) as u32;
/// Pageblocks' free and parked counts to a 64-byte line: each is a
/// `pagealloc::fullness::PageblockWord`.
const COUNTS_PER_LINE: u32 =
    (64 / core::mem::size_of::<pagealloc::fullness::PageblockWord<core::sync::atomic::AtomicU32>>()) as u32;
/// Kinds of line, each a row per zone (the largest kind number is 14).
const KINDS: usize = 16;

impl CacheKey {
    pub fn page(pfn: Pfn) -> CacheKey {
        debug_assert!(pfn < LINE_TAG, "pfn {pfn} collides with the line tag");
        CacheKey(pfn)
    }

    /// The line holding `line`; frames whose records share a line under `layout` get the
    /// same key.
    pub fn line(line: SharedLine, layout: MetadataLayout) -> CacheKey {
        let (kind, zone, number) = match line {
            SharedLine::ZoneCounters(zone) => (0u64, zone, 0u32),
            SharedLine::FreeList { zone, order } => (1, zone, order as u32),
            SharedLine::PcpHeader { zone, cpu } => (2, zone, cpu),
            SharedLine::FrameMeta { zone, frame } => (FRAME_META_KIND, zone, layout.line_of_frame(frame)),
            SharedLine::ZoneNumaCounters(zone) => (8, zone, 0),
            SharedLine::GlobalCounters => (9, 0, 0),
            SharedLine::GlobalNumaCounters => (10, 0, 0),
            SharedLine::LruHead { node, list } => (11, node, u32::from(list)),
            SharedLine::RemoteFrees(zone) => (12, zone, 0),
            SharedLine::FrameWord { zone, frame } => (13, zone, frame / WORDS_PER_LINE),
            SharedLine::PageblockCounts { zone, pageblock } => (14, zone, pageblock / COUNTS_PER_LINE),
        };
        CacheKey(LINE_TAG | kind << 56 | (zone as u64) << 32 | number as u64)
    }

    #[inline]
    pub fn kind(self) -> KeyKind {
        if self.0 & LINE_TAG == 0 {
            KeyKind::Page(self.0)
        } else {
            let (kind, zone) = (((self.0 >> 56) & 0x7f) as usize, (self.0 >> 32) as u16 as usize);
            debug_assert!(kind < KINDS, "line kind {kind}");
            KeyKind::Line { row: zone * KINDS + kind, number: self.0 as u32 as usize }
        }
    }

    pub fn raw(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_decode_to_what_they_name() {
        assert_eq!(CacheKey::page(12345).kind(), KeyKind::Page(12345));
        let linux = MetadataLayout::LinuxStructPage;
        assert_eq!(
            CacheKey::line(SharedLine::frame_meta(2, 77), linux).kind(),
            KeyKind::Line { row: 2 * KINDS + FRAME_META_KIND as usize, number: 77 }
        );
        assert_eq!(
            CacheKey::line(SharedLine::ZoneCounters(2), linux).kind(),
            KeyKind::Line { row: 2 * KINDS, number: 0 }
        );
        let header = CacheKey::line(SharedLine::PcpHeader { zone: 1, cpu: 700 }, linux);
        assert_eq!(header.kind(), KeyKind::Line { row: KINDS + 2, number: 700 });
        let heads = [0u8, 1].map(|order| CacheKey::line(SharedLine::FreeList { zone: 0, order }, linux));
        assert_ne!(heads[0], heads[1]);
        assert_ne!(CacheKey::page(3), CacheKey::line(SharedLine::frame_meta(0, 3), linux));
    }
}
