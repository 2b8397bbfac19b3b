//! What one cache (a CPU's L2 share or a socket's LLC) holds: an exact LRU set of entries
//! weighted by their size in bytes, so 4 KiB pages of data and 64-byte metadata lines compete
//! for the same capacity as they do in hardware.

use crate::cache_key::{CacheKey, KeyKind};
use crate::dense_table;
use crate::table_sizes::TableSizes;

const NIL: u32 = u32::MAX;

/// The smallest entry cached: a line. A cache holds at most its capacity over this.
pub(crate) const SMALLEST_ENTRY_BYTES: u64 = 64;

/// Where a cache finds an entry's node from its key: pages in an array indexed by pfn, lines
/// in one array per row (a kind of line of a zone) indexed by line number; one host memory
/// access instead of a map probe. Slots hold node + 1 (0: not resident), so growth fills
/// with zeros.
#[derive(Default)]
pub(crate) struct NodeIndex {
    pages: Vec<u32>,
    rows: Vec<Vec<u32>>,
}

impl NodeIndex {
    #[inline]
    pub(crate) fn get(&self, key: CacheKey) -> Option<u32> {
        self.get_with(&self.pages, key)
    }

    /// [`Self::get`] with pages found in `pages` instead of this index's own table.
    #[inline]
    pub(crate) fn get_with(&self, pages: &[u32], key: CacheKey) -> Option<u32> {
        let stored = match key.kind() {
            KeyKind::Page(pfn) => pages.get(pfn as usize).copied(),
            KeyKind::Line { row, number } => self.rows.get(row).and_then(|table| table.get(number)).copied(),
        };
        stored.filter(|&stored| stored != 0).map(|stored| stored - 1)
    }

    /// Sizes the tables for `sizes` at once.
    pub(crate) fn reserve(&mut self, sizes: &TableSizes) {
        dense_table::reserve(&mut self.pages, sizes.pages);
        self.reserve_lines(sizes);
    }

    /// Sizes the line rows only (for an index whose pages are kept elsewhere).
    pub(crate) fn reserve_lines(&mut self, sizes: &TableSizes) {
        dense_table::reserve_rows(&mut self.rows, &sizes.rows);
    }

    pub(crate) fn insert(&mut self, key: CacheKey, node: u32) {
        insert_in(&mut self.pages, &mut self.rows, key, node);
    }

    /// [`Self::insert`] with pages kept in `pages`.
    pub(crate) fn insert_with(&mut self, pages: &mut Vec<u32>, key: CacheKey, node: u32) {
        insert_in(pages, &mut self.rows, key, node);
    }

    pub(crate) fn remove(&mut self, key: CacheKey) -> Option<u32> {
        remove_in(&mut self.pages, &mut self.rows, key)
    }

    /// [`Self::remove`] with pages kept in `pages`.
    pub(crate) fn remove_with(&mut self, pages: &mut [u32], key: CacheKey) -> Option<u32> {
        remove_in(pages, &mut self.rows, key)
    }
}

fn insert_in(pages: &mut Vec<u32>, rows: &mut Vec<Vec<u32>>, key: CacheKey, node: u32) {
    match key.kind() {
        KeyKind::Page(pfn) => *dense_table::slot(pages, pfn as usize) = node + 1,
        KeyKind::Line { row, number } => *dense_table::row_slot(rows, row, number) = node + 1,
    }
}

fn remove_in(pages: &mut [u32], rows: &mut [Vec<u32>], key: CacheKey) -> Option<u32> {
    let slot = match key.kind() {
        KeyKind::Page(pfn) => pages.get_mut(pfn as usize),
        KeyKind::Line { row, number } => rows.get_mut(row).and_then(|table| table.get_mut(number)),
    };
    let stored = slot.map(core::mem::take).unwrap_or(0);
    stored.checked_sub(1)
}

/// Puts `node` in a free slot of `nodes` (the most recently freed first) or a new one at the
/// end; returns its index. Shared by the caches' node arenas.
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

struct Node {
    key: CacheKey,
    bytes: u32,
    prev: u32,
    next: u32,
}

