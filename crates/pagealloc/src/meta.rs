//! Where the allocator's large tables live: on the heap, or in memory the caller hands over
//! before any heap exists (as a kernel carves its memmap from memblock). The per-frame
//! records, the pageblock types and counts, and the pagesets go in a [`MetaSlice`], which
//! reads the same either way: one pointer and a length, no branch on the hot path.

use core::fmt;
use core::marker::PhantomData;
use core::mem::{align_of, size_of, MaybeUninit};
use core::ops::Deref;
use core::ptr::NonNull;

/// A fixed-length table, owned on the heap or placed in caller memory for the allocator's
/// lifetime.
pub struct MetaSlice<T> {
    ptr: NonNull<[T]>,
    /// On the heap (dropped as a `Box`), or in caller memory (elements dropped in place).
    heap: bool,
    _owns: PhantomData<T>,
}

// SAFETY: a MetaSlice owns its elements exclusively (from a Box, or from caller memory
// handed over for `'static`), so it is Send/Sync exactly when a `Box<[T]>` would be.
unsafe impl<T: Send> Send for MetaSlice<T> {}
// SAFETY: as above; shared access only hands out `&[T]`.
unsafe impl<T: Sync> Sync for MetaSlice<T> {}

impl<T> MetaSlice<T> {
    /// A table of `len` elements made by `init`, in `arena` if given, else on the heap
    /// (without the `alloc` feature, no arena is an arena of 0 bytes).
    pub(crate) fn new(
        len: usize,
        arena: Option<&mut MetaArena>,
        mut init: impl FnMut(usize) -> T,
    ) -> Result<MetaSlice<T>, MetaArenaFull> {
        let mut slots = MetaSlots::new(len, arena)?;
        for index in 0..len {
            slots.push(init(index));
        }
        Ok(slots.finish())
    }

    /// An empty table (no memory).
    pub(crate) fn empty() -> MetaSlice<T> {
        MetaSlice { ptr: NonNull::slice_from_raw_parts(NonNull::dangling(), 0), heap: false, _owns: PhantomData }
    }
}

/// Room for a table whose elements are made one at a time, each free to place its own
/// tables in the arena meanwhile (a zone's frame records go in the arena while the zones'
/// table waits for them): reserved first, filled in order, then a [`MetaSlice`].
pub(crate) struct MetaSlots<T> {
    first: NonNull<T>,
    len: usize,
    filled: usize,
    heap: bool,
}

impl<T> MetaSlots<T> {
    /// Room for `len` elements in `arena`, or on the heap without one.
    pub(crate) fn new(len: usize, arena: Option<&mut MetaArena>) -> Result<MetaSlots<T>, MetaArenaFull> {
        match arena {
            Some(arena) => arena.reserve(len),
            #[cfg(any(feature = "alloc", test))]
            None => {
                let boxed = alloc::boxed::Box::<[T]>::new_uninit_slice(len);
                let first = NonNull::from(alloc::boxed::Box::leak(boxed)).cast::<T>();
                Ok(MetaSlots { first, len, filled: 0, heap: true })
            }
            #[cfg(not(any(feature = "alloc", test)))]
            None => {
                Err(MetaArenaFull { needed_bytes: (size_of::<T>() as u64).saturating_mul(len as u64), given_bytes: 0 })
            }
        }
    }

    /// Writes the next element; more than `len` is a bug of the caller.
    pub(crate) fn push(&mut self, value: T) {
        assert!(self.filled < self.len, "more elements than the slots reserved");
        // SAFETY: slot `filled` lies inside the reserved room (checked above), is aligned
        // for T, and has not been written: slots are written once, in order.
        unsafe { self.first.add(self.filled).write(value) };
        self.filled += 1;
    }

    /// The filled table; every slot must be written.
    pub(crate) fn finish(self) -> MetaSlice<T> {
        assert_eq!(self.filled, self.len, "every reserved slot is written");
        let this = core::mem::ManuallyDrop::new(self);
        MetaSlice { ptr: NonNull::slice_from_raw_parts(this.first, this.len), heap: this.heap, _owns: PhantomData }
    }
}

impl<T> Drop for MetaSlots<T> {
    /// An unfinished table (its build failed): drops what was written and frees the heap room.
    fn drop(&mut self) {
        // SAFETY: exactly the first `filled` slots were written, and are dropped once here.
        unsafe { core::ptr::drop_in_place(NonNull::slice_from_raw_parts(self.first, self.filled).as_ptr()) };
        #[cfg(any(feature = "alloc", test))]
        if self.heap {
            let room = NonNull::slice_from_raw_parts(self.first.cast::<MaybeUninit<T>>(), self.len);
            // SAFETY: the room came from `Box::leak` of a `Box<[MaybeUninit<T>]>` of `len` in
            // `new`; MaybeUninit has nothing to drop, and the box is freed once, here.
            drop(unsafe { alloc::boxed::Box::from_raw(room.as_ptr()) });
        }
    }
}

