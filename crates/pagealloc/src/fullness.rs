//! Pageblock fullness for fullest-first placement (beyond Linux; the idea of Temeraire's
//! filler and LLFree's reservations): each pageblock's free pages in the buddy, readable
//! without the lock, and the partly free pageblocks bucketed by how free they are, so an
//! order-0 take can start at the fullest. Bucket moves cost O(1) per free-list change,
//! made under the zone lock. 19 bytes per pageblock, 0.04 bytes per frame.

use core::mem::size_of;
use core::sync::atomic::AtomicU32;
use core::sync::atomic::Ordering::{Relaxed, SeqCst};

use crate::platform::AtomicWord;

use crate::growable::{GrowableTable, GrowthsExhausted};
use crate::meta::{MetaArena, MetaArenaFull, MetaSlice};
use crate::types::PAGEBLOCK_PAGES;

/// Buckets of 32 free pages: bucket 0 holds pageblocks with 1..=32 free, the fullest.
pub(crate) const FULLNESS_CLASSES: usize = 16;
const CLASS_PAGES: u64 = PAGEBLOCK_PAGES / FULLNESS_CLASSES as u64;
const NIL: u32 = u32::MAX;
/// Not in a bucket: no free page, or wholly free.
const UNLISTED: u8 = u8::MAX;

/// Free and parked pages per pageblock (see [`PageblockWord`]), readable without the zone
/// lock.
#[derive(Debug)]
pub struct PageblockFree(GrowableTable<PageblockWord<AtomicU32>>);

impl Default for PageblockFree {
    /// Not tracked.
    fn default() -> Self {
        PageblockFree(GrowableTable::new(MetaSlice::empty()))
    }
}

/// A pageblock's two counts as one [`PageblockWord::park`] saw them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageblockCounts {
    pub free_pages: u64,
    pub parked_pages: u64,
}

impl PageblockCounts {
    /// The pageblock holds nothing but free and parked pages (counts as a park left them).
    #[inline]
    pub fn is_whole(self) -> bool {
        self.free_pages + self.parked_pages >= PAGEBLOCK_PAGES
    }
}

/// One pageblock's counts: its free pages in the buddy (written under the zone lock, a
/// plain store) and its parked pages (`FragBeyondLinux::parked_frees`: added by a free
/// without any lock, taken under the zone lock), side by side on one line, so that a park
/// reads the free count where it adds to the parked one. Generic over the atomic, as
/// [`crate::frame::FrameWord`] is, so the loom model `tests/loom_frames.rs` runs this code.
///
/// A collection may take a parked block before the park that parked it has counted it:
/// the parked count then wraps below zero for a moment, and the park's add brings it back;
/// a read in that moment sees at most a pageblock's pages.
pub struct PageblockWord<A> {
    free: A,
    parked: A,
}

impl<A: AtomicWord> core::fmt::Debug for PageblockWord<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} free, {} parked", self.free_pages(), self.parked_pages())
    }
}

impl<A: AtomicWord> PageblockWord<A> {
    pub fn new() -> Self {
        PageblockWord { free: A::new_word(0), parked: A::new_word(0) }
    }

    /// Free pages in the buddy.
    #[inline]
    pub fn free_pages(&self) -> u64 {
        u64::from(self.free.load(Relaxed))
    }

    /// Sets the buddy's free pages (zone lock held).
    pub fn set_free_pages(&self, pages: u64) {
        assert!(pages <= PAGEBLOCK_PAGES, "a pageblock with {pages} free pages");
        self.free.store(pages as u32, Relaxed);
    }

    /// Parked pages (racy without the zone lock).
    #[inline]
    pub fn parked_pages(&self) -> u64 {
        u64::from(self.parked.load(Relaxed)).min(PAGEBLOCK_PAGES)
    }

