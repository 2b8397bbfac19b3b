//! Which frame-metadata layout the simulator charges cache lines for.
//!
//! The allocator reports touches of a frame's metadata record; which cache line that record
//! lives in depends on its size. Our records are [`FRAME_METADATA_BYTES`] bytes, several to a
//! line; Linux's `struct page` is 64 bytes, one line per frame, so every frame the buddy
//! allocator visits under the zone lock is a line of its own. The seeds' tables were measured
//! on Linux, so reproductions model its layout; runs of our allocator as it is model ours.
//!
//! [`FRAME_METADATA_BYTES`]: pagealloc::frame::FRAME_METADATA_BYTES

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetadataLayout {
    /// This allocator's records, [`pagealloc::frame::FRAME_METADATA_BYTES`] bytes each.
    #[default]
    Pagealloc,
    /// Linux's 64-byte `struct page` (x86-64, without debug options).
    LinuxStructPage,
}

impl MetadataLayout {
    /// Bytes of metadata per 4 KiB frame.
    pub const fn bytes_per_frame(self) -> u32 {
        match self {
            MetadataLayout::Pagealloc => pagealloc::frame::FRAME_METADATA_BYTES as u32,
            MetadataLayout::LinuxStructPage => 64,
        }
    }

    /// The cache line (counted from the zone's first record) holding frame `index`'s record.
    #[inline]
    pub const fn line_of_frame(self, index: u32) -> u32 {
        (index as u64 * self.bytes_per_frame() as u64 / 64) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_gives_every_frame_its_own_line_ours_packs_several() {
        assert_eq!(MetadataLayout::LinuxStructPage.line_of_frame(7), 7);
        let per_line = 64 / MetadataLayout::Pagealloc.bytes_per_frame();
        assert!(per_line >= 5, "records of at most 12 bytes");
        assert_eq!(MetadataLayout::Pagealloc.line_of_frame(0), MetadataLayout::Pagealloc.line_of_frame(per_line - 1));
        assert_ne!(MetadataLayout::Pagealloc.line_of_frame(0), MetadataLayout::Pagealloc.line_of_frame(per_line + 1));
    }
}
