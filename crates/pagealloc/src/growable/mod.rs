//! A table that grows at its end while others read it locklessly: the per-frame and
//! per-pageblock tables of a zone that memory hot-add extends past the span it was built
//! with (mirrors sparse_add_section(): Linux gives hot-added memory a memmap of its own and
//! leaves the old one in place). The table built at start-up is read as before, one bounds
//! check per index; an index past it takes a cold path over at most [`MAX_GROWTHS`]
//! extensions, each placed on the heap or in memory the caller hands over. Entries never
//! move, so a reference taken before a growth stays valid.

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Index, IndexMut};
#[cfg(feature = "memory-growth")]
use core::sync::atomic::AtomicBool;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::meta::MetaSlice;
use crate::meta::{MetaArena, MetaArenaFull};

mod view;

pub use view::GrowableView;

/// Extensions a table takes after its build; a zone grows past its span at most this many
/// times (hot-add of memory, DIMM by DIMM). Ranges declared as holes at build can be added
/// any number of times. 0 without the `memory-growth` feature (mirrors
/// CONFIG_MEMORY_HOTPLUG): then an index past the built table panics as a slice's does,
/// and the hot paths compile exactly as over a slice.
pub const MAX_GROWTHS: usize = if cfg!(feature = "memory-growth") { 8 } else { 0 };

/// One extension: entries `[previous end, end)` of the table.
struct Extension<T> {
    end: AtomicU32,
    entries: UnsafeCell<Option<MetaSlice<T>>>,
}

/// A table's extensions, made on its first growth and placed like its records, so a table
/// that never grows carries two words for them, not the slots.
struct Directory<T> {
    /// Slots readers may use: `[0, published)` are written and never change.
    published: AtomicUsize,
    extensions: [Extension<T>; MAX_GROWTHS],
}

/// The growth state of a table (feature `memory-growth`).
#[cfg(feature = "memory-growth")]
struct Grown<T> {
    directory: UnsafeCell<Option<MetaSlice<Directory<T>>>>,
    /// The directory is written (Release) and never changes after.
    ready: AtomicBool,
    /// Held by the one writer (a growth, or the directory's making).
    growing: AtomicBool,
}

// SAFETY: the directory and each extension slot are written once, by the one caller
// holding `growing`, before a Release store (`ready`, `published`) makes them visible;
// readers read them only after the matching Acquire load, and nothing writes them again
// until drop, which has `&mut self`. So sharing the table shares `&T` only.
#[cfg(feature = "memory-growth")]
unsafe impl<T: Send + Sync> Sync for Grown<T> {}
// SAFETY: the table owns its entries, as a Box<[T]> per part would.
#[cfg(feature = "memory-growth")]
unsafe impl<T: Send> Send for Grown<T> {}

/// A table of `T` indexed from 0, extended only at its end.
pub struct GrowableTable<T> {
    built: MetaSlice<T>,
    #[cfg(feature = "memory-growth")]
    grown: Grown<T>,
}

/// All extension slots are used: the zone cannot grow again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrowthsExhausted;

impl<T> GrowableTable<T> {
    pub(crate) fn new(built: MetaSlice<T>) -> GrowableTable<T> {
        GrowableTable {
            built,
            #[cfg(feature = "memory-growth")]
            grown: Grown {
                directory: UnsafeCell::new(None),
                ready: AtomicBool::new(false),
                growing: AtomicBool::new(false),
            },
        }
    }

    /// Entries built at start-up.
    #[inline(always)]
    pub fn built_len(&self) -> usize {
        self.built.len()
    }