    /// Counts `pages` parked; returns both counts as they are after it.
    #[inline]
    pub fn park(&self, pages: u64) -> PageblockCounts {
        // No check of the count it leaves: a collection may have taken the block already,
        // and the count reads 0 (or a wrapped value) until other parks count theirs.
        debug_assert!(pages != 0 && pages <= PAGEBLOCK_PAGES, "parking more than a pageblock");
        let parked = self.parked.fetch_add(pages as u32, SeqCst).wrapping_add(pages as u32);
        PageblockCounts { free_pages: self.free_pages(), parked_pages: u64::from(parked).min(PAGEBLOCK_PAGES) }
    }

    /// `pages` parked pages left for the buddy (zone lock held).
    pub fn unpark(&self, pages: u64) {
        // The count may be below `pages` here (the park has not counted yet): it wraps.
        debug_assert!(pages != 0 && pages <= PAGEBLOCK_PAGES, "unparking more than a pageblock");
        self.parked.fetch_add((pages as u32).wrapping_neg(), Relaxed);
    }
}

impl<A: AtomicWord> Default for PageblockWord<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl PageblockFree {
    /// Bytes per pageblock that tracking takes: the counts and the buckets' links.
    pub(crate) const BYTES_PER_SLOT: u64 =
        (size_of::<PageblockWord<AtomicU32>>() + FullnessBuckets::BYTES_PER_SLOT) as u64;

    pub(crate) fn new(pageblocks: usize, arena: Option<&mut MetaArena>) -> Result<PageblockFree, MetaArenaFull> {
        Ok(PageblockFree(GrowableTable::new(Self::extension(pageblocks, arena)?)))
    }

    /// Counts for `pageblocks` more slots, to [`Self::grow`] by.
    pub(crate) fn extension(
        pageblocks: usize,
        arena: Option<&mut MetaArena>,
    ) -> Result<MetaSlice<PageblockWord<AtomicU32>>, MetaArenaFull> {
        MetaSlice::new(pageblocks, arena, |_| PageblockWord::new())
    }

    pub(crate) fn grow(&self, counts: MetaSlice<PageblockWord<AtomicU32>>) -> Result<(), GrowthsExhausted> {
        self.0.grow(counts)
    }

    /// Makes room for the counts' extensions (before a first growth).
    pub(crate) fn reserve(&self, arena: Option<&mut MetaArena>) -> Result<(), MetaArenaFull> {
        self.0.reserve(arena)
    }

    /// Bytes a growth would place for the counts' directory (0 once made).
    pub(crate) fn directory_bytes(&self) -> u64 {
        self.0.directory_bytes()
    }

    /// Tracking is on (fullest-first placement).
    #[inline]
    pub(crate) fn is_tracked(&self) -> bool {
        self.0.built_len() != 0
    }

    /// Free pages of pageblock `slot` in the buddy.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> u64 {
        self.0[slot].free_pages()
    }

    /// Sets the buddy's free pages of `slot` (zone lock held).
    pub(crate) fn set(&self, slot: usize, pages: u64) {
        self.0[slot].set_free_pages(pages);
    }

    /// Pages parked in pageblock `slot` (racy without the zone lock).
    #[inline]
    pub(crate) fn parked(&self, slot: usize) -> u64 {
        self.0[slot].parked_pages()
    }

    /// Counts `pages` parked in `slot`; returns both counts as they are after it.
    #[inline]
    pub(crate) fn park(&self, slot: usize, pages: u64) -> PageblockCounts {
        self.0[slot].park(pages)
    }

    /// `pages` parked in `slot` left for the buddy (zone lock held).
    pub(crate) fn unpark(&self, slot: usize, pages: u64) {
        self.0[slot].unpark(pages);
    }
}

/// Partly free pageblocks by fullness; lives under the zone lock.
#[derive(Debug)]
pub struct FullnessBuckets {
    heads: [u32; FULLNESS_CLASSES],
    next: GrowableTable<u32>,
    prev: GrowableTable<u32>,
    class: GrowableTable<u8>,
    /// Per pageblock, the offset below which no block is free: where a take's search for a
    /// free block starts, so taking a pageblock page by page walks it once, not once a page.
    scan_from: GrowableTable<u16>,
}

