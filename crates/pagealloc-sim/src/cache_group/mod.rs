//! The caches of one level, kept together: the private L2 shares of all CPUs, or the LLC
//! instances of all sockets and dies. One node arena, one exact LRU list per cache weighted
//! by bytes, so 4 KiB pages of data and 64-byte metadata lines compete for the same capacity
//! as they do in hardware, and per key a chain of the nodes holding it, one per cache.
//! Finding whether a cache holds a line, or which caches do, is a walk of that short chain
//! from one array indexed by pfn or line number, not a probe of a hash table per cache: the
//! simulator's hottest lookup, at millions of lines, and one table however many caches.

use crate::cache_key::CacheKey;
use crate::node_index::{place_node, NodeIndex, SMALLEST_ENTRY_BYTES};

const NIL: u32 = u32::MAX;
const _: () = assert!(core::mem::size_of::<Node>() == 24);

/// 24 bytes: millions of them at hundreds of CPUs, so a narrower node is fewer host misses.
struct Node {
    key: CacheKey,
    /// An entry is a line or a page: 64 KiB at most.
    bytes: u16,
    cache: u16,
    /// LRU neighbours on `cache`'s list.
    prev: u32,
    next: u32,
    /// Next node holding the same key (another cache's copy).
    next_holder: u32,
}

/// One cache's LRU list.
struct Lru {
    capacity_bytes: u64,
    used_bytes: u64,
    entries: usize,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
}

pub struct CacheGroup {
    nodes: Vec<Node>,
    lists: Vec<Lru>,
    /// First node of each key's holder chain.
    holders: NodeIndex,
    /// Nodes of evicted or invalidated entries, reused before growing.
    free: Vec<u32>,
}

impl CacheGroup {
    /// `caches` caches of `capacity_bytes` each.
    pub fn new(caches: usize, capacity_bytes: u64) -> CacheGroup {
        assert!(caches <= u16::MAX as usize);
        let list = || Lru { capacity_bytes: capacity_bytes.max(1), used_bytes: 0, entries: 0, head: NIL, tail: NIL };
        CacheGroup {
            nodes: Vec::new(),
            lists: (0..caches).map(|_| list()).collect(),
            holders: NodeIndex::default(),
            free: Vec::new(),
        }
    }

    /// Sizes the holder index for `sizes`, and the node arena for every cache full of
    /// lines, at once.
    pub fn reserve(&mut self, sizes: &crate::table_sizes::TableSizes) {
        self.holders.reserve(sizes);
        let most_nodes: u64 = self.lists.iter().map(|list| list.capacity_bytes / SMALLEST_ENTRY_BYTES).sum();
        self.nodes.reserve(most_nodes as usize);
    }

    /// Entries resident in `cache`'s cache.
    pub fn len(&self, cache: usize) -> usize {
        self.lists[cache].entries
    }

    pub fn used_bytes(&self, cache: usize) -> u64 {
        self.lists[cache].used_bytes
    }

    /// `cache`'s node for `key`, if it holds it.
    fn find(&self, cache: usize, key: CacheKey) -> Option<u32> {
        let mut node = self.holders.get(key)?;
        // Bounded: a chain has one node per cache at most.
        for _ in 0..self.lists.len() {
            if self.nodes[node as usize].cache as usize == cache {
                return Some(node);
            }
            node = self.nodes[node as usize].next_holder;
            if node == NIL {
                return None;
            }
        }
        unreachable!("holder chain of {key:?} longer than the cache count");
    }

    pub fn contains(&self, cache: usize, key: CacheKey) -> bool {
        self.find(cache, key).is_some()
    }

    /// The caches other than `cache` holding `key`, in chain order (callers needing an order pick
    /// it themselves).
    pub fn other_holders(&self, cache: usize, key: CacheKey, mut each: impl FnMut(usize)) {
        let mut node = self.holders.get(key).unwrap_or(NIL);
        while node != NIL {
            let holder = self.nodes[node as usize].cache as usize;
            if holder != cache {
                each(holder);
            }
            node = self.nodes[node as usize].next_holder;
        }
    }

    /// Touches `key`, an entry of `bytes`, in `cache`'s cache: true if it was resident (a hit).
    /// Makes it the most recent either way, evicting the least recent entries until it fits.
    pub fn touch(&mut self, cache: usize, key: CacheKey, bytes: u32) -> bool {
        if let Some(node) = self.find(cache, key) {
            self.make_most_recent(node);
            return true;
        }
        let head = self.holders.get(key).unwrap_or(NIL);
        self.insert(cache, key, bytes, head);
        false
    }

    /// `touch`, and every other cache holding `key` passed to `each`, its copy dropped when
    /// `write` (as `invalidate_others`): one walk of the key's holders. The same caches
    /// result as `touch` then `invalidate_others` or `other_holders`.
    pub fn touch_visiting_others(
        &mut self,
        cache: usize,
        key: CacheKey,
        bytes: u32,
        write: bool,
        mut each: impl FnMut(usize),
    ) -> bool {
        let (first, mine) = self.walk_holders(cache, key, write, &mut each);
        if mine != NIL {
            self.make_most_recent(mine);
            return true;
        }
        let head = if write { NIL } else { first };
        self.insert(cache, key, bytes, head);
        false
    }