/// An LRU set with O(1) touch (amortised: an insert evicts as many old entries as it needs
/// room).
pub struct CacheSet {
    capacity_bytes: u64,
    used_bytes: u64,
    entries: usize,
    /// Lines, and pages unless the caller keeps them (the `_sharing` methods).
    index: NodeIndex,
    nodes: Vec<Node>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    /// Nodes of evicted or invalidated entries, reused before growing.
    free: Vec<u32>,
}

impl CacheSet {
    pub fn new(capacity_bytes: u64) -> CacheSet {
        CacheSet {
            capacity_bytes: capacity_bytes.max(1),
            used_bytes: 0,
            entries: 0,
            index: NodeIndex::default(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            free: Vec::new(),
        }
    }

    /// Entries resident.
    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    fn unlink(&mut self, index: u32) {
        let (prev, next) = (self.nodes[index as usize].prev, self.nodes[index as usize].next);
        if prev == NIL {
            self.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, index: u32) {
        self.nodes[index as usize].prev = NIL;
        self.nodes[index as usize].next = self.head;
        if self.head != NIL {
            self.nodes[self.head as usize].prev = index;
        }
        self.head = index;
        if self.tail == NIL {
            self.tail = index;
        }
    }

    fn evict_tail(&mut self, pages: &mut [u32]) {
        let victim = self.tail;
        debug_assert_ne!(victim, NIL, "evicting from an empty cache");
        self.unlink(victim);
        let node = &self.nodes[victim as usize];
        self.used_bytes -= node.bytes as u64;
        let removed = self.index.remove_with(pages, node.key);
        debug_assert_eq!(removed, Some(victim), "index and list disagree");
        self.entries -= 1;
        self.free.push(victim);
    }

    /// Touches `key`, an entry of `bytes`: true if it was resident (a hit). Makes it the most
    /// recent either way, evicting the least recent entries until it fits.
    pub fn touch(&mut self, key: CacheKey, bytes: u32) -> bool {
        let mut pages = core::mem::take(&mut self.index.pages);
        let hit = self.touch_sharing(key, bytes, &mut pages);
        self.index.pages = pages;
        hit
    }

    /// [`Self::touch`] for a cache whose page nodes are kept in `pages` (indexed by pfn), a
    /// table it shares with caches that never hold a page at the same time as it.
    pub fn touch_sharing(&mut self, key: CacheKey, bytes: u32, pages: &mut Vec<u32>) -> bool {
        if let Some(index) = self.index.get_with(pages, key) {
            if index != self.head {
                self.unlink(index);
                self.push_front(index);
            }
            return true;
        }
        // Bounded: each round evicts one entry, and an entry never exceeds the capacity.
        let bytes = (bytes as u64).min(self.capacity_bytes);
        while self.used_bytes + bytes > self.capacity_bytes {
            self.evict_tail(pages);
        }
        let node = Node { key, bytes: bytes as u32, prev: NIL, next: NIL };
        let index = place_node(&mut self.nodes, &mut self.free, node);
        self.used_bytes += bytes;
        self.entries += 1;
        self.index.insert_with(pages, key, index);
        self.push_front(index);
        false
    }

    pub fn contains(&self, key: CacheKey) -> bool {
        self.index.get(key).is_some()
    }

    /// Sizes the line index for `sizes`, and the node arena for a cache full of lines, at
    /// once, for a cache whose page nodes are kept elsewhere (the `_sharing` methods).
    pub fn reserve_sharing(&mut self, sizes: &TableSizes) {
        self.index.reserve_lines(sizes);
        self.nodes.reserve((self.capacity_bytes / SMALLEST_ENTRY_BYTES) as usize);
    }

    /// Drops `key` if resident (another CPU took it exclusively); says whether it was.
    pub fn invalidate(&mut self, key: CacheKey) -> bool {
        let mut pages = core::mem::take(&mut self.index.pages);
        let dropped = self.invalidate_sharing(key, &mut pages);
        self.index.pages = pages;
        dropped
    }

    /// [`Self::invalidate`] with page nodes kept in `pages`.
    pub fn invalidate_sharing(&mut self, key: CacheKey, pages: &mut [u32]) -> bool {
        let Some(index) = self.index.remove_with(pages, key) else { return false };
        self.entries -= 1;
        self.unlink(index);
        self.used_bytes -= self.nodes[index as usize].bytes as u64;
        self.free.push(index);
        true
    }
}

#[cfg(test)]
mod tests {
    use pagealloc::platform::SharedLine;

    use super::*;
    use crate::MetadataLayout;

    fn page(pfn: u64) -> CacheKey {
        CacheKey::page(pfn)
    }

    fn line(line: SharedLine) -> CacheKey {
        CacheKey::line(line, MetadataLayout::LinuxStructPage)
    }

    #[test]
    fn evicts_least_recently_used() {
        let mut cache = CacheSet::new(3 * 4096);
        assert!(!cache.touch(page(1), 4096));
        assert!(!cache.touch(page(2), 4096));
        assert!(!cache.touch(page(3), 4096));
        assert!(cache.touch(page(1), 4096), "1 is resident and becomes most recent");
        assert!(!cache.touch(page(4), 4096), "evicts 2, the least recent");
        assert!(!cache.contains(page(2)));
        assert!(cache.contains(page(1)) && cache.contains(page(3)) && cache.contains(page(4)));
        assert_eq!(cache.len(), 3);
        assert!(cache.invalidate(page(3)));
        assert!(!cache.invalidate(page(3)), "already gone");
        assert!(!cache.contains(page(3)));
        assert!(!cache.touch(page(5), 4096), "reuses the invalidated room, evicting nothing");
        assert!(cache.contains(page(1)) && cache.contains(page(4)) && cache.contains(page(5)));
        assert_eq!((cache.len(), cache.used_bytes()), (3, 3 * 4096));
    }

    #[test]
    fn entries_compete_by_size() {
        let (meta_1, counters) = (line(SharedLine::frame_meta(0, 1)), line(SharedLine::ZoneCounters(0)));
        let meta_3 = line(SharedLine::frame_meta(1, 3));
        let mut cache = CacheSet::new(4096 + 2 * 64);
        cache.touch(meta_1, 64);
        cache.touch(counters, 64);
        cache.touch(page(10), 4096);
        assert_eq!(cache.used_bytes(), 4096 + 128, "exactly full");
        assert!(!cache.touch(meta_3, 64), "a new line evicts the least recent line only");
        assert!(!cache.contains(meta_1) && cache.contains(counters) && cache.contains(page(10)));
        assert!(!cache.touch(page(11), 4096), "a page needs room: the page and a line go");
        assert!(!cache.contains(page(10)) && !cache.contains(counters));
        assert!(cache.contains(meta_3) && cache.contains(page(11)));
        assert_eq!((cache.len(), cache.used_bytes()), (2, 4096 + 64));
    }

    #[test]
    fn caches_sharing_a_page_table_answer_as_caches_with_their_own() {
        // Pages move between three caches as touch_pages moves them: a touch from another
        // cache first drops the copy of the last toucher's, so no page is in two at once.
        let (mut own, mut shared) = ([0; 3].map(|_| CacheSet::new(8 * 4096)), [0; 3].map(|_| CacheSet::new(8 * 4096)));
        let mut pages: Vec<u32> = Vec::new();
        let mut last_toucher: std::collections::HashMap<CacheKey, usize> = std::collections::HashMap::new();
        let mut rng = crate::rng::SplitMix64::new(5);
        let mut hits = 0;
        for step in 0..20_000 {
            let (cache, key) = (rng.below(3) as usize, page(rng.below(40)));
            if let Some(&last) = last_toucher.get(&key) {
                if last != cache {
                    assert_eq!(own[last].invalidate(key), shared[last].invalidate_sharing(key, &mut pages));
                }
            }
            last_toucher.insert(key, cache);
            // Lines, in a cache's own rows either way, evict pages too.
            let meta = line(SharedLine::frame_meta(0, rng.below(64) as u32));
            assert_eq!(own[cache].touch(meta, 64), shared[cache].touch_sharing(meta, 64, &mut pages), "step {step}");
            let hit = own[cache].touch(key, 4096);
            assert_eq!(hit, shared[cache].touch_sharing(key, 4096, &mut pages), "step {step}");
            hits += usize::from(hit);
        }
        assert!(hits > 1_000 && hits < 19_000, "hits and misses both ({hits})");
    }
}
