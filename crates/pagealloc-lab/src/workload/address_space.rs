//! The shared address space of page_fault1's thread mode, as far as its VMAs go: every
//! thread maps a region of one size, placed top-down in the first gap that fits (as
//! get_unmapped_area()'s top-down search finds it: the hole a region left is the first
//! to fit the next), and adjacent anonymous regions of the same protection merge into one
//! VMA (vma_merge() on mmap). Regions of one VMA share its lock, whose word every fault
//! takes and drops (vma_start_read(), vma_end_read()).

/// Region slots from the top of the address space down; `true` where a region is mapped.
#[derive(Debug, Default)]
pub struct AddressSpace {
    mapped: Vec<bool>,
}

impl AddressSpace {
    /// Maps a region in the highest free slot; returns the slot.
    pub fn map(&mut self) -> usize {
        let slot = self.mapped.iter().position(|&taken| !taken).unwrap_or(self.mapped.len());
        if slot == self.mapped.len() {
            self.mapped.push(false);
        }
        debug_assert!(!self.mapped[slot]);
        self.mapped[slot] = true;
        slot
    }

    /// Unmaps the region of `slot`.
    pub fn unmap(&mut self, slot: usize) {
        assert!(self.mapped.get(slot) == Some(&true), "slot {slot} is not mapped");
        self.mapped[slot] = false;
    }

    /// The VMA holding `slot`'s region, named by its highest slot: a run of adjacent mapped
    /// slots is one VMA.
    pub fn vma_of(&self, slot: usize) -> usize {
        debug_assert!(self.mapped[slot]);
        let above = self.mapped[..slot].iter().rposition(|&taken| !taken);
        above.map_or(0, |free| free + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_regions_share_a_vma_until_one_between_them_goes() {
        let mut space = AddressSpace::default();
        let (a, b, c) = (space.map(), space.map(), space.map());
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!([space.vma_of(a), space.vma_of(b), space.vma_of(c)], [0, 0, 0], "one VMA of three regions");
        space.unmap(b);
        assert_eq!((space.vma_of(a), space.vma_of(c)), (0, 2), "split in two");
        assert_eq!(space.map(), 1, "the hole is the first gap that fits");
        assert_eq!(space.vma_of(c), 0, "merged again");
    }

    #[test]
    #[should_panic(expected = "not mapped")]
    fn unmapping_a_free_slot_is_a_bug() {
        AddressSpace::default().unmap(0);
    }
}
