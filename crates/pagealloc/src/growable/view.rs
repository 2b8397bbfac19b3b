//! A growable table read through a copy of its built part's bounds: what the hot paths
//! index, one bounds check against the built part and a cold path past it.

use core::ops::Index;

use super::GrowableTable;

/// A [`GrowableTable`] read through a copy of its built part's bounds.
#[derive(Debug)]
pub struct GrowableView<'a, T> {
    pub(super) built: &'a [T],
    pub(super) table: &'a GrowableTable<T>,
}

impl<T> Clone for GrowableView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for GrowableView<'_, T> {}

impl<'a, T> GrowableView<'a, T> {
    /// Entry `index`, or `None` past the end.
    #[inline(always)]
    pub fn get(&self, index: usize) -> Option<&'a T> {
        match self.built.get(index) {
            Some(entry) => Some(entry),
            None => self.table.grown(index),
        }
    }

    /// Entries now, extensions included.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

impl<'a, T> GrowableView<'a, T> {
    /// Entries `range` as one slice, if they all lie in the built part (extensions are
    /// separate allocations).
    #[inline(always)]
    pub fn built_slice(self, range: core::ops::Range<usize>) -> Option<&'a [T]> {
        self.built.get(range)
    }

    /// Entry `index`, panicking past the end as a slice index does.
    #[inline(always)]
    pub(super) fn at(self, index: usize) -> &'a T {
        if index < self.built.len() {
            // SAFETY: just checked against the built part's length.
            unsafe { self.built.get_unchecked(index) }
        } else {
            self.table.grown_entry(index)
        }
    }
}

impl<T> Index<usize> for GrowableView<'_, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, index: usize) -> &T {
        self.at(index)
    }
}
