//! What one cache (a CPU's L2 share or a socket's LLC) holds: an exact LRU set of entries
//! weighted by their size in bytes, so 4 KiB pages of data and 64-byte metadata lines compete
//! for the same capacity as they do in hardware.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::DeterministicHasher;

const NIL: u32 = u32::MAX;

struct Node {
    key: u64,
    bytes: u32,
    prev: u32,
    next: u32,
}

/// An LRU set with O(1) touch (amortised: an insert evicts as many old entries as it needs
/// room). Keys are chosen by the caller; the platform keeps pages and lines apart by a tag
/// bit.
pub struct CacheSet {
    capacity_bytes: u64,
    used_bytes: u64,
    slots: HashMap<u64, u32, BuildHasherDefault<DeterministicHasher>>,
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
            slots: HashMap::default(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            free: Vec::new(),
        }
    }

    /// Entries resident.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
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

    fn evict_tail(&mut self) {
        let victim = self.tail;
        debug_assert_ne!(victim, NIL, "evicting from an empty cache");
        self.unlink(victim);
        let node = &self.nodes[victim as usize];
        self.used_bytes -= node.bytes as u64;
        self.slots.remove(&node.key);
        self.free.push(victim);
    }

    /// Touches `key`, an entry of `bytes`: true if it was resident (a hit). Makes it the most
    /// recent either way, evicting the least recent entries until it fits.
    pub fn touch(&mut self, key: u64, bytes: u32) -> bool {
        if let Some(&index) = self.slots.get(&key) {
            self.unlink(index);
            self.push_front(index);
            return true;
        }
        // Bounded: each round evicts one entry, and an entry never exceeds the capacity.
        let bytes = (bytes as u64).min(self.capacity_bytes);
        while self.used_bytes + bytes > self.capacity_bytes {
            self.evict_tail();
        }
        let node = Node { key, bytes: bytes as u32, prev: NIL, next: NIL };
        let index = match self.free.pop() {
            Some(index) => {
                self.nodes[index as usize] = node;
                index
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.used_bytes += bytes;
        self.slots.insert(key, index);
        self.push_front(index);
        false
    }

    pub fn contains(&self, key: u64) -> bool {
        self.slots.contains_key(&key)
    }

    /// Drops `key` if resident (another CPU took it exclusively); says whether it was.
    pub fn invalidate(&mut self, key: u64) -> bool {
        let Some(index) = self.slots.remove(&key) else { return false };
        self.unlink(index);
        self.used_bytes -= self.nodes[index as usize].bytes as u64;
        self.free.push(index);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut cache = CacheSet::new(3 * 4096);
        assert!(!cache.touch(1, 4096));
        assert!(!cache.touch(2, 4096));
        assert!(!cache.touch(3, 4096));
        assert!(cache.touch(1, 4096), "1 is resident and becomes most recent");
        assert!(!cache.touch(4, 4096), "evicts 2, the least recent");
        assert!(!cache.contains(2));
        assert!(cache.contains(1) && cache.contains(3) && cache.contains(4));
        assert_eq!(cache.len(), 3);
        cache.invalidate(3);
        assert!(!cache.contains(3));
        assert!(!cache.touch(5, 4096), "reuses the invalidated room, evicting nothing");
        assert!(cache.contains(1) && cache.contains(4) && cache.contains(5));
        assert_eq!((cache.len(), cache.used_bytes()), (3, 3 * 4096));
    }

    #[test]
    fn entries_compete_by_size() {
        let mut cache = CacheSet::new(4096 + 2 * 64);
        cache.touch(1, 64);
        cache.touch(2, 64);
        cache.touch(10, 4096);
        assert_eq!(cache.used_bytes(), 4096 + 128, "exactly full");
        assert!(!cache.touch(3, 64), "a new line evicts the least recent line only");
        assert!(!cache.contains(1) && cache.contains(2) && cache.contains(10));
        assert!(!cache.touch(11, 4096), "a page needs room: the page and a line go");
        assert!(!cache.contains(10) && !cache.contains(2) && cache.contains(3) && cache.contains(11));
        assert_eq!(cache.used_bytes(), 4096 + 64);
    }
}
