//! The frame-ownership shadow: one atomic owner tag per frame, kept by the torture workers
//! beside the allocator and independent of it. The allocator's own checks can only see
//! what its metadata says; the shadow catches the allocator handing one frame to two
//! holders at once (a double allocation), and a free of frames the freer does not hold.

use std::ops::Range;
use std::sync::atomic::{AtomicU16, Ordering};

use pagealloc::Pfn;

/// An owner tag: a worker's index + 1. Tag 0 means "held by nobody".
pub type Owner = u16;

/// The tag of a frame nobody holds.
pub const NOBODY: Owner = 0;

/// What the shadow saw go wrong. Each is a harness-level violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShadowViolation {
    /// The block does not lie inside one zone's span.
    OutsideZones { pfn: Pfn, pages: u64 },
    /// A frame handed to `claimant` is still held by `holder`.
    DoubleAllocation { pfn: Pfn, holder: Owner, claimant: Owner },
    /// `freer` freed a frame that `holder` holds (`NOBODY`: a frame nobody holds).
    WrongOwner { pfn: Pfn, holder: Owner, freer: Owner },
}

impl std::fmt::Display for ShadowViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShadowViolation::OutsideZones { pfn, pages } => {
                write!(f, "block of {pages} pages at pfn {pfn:#x} is not inside one zone")
            }
            ShadowViolation::DoubleAllocation { pfn, holder, claimant } => {
                write!(f, "double allocation: pfn {pfn:#x} handed to worker {claimant} while worker {holder} holds it")
            }
            ShadowViolation::WrongOwner { pfn, holder, freer } if *holder == NOBODY => {
                write!(f, "worker {freer} freed pfn {pfn:#x}, which nobody holds")
            }
            ShadowViolation::WrongOwner { pfn, holder, freer } => {
                write!(f, "worker {freer} freed pfn {pfn:#x}, which worker {holder} holds")
            }
        }
    }
}

/// The tags of one zone's span.
struct Segment {
    start_pfn: Pfn,
    tags: Box<[AtomicU16]>,
}

/// Owner tags for every frame of the allocator's zones (one segment per zone, so the gap
/// between DMA32 and Normal costs nothing).
pub struct FrameShadow {
    segments: Vec<Segment>,
}

impl FrameShadow {
    /// A shadow covering `spans` (the zones' pfn ranges), every frame held by nobody.
    pub fn new(spans: impl IntoIterator<Item = Range<Pfn>>) -> FrameShadow {
        let segments = spans
            .into_iter()
            .map(|span| Segment {
                start_pfn: span.start,
                tags: (span.start..span.end).map(|_| AtomicU16::new(NOBODY)).collect(),
            })
            .collect();
        FrameShadow { segments }
    }

    /// The tags of `pages` frames from `pfn`, if they lie inside one segment.
    fn tags(&self, pfn: Pfn, pages: u64) -> Result<&[AtomicU16], ShadowViolation> {
        let outside = ShadowViolation::OutsideZones { pfn, pages };
        let segment = self
            .segments
            .iter()
            .find(|segment| pfn >= segment.start_pfn && pfn - segment.start_pfn < segment.tags.len() as u64)
            .ok_or(outside.clone())?;
        let first = (pfn - segment.start_pfn) as usize;
        let end = first.checked_add(usize::try_from(pages).map_err(|_| outside.clone())?).ok_or(outside.clone())?;
        segment.tags.get(first..end).ok_or(outside)
    }

    /// Tags `pages` frames from `pfn` as held by `owner`, each by a compare-and-swap from
    /// `NOBODY`: a frame someone else still holds is a double allocation. On failure the
    /// frames this call tagged are untagged again, so the earlier holder's free still
    /// verifies.
    pub fn claim(&self, pfn: Pfn, pages: u64, owner: Owner) -> Result<(), ShadowViolation> {
        debug_assert_ne!(owner, NOBODY, "owners are worker index + 1");
        let tags = self.tags(pfn, pages)?;
        for (i, tag) in tags.iter().enumerate() {
            if let Err(holder) = tag.compare_exchange(NOBODY, owner, Ordering::AcqRel, Ordering::Acquire) {
                for claimed in &tags[..i] {
                    claimed.store(NOBODY, Ordering::Release);
                }
                return Err(ShadowViolation::DoubleAllocation { pfn: pfn + i as u64, holder, claimant: owner });
            }
        }
        Ok(())
    }

