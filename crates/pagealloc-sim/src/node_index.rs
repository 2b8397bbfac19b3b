//! Where a group of caches finds the nodes holding a key: pages in an array indexed by pfn,
//! lines in one array per row (a kind of line of a zone) indexed by line number; one host
//! memory access instead of a map probe.

use crate::cache_key::{CacheKey, KeyKind};
use crate::dense_table;
use crate::table_sizes::TableSizes;

/// The smallest entry cached: a line. A cache holds at most its capacity over this.
pub(crate) const SMALLEST_ENTRY_BYTES: u64 = 64;

/// A node per key. Slots hold node + 1 (0: none), so growth fills with zeros.
#[derive(Default)]
pub(crate) struct NodeIndex {
    pages: Vec<u32>,
    rows: Vec<Vec<u32>>,
}

impl NodeIndex {
    #[inline]
    pub(crate) fn get(&self, key: CacheKey) -> Option<u32> {
        let stored = match key.kind() {
            KeyKind::Page(pfn) => self.pages.get(pfn as usize).copied(),
            KeyKind::Line { row, number } => self.rows.get(row).and_then(|table| table.get(number)).copied(),
        };
        stored.filter(|&stored| stored != 0).map(|stored| stored - 1)
    }

    /// Sizes the tables for `sizes` at once.
    pub(crate) fn reserve(&mut self, sizes: &TableSizes) {
        dense_table::reserve(&mut self.pages, sizes.pages);
        dense_table::reserve_rows(&mut self.rows, &sizes.rows);
    }

    pub(crate) fn insert(&mut self, key: CacheKey, node: u32) {
        match key.kind() {
            KeyKind::Page(pfn) => *dense_table::slot(&mut self.pages, pfn as usize) = node + 1,
            KeyKind::Line { row, number } => *dense_table::row_slot(&mut self.rows, row, number) = node + 1,
        }
    }

    pub(crate) fn remove(&mut self, key: CacheKey) -> Option<u32> {
        let slot = match key.kind() {
            KeyKind::Page(pfn) => self.pages.get_mut(pfn as usize),
            KeyKind::Line { row, number } => self.rows.get_mut(row).and_then(|table| table.get_mut(number)),
        };
        let stored = slot.map(core::mem::take).unwrap_or(0);
        stored.checked_sub(1)
    }
}

/// Puts `node` in a free slot of `nodes` (the most recently freed first) or a new one at the
/// end; returns its index.
pub(crate) fn place_node<T>(nodes: &mut Vec<T>, free: &mut Vec<u32>, node: T) -> u32 {
    match free.pop() {
        Some(index) => {
            nodes[index as usize] = node;
            index
        }
        None => {
            nodes.push(node);
            (nodes.len() - 1) as u32
        }
    }
}