    /// Entries now, extensions included.
    pub fn len(&self) -> usize {
        match self.directory() {
            Some(directory) => match directory.published.load(Ordering::Acquire) {
                0 => self.built.len(),
                count => directory.extensions[count - 1].end.load(Ordering::Relaxed) as usize,
            },
            None => self.built.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Extensions taken so far.
    pub fn growths(&self) -> usize {
        self.directory().map_or(0, |directory| directory.published.load(Ordering::Acquire))
    }

    /// The extensions, once the first growth made them.
    #[inline]
    fn directory(&self) -> Option<&Directory<T>> {
        #[cfg(feature = "memory-growth")]
        if self.grown.ready.load(Ordering::Acquire) {
            // SAFETY: `ready` (Acquire, pairing with `reserve`'s Release) says the cell was
            // written, and it is never written again while `&self` lives.
            return unsafe { &*self.grown.directory.get() }.as_ref().map(|directory| &directory[0]);
        }
        None
    }

    /// Entry `index`, or `None` past the end. One compare for a built entry.
    #[inline(always)]
    pub fn get(&self, index: usize) -> Option<&T> {
        match self.built.get(index) {
            Some(entry) => Some(entry),
            None => self.grown(index),
        }
    }

    /// An entry past the built table: found among the published extensions.
    #[cold]
    #[inline(never)]
    fn grown(&self, index: usize) -> Option<&T> {
        let directory = self.directory()?;
        let published = directory.published.load(Ordering::Acquire);
        let mut start = self.built.len();
        for extension in &directory.extensions[..published] {
            let end = extension.end.load(Ordering::Relaxed) as usize;
            if index < end {
                // SAFETY: slot published (Acquire above pairs with the Release in `grow`),
                // so written and never written again while `&self` lives.
                let entries = unsafe { &*extension.entries.get() };
                return entries.as_ref().map(|entries| &entries[index - start]);
            }
            start = end;
        }
        None
    }

    /// Bytes [`Self::reserve`] would place: 0 once the directory exists.
    pub(crate) fn directory_bytes(&self) -> u64 {
        if self.directory().is_some() {
            0
        } else {
            directory_bytes_of::<T>()
        }
    }

    /// Without growth there are no extensions to make room for.
    #[cfg(not(feature = "memory-growth"))]
    pub(crate) fn reserve(&self, _arena: Option<&mut MetaArena>) -> Result<(), MetaArenaFull> {
        Ok(())
    }

    /// Without growth every growth is past [`MAX_GROWTHS`] (0).
    #[cfg(not(feature = "memory-growth"))]
    pub(crate) fn grow(&self, _entries: MetaSlice<T>) -> Result<(), GrowthsExhausted> {
        Err(GrowthsExhausted)
    }

    /// Makes the directory of extensions if the table has none, in `arena` if given.
    /// Concurrent calls are a caller bug (one range operation runs at a time).
    #[cfg(feature = "memory-growth")]
    pub(crate) fn reserve(&self, arena: Option<&mut MetaArena>) -> Result<(), MetaArenaFull> {
        if self.directory().is_some() {
            return Ok(());
        }
        assert!(!self.grown.growing.swap(true, Ordering::Acquire), "two growths of one table at once");
        // Again with `growing` held: a reserve that finished since the check above made it,
        // and readers may hold it, so it must not be replaced.
        if self.directory().is_some() {
            self.grown.growing.store(false, Ordering::Release);
            return Ok(());
        }
        let made = MetaSlice::new(1, arena, |_| Directory {
            published: AtomicUsize::new(0),
            extensions: core::array::from_fn(|_| Extension { end: AtomicU32::new(0), entries: UnsafeCell::new(None) }),
        });
        let result = made.map(|directory| {
            // SAFETY: `growing` makes this the only writer, and `ready` is still false, so no
            // reader looks at the cell.
            unsafe { *self.grown.directory.get() = Some(directory) };
            self.grown.ready.store(true, Ordering::Release);
        });
        self.grown.growing.store(false, Ordering::Release);
        result
    }

    /// Appends `entries` as indices `[len, len + entries.len())`. Readers see them once this
    /// returns. The directory was reserved; concurrent growths are a caller bug.
    #[cfg(feature = "memory-growth")]
    pub(crate) fn grow(&self, entries: MetaSlice<T>) -> Result<(), GrowthsExhausted> {
        let directory = self.directory().expect("a growth reserves the directory first");
        assert!(!self.grown.growing.swap(true, Ordering::Acquire), "two growths of one table at once");
        let published = directory.published.load(Ordering::Relaxed);
        let result = if published == MAX_GROWTHS {
            Err(GrowthsExhausted)
        } else {
            let end = self.len() + entries.len();
            assert!(end <= u32::MAX as usize, "a growable table indexes with 32 bits");
            let slot = &directory.extensions[published];
            // SAFETY: `growing` makes this the only writer; slot `published` is not yet
            // visible to readers, and was never written (slots fill in order).
            unsafe { *slot.entries.get() = Some(entries) };
            slot.end.store(end as u32, Ordering::Relaxed);
            directory.published.store(published + 1, Ordering::Release);
            Ok(())
        };
        self.grown.growing.store(false, Ordering::Release);
        result
    }

    /// Mutable entry `index` (extensions included); `&mut self` excludes every reader.
    fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        if index < self.built.len() {
            return self.built.get_mut(index);
        }
        #[cfg(feature = "memory-growth")]
        if let Some(directory) = self.grown.directory.get_mut().as_mut() {
            let directory = &mut directory[0];
            let published = *directory.published.get_mut();
            let mut start = self.built.len();
            for extension in &mut directory.extensions[..published] {
                let end = *extension.end.get_mut() as usize;
                if index < end {
                    return extension.entries.get_mut().as_mut().map(|entries| &mut entries[index - start]);
                }
                start = end;
            }
        }
        None
    }

    /// The table as hot loops read it: the built part's bounds held in registers (a
    /// `&GrowableTable` would be reloaded after every store the loop makes to an entry).
    #[inline(always)]
    pub fn view(&self) -> GrowableView<'_, T> {
        GrowableView { built: &self.built, table: self }
    }
}

