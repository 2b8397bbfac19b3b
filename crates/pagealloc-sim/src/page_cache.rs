//! Which pages' data sit in one cache (a CPU's L2 share or a socket's LLC): an exact LRU set
//! of page frame numbers.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::DeterministicHasher;

const NIL: u32 = u32::MAX;

struct Node {
    pfn: u64,
    prev: u32,
    next: u32,
}

/// An LRU set with O(1) touch. Capacity is in pages.
pub struct PageCache {
    capacity: usize,
    slots: HashMap<u64, u32, BuildHasherDefault<DeterministicHasher>>,
    nodes: Vec<Node>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    /// Nodes of invalidated pages, reused before evicting.
    free: Vec<u32>,
}

impl PageCache {
    pub fn new(capacity_pages: usize) -> PageCache {
        PageCache {
            capacity: capacity_pages.max(1),
            slots: HashMap::default(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            free: Vec::new(),
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
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

    /// Touches `pfn`: true if it was resident (a hit). Inserts it as most recent either way,
    /// evicting the least recent page when full.
    pub fn touch(&mut self, pfn: u64) -> bool {
        if let Some(&index) = self.slots.get(&pfn) {
            self.unlink(index);
            self.push_front(index);
            return true;
        }
        let index = if let Some(index) = self.free.pop() {
            self.nodes[index as usize].pfn = pfn;
            index
        } else if self.slots.len() < self.capacity {
            self.nodes.push(Node { pfn, prev: NIL, next: NIL });
            (self.nodes.len() - 1) as u32
        } else {
            let victim = self.tail;
            self.unlink(victim);
            let old = self.nodes[victim as usize].pfn;
            self.slots.remove(&old);
            self.nodes[victim as usize].pfn = pfn;
            victim
        };
        self.slots.insert(pfn, index);
        self.push_front(index);
        false
    }

    pub fn contains(&self, pfn: u64) -> bool {
        self.slots.contains_key(&pfn)
    }

    /// Drops `pfn` if resident (another CPU took the page exclusively).
    pub fn invalidate(&mut self, pfn: u64) {
        if let Some(index) = self.slots.remove(&pfn) {
            // Off the recency list, so eviction never sees it; reused by the next insert.
            self.unlink(index);
            self.free.push(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut cache = PageCache::new(3);
        assert!(!cache.touch(1));
        assert!(!cache.touch(2));
        assert!(!cache.touch(3));
        assert!(cache.touch(1), "1 is resident and becomes most recent");
        assert!(!cache.touch(4), "evicts 2, the least recent");
        assert!(!cache.contains(2));
        assert!(cache.contains(1) && cache.contains(3) && cache.contains(4));
        assert_eq!(cache.len(), 3);
        cache.invalidate(3);
        assert!(!cache.contains(3));
        assert!(!cache.touch(5), "reuses the invalidated slot, evicting nothing");
        assert!(cache.contains(1) && cache.contains(4) && cache.contains(5));
        assert_eq!(cache.len(), 3);
    }
}
