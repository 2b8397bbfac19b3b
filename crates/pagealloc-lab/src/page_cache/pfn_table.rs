//! A map from page frame number to a small value, dense in chunks of 512 frames (2 MiB),
//! each allocated when a frame in it is first written. Lookups index, never hash: a hash
//! map that a page cache churns through in FIFO order fills with deleted slots, and its
//! lookups then probe far.

use pagealloc::Pfn;

const CHUNK_SHIFT: u32 = 9;
const CHUNK_FRAMES: usize = 1 << CHUNK_SHIFT;

pub struct PfnTable<T> {
    chunks: Vec<Option<Box<[Option<T>]>>>,
    len: usize,
}

impl<T> Default for PfnTable<T> {
    fn default() -> Self {
        PfnTable { chunks: Vec::new(), len: 0 }
    }
}

/// (chunk, index in chunk) of `pfn`.
fn split(pfn: Pfn) -> (usize, usize) {
    let chunk = usize::try_from(pfn >> CHUNK_SHIFT).expect("a pfn's chunk fits a usize");
    (chunk, (pfn as usize) & (CHUNK_FRAMES - 1))
}

impl<T> PfnTable<T> {
    /// Sets `pfn`'s value, returning the one it replaces.
    pub fn insert(&mut self, pfn: Pfn, value: T) -> Option<T> {
        let (chunk, index) = split(pfn);
        if self.chunks.len() <= chunk {
            self.chunks.resize_with(chunk + 1, || None);
        }
        let slots = self.chunks[chunk].get_or_insert_with(|| (0..CHUNK_FRAMES).map(|_| None).collect());
        let old = slots[index].replace(value);
        self.len += usize::from(old.is_none());
        old
    }

    pub fn get(&self, pfn: Pfn) -> Option<&T> {
        let (chunk, index) = split(pfn);
        self.chunks.get(chunk)?.as_ref()?[index].as_ref()
    }

    pub fn contains(&self, pfn: Pfn) -> bool {
        self.get(pfn).is_some()
    }

    pub fn remove(&mut self, pfn: Pfn) -> Option<T> {
        let (chunk, index) = split(pfn);
        let old = self.chunks.get_mut(chunk)?.as_mut()?[index].take();
        self.len -= usize::from(old.is_some());
        old
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Takes out every value, in pfn order.
    pub fn drain_in_pfn_order(&mut self) -> Vec<T> {
        let values: Vec<T> = self.chunks.drain(..).flatten().flat_map(|slots| slots.into_vec()).flatten().collect();
        assert_eq!(values.len(), self.len, "the count matches the occupied slots");
        self.len = 0;
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_agrees_with_a_map_under_random_operations() {
        let mut table = PfnTable::<u64>::default();
        let mut model = std::collections::BTreeMap::new();
        let mut state = 7u64;
        for step in 0..20_000u64 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            // Pfns in a few far-apart chunks, so chunks are both shared and sparse.
            let pfn = (state >> 33) % 3_000 + ((state >> 20) % 3) * 1_000_000;
            match state % 3 {
                0 => assert_eq!(table.insert(pfn, step), model.insert(pfn, step)),
                1 => assert_eq!(table.remove(pfn), model.remove(&pfn)),
                _ => assert_eq!(table.get(pfn), model.get(&pfn)),
            }
            assert_eq!(table.len(), model.len());
        }
        let in_order: Vec<u64> = model.values().copied().collect();
        assert_eq!(table.drain_in_pfn_order(), in_order);
        assert!(table.len() == 0 && table.get(5).is_none());
    }
}
