//! The description tables: nodes, zones, holes and reservations, CPUs' nodes, the derived
//! zone sizings, zonelists. With the `alloc` feature a table is a `Vec` and has no limit;
//! without it, a fixed array, so a kernel can describe its memory before it has a heap, as
//! memblock keeps its first regions in static arrays until it can grow them. A push beyond
//! a fixed table's capacity is an error, never a panic. The builder holds its tables by
//! value, so their capacities are what a boot stack affords: with these, building an
//! allocator and a first allocation fit in x86-64's 16 KiB (`tests/no_alloc.rs`); 64
//! ranges each needed 28 KiB.

use core::fmt;
use core::ops::{Deref, DerefMut};

/// Nodes a description may have without `alloc` (two sockets of four NUMA nodes each, as
/// AMD's NPS4 mode presents them).
pub const FIXED_NODES: usize = 8;
/// Zones without `alloc`: every zone type of every node.
pub const FIXED_ZONES: usize = FIXED_NODES * crate::types::MAX_NR_ZONES;
/// Holes, and reservations, without `alloc`: a firmware map merged into its gaps and
/// reserved ranges (an e820 table has a few dozen entries, most of them usable RAM).
pub const FIXED_RANGES: usize = 32;
/// CPUs of an explicit CPU-to-node map without `alloc` (CPUs numbered node by node need
/// no map, and any number of them).
pub const FIXED_CPUS: usize = 256;

/// A table was full: it holds `capacity` entries without the `alloc` feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableFull {
    pub capacity: usize,
}

/// A growable table of at most `CAP` entries without `alloc`, unbounded with it. Reads as a
/// slice either way.
#[derive(Clone)]
pub struct Table<T, const CAP: usize> {
    #[cfg(feature = "alloc")]
    items: alloc::vec::Vec<T>,
    #[cfg(not(feature = "alloc"))]
    items: [T; CAP],
    #[cfg(not(feature = "alloc"))]
    len: usize,
}

impl<T: Default, const CAP: usize> Table<T, CAP> {
    /// An empty table. `T: Default` fills a fixed table's unused entries.
    ///
    /// ```
    /// use pagealloc::table::Table;
    /// let mut holes: Table<core::ops::Range<u64>, 2> = Table::new();
    /// holes.push(0..1).unwrap();
    /// holes.push(0xa0..0x100).unwrap();
    /// assert_eq!((holes.len(), holes[1].clone()), (2, 0xa0..0x100));
    /// // A third is `Err(TableFull { capacity: 2 })` without the alloc feature.
    /// ```
    pub fn new() -> Self {
        Table {
            #[cfg(feature = "alloc")]
            items: alloc::vec::Vec::new(),
            #[cfg(not(feature = "alloc"))]
            items: core::array::from_fn(|_| T::default()),
            #[cfg(not(feature = "alloc"))]
            len: 0,
        }
    }

    /// A table of `len` entries made by `init`.
    pub fn from_fn(len: usize, mut init: impl FnMut(usize) -> T) -> Result<Self, TableFull> {
        let mut table = Table::new();
        for index in 0..len {
            table.push(init(index))?;
        }
        Ok(table)
    }

    /// A table holding a copy of `items`.
    pub fn from_slice(items: &[T]) -> Result<Self, TableFull>
    where
        T: Clone,
    {
        Table::from_fn(items.len(), |index| items[index].clone())
    }

    /// Appends `item`; without `alloc`, fails when the table holds `CAP` entries already.
    pub fn push(&mut self, item: T) -> Result<(), TableFull> {
        #[cfg(feature = "alloc")]
        self.items.push(item);
        #[cfg(not(feature = "alloc"))]
        {
            let slot = self.items.get_mut(self.len).ok_or(TableFull { capacity: CAP })?;
            *slot = item;
            self.len += 1;
        }
        Ok(())
    }
}

impl<T: Default, const CAP: usize> Default for Table<T, CAP> {
    fn default() -> Self {
        Table::new()
    }
}

impl<T, const CAP: usize> Deref for Table<T, CAP> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        #[cfg(feature = "alloc")]
        return &self.items;
        #[cfg(not(feature = "alloc"))]
        return &self.items[..self.len];
    }
}

impl<T, const CAP: usize> DerefMut for Table<T, CAP> {
    fn deref_mut(&mut self) -> &mut [T] {
        #[cfg(feature = "alloc")]
        return &mut self.items;
        #[cfg(not(feature = "alloc"))]
        return &mut self.items[..self.len];
    }
}

/// Equal when the entries are: a fixed table's unused room does not count.
impl<T: PartialEq, const CAP: usize> PartialEq for Table<T, CAP> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Eq, const CAP: usize> Eq for Table<T, CAP> {}

impl<T: fmt::Debug, const CAP: usize> fmt::Debug for Table<T, CAP> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(feature = "alloc")]
impl<T, const CAP: usize> From<alloc::vec::Vec<T>> for Table<T, CAP> {
    fn from(items: alloc::vec::Vec<T>) -> Self {
        Table { items }
    }
}

impl<'a, T, const CAP: usize> IntoIterator for &'a Table<T, CAP> {
    type Item = &'a T;
    type IntoIter = core::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_the_slice_pushed() {
        let mut table: Table<u32, 4> = Table::new();
        for value in [3, 1, 2] {
            table.push(value).unwrap();
        }
        assert_eq!(&table[..], &[3, 1, 2]);
        table.sort_unstable();
        assert_eq!(table.iter().copied().max(), Some(3));
        assert_eq!(Table::<u32, 4>::from_fn(2, |i| i as u32 * 10).unwrap()[..], [0, 10]);
    }

    #[cfg(not(feature = "alloc"))]
    #[test]
    fn a_fixed_table_refuses_the_entry_past_its_capacity() {
        let mut table: Table<u8, 2> = Table::new();
        table.push(1).unwrap();
        table.push(2).unwrap();
        assert_eq!(table.push(3), Err(TableFull { capacity: 2 }));
        assert_eq!(&table[..], &[1, 2]);
    }

    #[cfg(feature = "alloc")]
    #[test]
    fn with_alloc_a_table_grows_past_its_fixed_capacity() {
        let table: Table<u8, 2> = Table::from_fn(100, |i| i as u8).unwrap();
        assert_eq!(table.len(), 100);
    }
}