    /// Verifies that `owner` holds all `pages` frames from `pfn`, then untags them. A
    /// mismatch changes no tag (the real holder's free must still verify). Call it before
    /// handing the block back to the allocator: once freed, another worker may be handed
    /// these frames and claim them.
    pub fn release(&self, pfn: Pfn, pages: u64, owner: Owner) -> Result<(), ShadowViolation> {
        let tags = self.tags(pfn, pages)?;
        if let Some((i, tag)) = tags.iter().enumerate().find(|(_, tag)| tag.load(Ordering::Acquire) != owner) {
            let holder = tag.load(Ordering::Acquire);
            return Err(ShadowViolation::WrongOwner { pfn: pfn + i as u64, holder, freer: owner });
        }
        for (i, tag) in tags.iter().enumerate() {
            // Only the holder changes its tags, so this fails only if another worker's claim
            // raced in: a double allocation the allocator made while we held the frame.
            if let Err(holder) = tag.compare_exchange(owner, NOBODY, Ordering::AcqRel, Ordering::Acquire) {
                return Err(ShadowViolation::WrongOwner { pfn: pfn + i as u64, holder, freer: owner });
            }
        }
        Ok(())
    }

    /// Frames some worker holds (exact only at a quiescent point).
    pub fn held_pages(&self) -> u64 {
        let held_in =
            |segment: &Segment| segment.tags.iter().filter(|tag| tag.load(Ordering::Acquire) != NOBODY).count();
        self.segments.iter().map(|segment| held_in(segment) as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shadow() -> FrameShadow {
        FrameShadow::new([0..4096, 1 << 20..(1 << 20) + 1024])
    }

    /// The allocator hands part of a held order-3 block to a second worker: the shadow
    /// reports the first shared frame and both owners, and the first holder's tags survive.
    #[test]
    fn detects_a_double_allocation() {
        let shadow = shadow();
        shadow.claim(8, 8, 1).unwrap();
        let violation = shadow.claim(12, 2, 2).unwrap_err();
        assert_eq!(violation, ShadowViolation::DoubleAllocation { pfn: 12, holder: 1, claimant: 2 });
        // A claim that overlaps only at its end untags the frames it had tagged.
        let violation = shadow.claim(4, 8, 3).unwrap_err();
        assert_eq!(violation, ShadowViolation::DoubleAllocation { pfn: 8, holder: 1, claimant: 3 });
        assert_eq!(shadow.held_pages(), 8, "only worker 1's block is held");
        shadow.release(8, 8, 1).unwrap();
        assert_eq!(shadow.held_pages(), 0);
    }

    /// A worker frees a block another worker holds, or one nobody holds: both are caught,
    /// and the real holder can still free its block.
    #[test]
    fn detects_a_wrong_owner_free() {
        let shadow = shadow();
        shadow.claim(1 << 20, 16, 4).unwrap();
        let violation = shadow.release((1 << 20) + 8, 8, 5).unwrap_err();
        assert_eq!(violation, ShadowViolation::WrongOwner { pfn: (1 << 20) + 8, holder: 4, freer: 5 });
        let violation = shadow.release(64, 1, 5).unwrap_err();
        assert_eq!(violation, ShadowViolation::WrongOwner { pfn: 64, holder: NOBODY, freer: 5 });
        assert!(violation.to_string().contains("nobody holds"), "{violation}");
        shadow.release(1 << 20, 16, 4).unwrap();
        // Freed twice: the second free finds the frames held by nobody.
        assert!(matches!(shadow.release(1 << 20, 16, 4), Err(ShadowViolation::WrongOwner { holder: NOBODY, .. })));
    }

    #[test]
    fn blocks_outside_the_zones_are_violations() {
        let shadow = shadow();
        assert!(matches!(shadow.claim(4090, 8, 1), Err(ShadowViolation::OutsideZones { .. })));
        assert!(matches!(shadow.claim(1 << 19, 1, 1), Err(ShadowViolation::OutsideZones { .. })));
        assert!(matches!(shadow.release(u64::MAX, u64::MAX, 1), Err(ShadowViolation::OutsideZones { .. })));
        assert_eq!(shadow.held_pages(), 0);
    }
}