    /// Puts `key` in `cache`'s cache as its most recent entry, at the front of the key's
    /// holder chain (whose head is `head`), evicting the least recent entries until it fits.
    fn insert(&mut self, cache: usize, key: CacheKey, bytes: u32, head: u32) {
        let list = &self.lists[cache];
        let bytes = (bytes as u64).min(list.capacity_bytes);
        // Bounded: each round evicts one entry, and an entry never exceeds the capacity.
        while self.lists[cache].used_bytes + bytes > self.lists[cache].capacity_bytes {
            let victim = self.lists[cache].tail;
            debug_assert_ne!(victim, NIL, "evicting from an empty cache");
            // Never of this key's chain: `cache` holds no node of `key`.
            self.remove(victim);
        }
        let bytes_u16 = u16::try_from(bytes).expect("a cache entry is at most 64 KiB");
        let node = Node { key, bytes: bytes_u16, cache: cache as u16, prev: NIL, next: NIL, next_holder: head };
        let index = place_node(&mut self.nodes, &mut self.free, node);
        self.holders.insert(key, index);
        let list = &mut self.lists[cache];
        list.used_bytes += bytes;
        list.entries += 1;
        self.push_front(index);
    }

    /// Drops `key` from `cache`'s cache if resident; says whether it was.
    pub fn invalidate(&mut self, cache: usize, key: CacheKey) -> bool {
        let Some(node) = self.find(cache, key) else { return false };
        self.remove(node);
        true
    }

    /// Drops `key` from every cache but `cache`'s, calling `each` with every cache that held it:
    /// one walk of the holder chain, where an invalidation per holder would walk it once each.
    pub fn invalidate_others(&mut self, cache: usize, key: CacheKey, mut each: impl FnMut(usize)) {
        self.walk_holders(cache, key, true, &mut each);
    }

    /// Calls `each` with every cache but `cache` holding `key`, dropping their copies when
    /// `drop_others` (then only `cache`'s node, if any, is left of the chain). Returns the
    /// chain's head before the walk and `cache`'s node (`NIL` for none).
    fn walk_holders(
        &mut self,
        cache: usize,
        key: CacheKey,
        drop_others: bool,
        each: &mut impl FnMut(usize),
    ) -> (u32, u32) {
        let first = self.holders.get(key).unwrap_or(NIL);
        let mut mine = NIL;
        let mut node = first;
        // Bounded: a chain holds at most one node per cache.
        while node != NIL {
            let Node { cache: holder, next_holder, .. } = self.nodes[node as usize];
            if holder as usize == cache {
                mine = node;
            } else {
                each(holder as usize);
                if drop_others {
                    self.release(node);
                }
            }
            node = next_holder;
        }
        if drop_others && first != NIL {
            if mine != NIL {
                self.nodes[mine as usize].next_holder = NIL;
            }
            if mine != first {
                self.holders.remove(key);
                if mine != NIL {
                    self.holders.insert(key, mine);
                }
            }
        }
        (first, mine)
    }

    /// Takes `node` out of its LRU list and its holder chain and frees it.
    fn remove(&mut self, node: u32) {
        let Node { key, next_holder, .. } = self.nodes[node as usize];
        let first = self.holders.get(key).expect("a resident key has holders");
        if first == node {
            self.holders.remove(key);
            if next_holder != NIL {
                self.holders.insert(key, next_holder);
            }
        } else {
            let mut previous = first;
            // Bounded: the node is on this chain, at most one node per cache before it.
            while self.nodes[previous as usize].next_holder != node {
                previous = self.nodes[previous as usize].next_holder;
                debug_assert_ne!(previous, NIL, "node missing from its holder chain");
            }
            self.nodes[previous as usize].next_holder = next_holder;
        }
        self.release(node);
    }

    /// Takes `node` out of its cache's LRU list and accounting and frees it (its holder chain
    /// is the caller's business).
    fn release(&mut self, node: u32) {
        self.unlink_lru(node);
        let Node { bytes, cache, .. } = self.nodes[node as usize];
        let list = &mut self.lists[cache as usize];
        list.used_bytes -= bytes as u64;
        list.entries -= 1;
        self.free.push(node);
    }

    /// Moves a resident node to the front of its cache's list (nothing to do if it is there).
    #[inline]
    fn make_most_recent(&mut self, index: u32) {
        let cache = self.nodes[index as usize].cache as usize;
        if self.lists[cache].head != index {
            self.unlink_lru(index);
            self.push_front(index);
        }
    }

    fn unlink_lru(&mut self, index: u32) {
        let Node { prev, next, cache, .. } = self.nodes[index as usize];
        if prev == NIL {
            self.lists[cache as usize].head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            self.lists[cache as usize].tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, index: u32) {
        let cache = self.nodes[index as usize].cache as usize;
        let head = self.lists[cache].head;
        self.nodes[index as usize].prev = NIL;
        self.nodes[index as usize].next = head;
        if head != NIL {
            self.nodes[head as usize].prev = index;
        }
        let list = &mut self.lists[cache];
        list.head = index;
        if list.tail == NIL {
            list.tail = index;
        }
    }
}

#[cfg(test)]
mod tests;