impl<T> fmt::Debug for MetaSlots<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MetaSlots({} of {} written)", self.filled, self.len)
    }
}

impl<T> Deref for MetaSlice<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialised elements this value owns until drop
        // (a leaked Box, or caller memory given for 'static and written by `place`).
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> core::ops::DerefMut for MetaSlice<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`; `&mut self` makes this the only access.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for MetaSlice<T> {
    fn drop(&mut self) {
        #[cfg(any(feature = "alloc", test))]
        if self.heap {
            // SAFETY: `ptr` came from `Box::leak` (in `MetaSlots::new`, a box of `len`
            // MaybeUninit<T>, all written, which has T's layout) and is dropped once, here.
            drop(unsafe { alloc::boxed::Box::from_raw(self.ptr.as_ptr()) });
            return;
        }
        // SAFETY: the elements were written through `MetaSlots` and are dropped once, here;
        // the memory itself stays the caller's.
        unsafe { core::ptr::drop_in_place(self.ptr.as_ptr()) };
    }
}

impl<T: fmt::Debug> fmt::Debug for MetaSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MetaSlice({} x {}, {})", self.len(), size_of::<T>(), if self.heap { "heap" } else { "placed" })
    }
}

/// The caller's memory ran out while placing the tables: `needed` bytes at least.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaArenaFull {
    pub needed_bytes: u64,
    pub given_bytes: u64,
}

/// A bump allocator over memory the caller gives for the allocator's lifetime (mirrors
/// memblock_alloc() for the memmap): tables are placed one after another, each aligned.
pub struct MetaArena {
    memory: &'static mut [MaybeUninit<u8>],
    used_bytes: usize,
}

impl MetaArena {
    pub fn new(memory: &'static mut [MaybeUninit<u8>]) -> MetaArena {
        MetaArena { memory, used_bytes: 0 }
    }

    /// Bytes placed so far, alignment included.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// Room for `len` elements of T, aligned, after what was placed before.
    fn reserve<T>(&mut self, len: usize) -> Result<MetaSlots<T>, MetaArenaFull> {
        let base = self.memory.as_mut_ptr() as usize;
        let start = (base + self.used_bytes).next_multiple_of(align_of::<T>()) - base;
        let bytes = size_of::<T>().checked_mul(len).and_then(|bytes| bytes.checked_add(start));
        let given_bytes = self.memory.len() as u64;
        let Some(end) = bytes.filter(|&end| end <= self.memory.len()) else {
            let needed_bytes = (start as u64).saturating_add((size_of::<T>() as u64).saturating_mul(len as u64));
            return Err(MetaArenaFull { needed_bytes, given_bytes });
        };
        // The slots lie in `memory[start..end]` (checked above), aligned for T; the arena
        // never hands this memory out again, and it lives for 'static.
        let first = NonNull::new(self.memory[start..].as_mut_ptr().cast::<T>()).expect("a slice is never at null");
        self.used_bytes = end;
        Ok(MetaSlots { first, len, filled: 0, heap: false })
    }
}

impl fmt::Debug for MetaArena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MetaArena({} of {} bytes used)", self.used_bytes, self.memory.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

    fn memory(bytes: usize) -> &'static mut [MaybeUninit<u8>] {
        alloc::boxed::Box::leak(alloc::vec![MaybeUninit::uninit(); bytes].into_boxed_slice())
    }

    #[test]
    fn placed_tables_are_aligned_disjoint_and_read_like_heap_ones() {
        let mut arena = MetaArena::new(memory(4096));
        let bytes: MetaSlice<u8> = MetaSlice::new(3, Some(&mut arena), |i| i as u8).unwrap();
        let words: MetaSlice<AtomicU64> = MetaSlice::new(10, Some(&mut arena), |i| AtomicU64::new(i as u64)).unwrap();
        assert_eq!(&*bytes, &[0, 1, 2]);
        assert_eq!(words.as_ptr() as usize % align_of::<AtomicU64>(), 0);
        assert!(words.as_ptr() as usize >= bytes.as_ptr() as usize + 3);
        words[9].store(99, Relaxed);
        assert_eq!((words[9].load(Relaxed), words[8].load(Relaxed), words.len()), (99, 8, 10));
        assert!(arena.used_bytes() <= 3 + 7 + 80);
    }

    #[test]
    fn a_full_arena_says_how_much_was_needed_and_places_nothing() {
        let mut arena = MetaArena::new(memory(64));
        let full = MetaSlice::<u64>::new(9, Some(&mut arena), |_| 0).unwrap_err();
        assert_eq!(full.given_bytes, 64);
        assert!(full.needed_bytes >= 72);
        assert_eq!(arena.used_bytes(), 0);
        assert_eq!(MetaSlice::<u64>::new(8, Some(&mut arena), |_| 1).unwrap().len(), 8);
    }
}