impl<T> Index<usize> for GrowableTable<T> {
    type Output = T;
    /// A built entry costs what a slice index does: one compare, one branch.
    #[inline(always)]
    fn index(&self, index: usize) -> &T {
        self.view().at(index)
    }
}

impl<T> IndexMut<usize> for GrowableTable<T> {
    #[inline(always)]
    fn index_mut(&mut self, index: usize) -> &mut T {
        if index < self.built.len() {
            return &mut self.built[index];
        }
        self.grown_mut_or_panic(index)
    }
}

impl<T> GrowableTable<T> {
    /// An entry past the built table: out of line, and with growth compiled out a panic
    /// like a slice's, so the hot paths keep a slice's code. With growth, values live
    /// across the call that may return are kept in saved registers (its cost:
    /// docs/decisions.md).
    #[inline(always)]
    fn grown_entry(&self, index: usize) -> &T {
        if MAX_GROWTHS == 0 {
            out_of_bounds(index, self.built.len())
        }
        self.grown_or_panic(index)
    }

    #[cold]
    #[inline(never)]
    fn grown_mut_or_panic(&mut self, index: usize) -> &mut T {
        let len = self.len();
        match self.get_mut(index) {
            Some(entry) => entry,
            None => out_of_bounds(index, len),
        }
    }

    #[cold]
    #[inline(never)]
    fn grown_or_panic(&self, index: usize) -> &T {
        match self.grown(index) {
            Some(entry) => entry,
            None => out_of_bounds(index, self.len()),
        }
    }
}

/// Bytes the directory of a table of `T` takes when placed, alignment included.
const fn directory_bytes_of<T>() -> u64 {
    (core::mem::size_of::<Directory<T>>() + core::mem::align_of::<Directory<T>>()) as u64
}

#[cold]
#[inline(never)]
fn out_of_bounds(index: usize, len: usize) -> ! {
    panic!("index {index} out of a growable table of {len} entries")
}

impl<T> fmt::Debug for GrowableTable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GrowableTable({} built, {} now, {} growths)", self.built.len(), self.len(), self.growths())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::AtomicU64;
    #[cfg(feature = "memory-growth")]
    use core::sync::atomic::Ordering::Relaxed;

    fn slice(values: core::ops::Range<u64>) -> MetaSlice<AtomicU64> {
        let start = values.start;
        MetaSlice::new((values.end - start) as usize, None, |i| AtomicU64::new(start + i as u64)).unwrap()
    }

    #[cfg(feature = "memory-growth")]
    #[test]
    fn extensions_continue_the_index_space_and_old_entries_stay_put() {
        let table = GrowableTable::new(slice(0..4));
        assert_eq!(table.growths(), 0);
        assert!(table.directory_bytes() > 0);
        table.reserve(None).unwrap();
        assert_eq!(table.directory_bytes(), 0);
        let before: *const AtomicU64 = &table[3];
        table.grow(slice(4..7)).unwrap();
        table.grow(slice(7..8)).unwrap();
        assert_eq!((table.len(), table.built_len(), table.growths()), (8, 4, 2));
        let values: alloc::vec::Vec<u64> = (0..table.len()).map(|i| table[i].load(Relaxed)).collect();
        assert_eq!(values, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(core::ptr::eq(before, &table[3]));
        assert!(table.get(8).is_none());
    }

    #[cfg(feature = "memory-growth")]
    #[test]
    fn growths_run_out_with_an_error_and_the_table_unchanged() {
        let mut table = GrowableTable::new(slice(0..1));
        table.reserve(None).unwrap();
        for step in 0..MAX_GROWTHS as u64 {
            table.grow(slice(1 + step..2 + step)).unwrap();
        }
        assert_eq!(table.grow(slice(100..101)), Err(GrowthsExhausted));
        assert_eq!(table.len(), 1 + MAX_GROWTHS);
        *table[MAX_GROWTHS].get_mut() = 42;
        assert_eq!(table[MAX_GROWTHS].load(Relaxed), 42);
    }

    #[test]
    #[should_panic(expected = "out of a growable table")]
    fn an_index_past_the_end_panics_like_a_slice() {
        let table = GrowableTable::new(slice(0..2));
        let _ = &table[2];
    }
}
