//! Frame-by-frame bookkeeping shared by both targets' independent models: a zone's frames as
//! flags (managed, handed out), against which each block the allocator returns is checked.

use pagealloc::types::Pfn;
use pagealloc::Block;

/// Marks the frames of `block` as handed out in the flags of a zone starting at `span_start`,
/// panicking if one of them is not managed or is handed out already.
pub fn mark_taken(block: &Block, span_start: Pfn, managed: &[bool], taken: &mut [bool]) {
    let first = (block.pfn() - span_start) as usize;
    for i in first..first + block.pages() as usize {
        assert!(managed[i], "{block:?}: pfn {:#x} is not managed", span_start + i as u64);
        assert!(!taken[i], "{block:?}: pfn {:#x} handed out twice", span_start + i as u64);
        taken[i] = true;
    }
}

/// How many flags are set.
pub fn count(flags: &[bool]) -> u64 {
    flags.iter().filter(|&&flag| flag).count() as u64
}