/// The buckets' tables for more pageblock slots, made before the zone lock is taken.
#[derive(Debug)]
pub(crate) struct BucketSlots {
    next: MetaSlice<u32>,
    prev: MetaSlice<u32>,
    class: MetaSlice<u8>,
    scan_from: MetaSlice<u16>,
}

impl BucketSlots {
    pub(crate) fn new(pageblocks: usize, mut arena: Option<&mut MetaArena>) -> Result<BucketSlots, MetaArenaFull> {
        Ok(BucketSlots {
            next: MetaSlice::new(pageblocks, arena.as_deref_mut(), |_| NIL)?,
            prev: MetaSlice::new(pageblocks, arena.as_deref_mut(), |_| NIL)?,
            class: MetaSlice::new(pageblocks, arena.as_deref_mut(), |_| UNLISTED)?,
            scan_from: MetaSlice::new(pageblocks, arena, |_| 0)?,
        })
    }
}

impl FullnessBuckets {
    /// Bytes per pageblock slot: two links, the class and the scan start.
    pub(crate) const BYTES_PER_SLOT: usize = 2 * size_of::<u32>() + size_of::<u8>() + size_of::<u16>();

    pub(crate) fn new(pageblocks: usize, arena: Option<&mut MetaArena>) -> Result<FullnessBuckets, MetaArenaFull> {
        let slots = BucketSlots::new(pageblocks, arena)?;
        Ok(FullnessBuckets {
            heads: [NIL; FULLNESS_CLASSES],
            next: GrowableTable::new(slots.next),
            prev: GrowableTable::new(slots.prev),
            class: GrowableTable::new(slots.class),
            scan_from: GrowableTable::new(slots.scan_from),
        })
    }

    /// Bytes a growth would place for the buckets' directories (0 once made).
    pub(crate) fn directory_bytes(&self) -> u64 {
        self.next.directory_bytes()
            + self.prev.directory_bytes()
            + self.class.directory_bytes()
            + self.scan_from.directory_bytes()
    }

    /// Makes room for the extensions of the buckets' tables (before a first growth).
    pub(crate) fn reserve(&self, mut arena: Option<&mut MetaArena>) -> Result<(), MetaArenaFull> {
        self.next.reserve(arena.as_deref_mut())?;
        self.prev.reserve(arena.as_deref_mut())?;
        self.class.reserve(arena.as_deref_mut())?;
        self.scan_from.reserve(arena)
    }

    /// Appends pageblock slots (a zone's span grew), none of them in a bucket.
    pub(crate) fn grow(&mut self, slots: BucketSlots) -> Result<(), GrowthsExhausted> {
        self.next.grow(slots.next)?;
        self.prev.grow(slots.prev)?;
        self.class.grow(slots.class)?;
        self.scan_from.grow(slots.scan_from)
    }

    /// Pageblock slots covered, for the checker.
    #[cfg(any(feature = "alloc", test))]
    pub(crate) fn slots(&self) -> usize {
        self.class.len()
    }

    /// Where a search for a free block in pageblock `slot` may start (an offset in it).
    #[inline]
    pub(crate) fn scan_from(&self, slot: usize) -> u64 {
        u64::from(self.scan_from[slot])
    }

    /// A block became free at `offset` of pageblock `slot`: searches start there at latest.
    #[inline]
    pub(crate) fn freed_at(&mut self, slot: usize, offset: u64) {
        debug_assert!(offset < PAGEBLOCK_PAGES, "offset past its pageblock");
        self.scan_from[slot] = self.scan_from[slot].min(offset as u16);
    }

    /// A search found the first free block at `offset`: nothing before it is free.
    #[inline]
    pub(crate) fn first_free_at(&mut self, slot: usize, offset: u64) {
        debug_assert!(offset >= self.scan_from(slot) && offset < PAGEBLOCK_PAGES, "free block before the scan start");
        self.scan_from[slot] = offset as u16;
    }

