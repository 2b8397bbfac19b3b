//! A reference model of one cache for the tests of [`crate::cache_group::CacheGroup`]: an
//! exact LRU set of entries weighted by their size in bytes, kept the plainest way (entries
//! by key, and by the time of their last touch), with nothing shared with the group's code.

use std::collections::{BTreeMap, HashMap};

use crate::cache_key::CacheKey;

pub struct CacheSet {
    capacity_bytes: u64,
    used_bytes: u64,
    /// Each resident key's (last touch, bytes).
    entries: HashMap<CacheKey, (u64, u64)>,
    /// Resident keys by last touch, the least recent first.
    by_touch: BTreeMap<u64, CacheKey>,
    touches: u64,
}

impl CacheSet {
    pub fn new(capacity_bytes: u64) -> CacheSet {
        CacheSet {
            capacity_bytes: capacity_bytes.max(1),
            used_bytes: 0,
            entries: HashMap::new(),
            by_touch: BTreeMap::new(),
            touches: 0,
        }
    }

    /// Entries resident.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// Touches `key`, an entry of `bytes`: true if it was resident (a hit). Makes it the most
    /// recent either way, evicting the least recent entries until it fits.
    pub fn touch(&mut self, key: CacheKey, bytes: u32) -> bool {
        self.touches += 1;
        if let Some((touched, _)) = self.entries.get_mut(&key) {
            self.by_touch.remove(touched);
            *touched = self.touches;
            self.by_touch.insert(self.touches, key);
            return true;
        }
        let bytes = u64::from(bytes).min(self.capacity_bytes);
        while self.used_bytes + bytes > self.capacity_bytes {
            let (_, victim) = self.by_touch.pop_first().expect("a cache over capacity holds entries");
            let (_, victim_bytes) = self.entries.remove(&victim).expect("both maps hold every entry");
            self.used_bytes -= victim_bytes;
        }
        self.entries.insert(key, (self.touches, bytes));
        self.by_touch.insert(self.touches, key);
        self.used_bytes += bytes;
        false
    }

    pub fn contains(&self, key: CacheKey) -> bool {
        self.entries.contains_key(&key)
    }

    /// Drops `key` if resident; says whether it was.
    pub fn invalidate(&mut self, key: CacheKey) -> bool {
        let Some((touched, bytes)) = self.entries.remove(&key) else { return false };
        self.by_touch.remove(&touched);
        self.used_bytes -= bytes;
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
}