    fn class_for(free_pages: u64) -> u8 {
        if free_pages == 0 || free_pages >= PAGEBLOCK_PAGES {
            UNLISTED
        } else {
            ((free_pages - 1) / CLASS_PAGES) as u8
        }
    }

    /// Files pageblock `slot` under its new free count. The count may pass a pageblock (free
    /// pages and a parked count read while a park is counting): such a pageblock is unlisted.
    pub(crate) fn update(&mut self, slot: usize, free_pages: u64) {
        let class = Self::class_for(free_pages);
        debug_assert!(class == UNLISTED || (class as usize) < FULLNESS_CLASSES, "no such bucket");
        if class == self.class[slot] {
            return;
        }
        self.unlink(slot);
        debug_assert!(self.class[slot] == UNLISTED, "pageblock still filed");
        if class != UNLISTED {
            let head = self.heads[class as usize];
            debug_assert!(head != slot as u32, "pageblock heads the bucket it joins");
            self.next[slot] = head;
            self.prev[slot] = NIL;
            if head != NIL {
                debug_assert!(self.prev[head as usize] == NIL && self.class[head as usize] == class, "bad bucket head");
                self.prev[head as usize] = slot as u32;
            }
            self.heads[class as usize] = slot as u32;
        }
        self.class[slot] = class;
    }

    fn unlink(&mut self, slot: usize) {
        let class = self.class[slot];
        if class == UNLISTED {
            return;
        }
        let (next, prev) = (self.next[slot], self.prev[slot]);
        if prev == NIL {
            debug_assert_eq!(self.heads[class as usize], slot as u32);
            self.heads[class as usize] = next;
        } else {
            debug_assert!(
                self.next[prev as usize] == slot as u32 && self.class[prev as usize] == class,
                "bad predecessor"
            );
            self.next[prev as usize] = next;
        }
        if next != NIL {
            debug_assert!(
                self.prev[next as usize] == slot as u32 && self.class[next as usize] == class,
                "bad successor"
            );
            self.prev[next as usize] = prev;
        }
        self.class[slot] = UNLISTED;
    }

    /// Partly free pageblocks, fullest bucket first, at most `limit` of them.
    pub(crate) fn fullest(&self, limit: usize) -> impl Iterator<Item = usize> + '_ {
        self.heads
            .iter()
            .flat_map(move |&head| {
                let mut at = head;
                core::iter::from_fn(move || {
                    (at != NIL).then(|| {
                        let slot = at as usize;
                        at = self.next[slot];
                        slot
                    })
                })
            })
            .take(limit)
    }

    /// The bucket a pageblock is filed under (`None`: not partly free), for the checker.
    pub(crate) fn class_of(&self, slot: usize) -> Option<u8> {
        (self.class[slot] != UNLISTED).then_some(self.class[slot])
    }

    /// What bucket a free count belongs in, for the checker.
    #[cfg(any(feature = "alloc", test))]
    pub(crate) fn expected_class(free_pages: u64) -> Option<u8> {
        let class = Self::class_for(free_pages);
        (class != UNLISTED).then_some(class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pageblocks_move_between_buckets_and_the_fullest_come_first() {
        use alloc::vec::Vec;
        let mut buckets = FullnessBuckets::new(4, None).unwrap();
        buckets.update(0, 500);
        buckets.update(1, 3);
        buckets.update(2, 40);
        buckets.update(3, 512);
        assert_eq!(buckets.fullest(10).collect::<Vec<_>>(), [1, 2, 0]);
        buckets.update(1, 0);
        buckets.update(2, 33);
        assert_eq!(buckets.fullest(10).collect::<Vec<_>>(), [2, 0]);
        buckets.update(0, 1);
        assert_eq!(buckets.fullest(1).collect::<Vec<_>>(), [0]);
        assert_eq!(buckets.class_of(3), None);
        assert_eq!(FullnessBuckets::expected_class(32), Some(0));
        assert_eq!(FullnessBuckets::expected_class(33), Some(1));
    }
}
