//! Frees handed to a zone's owner (beyond Linux; `DrainBeyondLinux::hand_remote_frees`, the
//! `pagealloc` preset with per-CPU arenas). A CPU freeing pages into another CPU's arena
//! batches them on its buddy-bound list as before, but instead of taking that arena's zone
//! lock to merge them, where the owner's free lists, counters and recently written records
//! would cross to its cache line by line, it pushes the batch onto the zone's lock-free stack
//! with one compare-and-swap. Whoever takes the zone lock next, usually the owner on its
//! own next flush or refill, releases the stack into the buddy in that hold
//! (`LockedZone::release_remote_frees`). The idea of mimalloc's delayed frees and
//! snmalloc's remote queues.
//!
//! The stack is a Treiber stack of chains: batches linked through their frames' `next`
//! links, the head an index (NIL when empty). Pushes compare-and-swap the head (safe against
//! ABA: a push only needs its tail to point at the head it replaced); the taker swaps in NIL
//! and owns the whole chain. Pages pending here are out of the buddy, like a pageset's
//! (Linux counts neither as free), and counted in `pending_pages`, which the allocator's
//! counters report with the pagesets' pages and which bounds them: a push
//! that finds a batch's worth pending releases the stack itself under the lock, so an idle
//! owner cannot strand pages. The allocator's periodic work, `drain_all`, kswapd before it
//! judges a node's balance, and a request about to fail release it too.
//!
//! Generic over the atomic word so that `tests/loom_remote_frees.rs` runs this code on
//! loom's atomics.

use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};

use core::sync::atomic::AtomicU32;

use crate::frame::{FrameLinks, NIL};
use crate::growable::GrowableTable;
use crate::platform::AtomicWord;

/// The links a chain runs through: a frame's `next` word, by frame index.
pub trait ChainLinks {
    type Word: AtomicWord;
    fn next(&self, index: u32) -> &Self::Word;
}

/// A chain of blocks to hand over: `head` to `tail` through their `next` links (the tail's
/// is overwritten by the push), `pages` pages in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    pub head: u32,
    pub tail: u32,
    pub pages: u32,
}

/// A zone's stack of handed-over frees.
#[derive(Debug)]
pub struct RemoteFrees<A> {
    head: A,
    pending_pages: A,
}

impl<A: AtomicWord> Default for RemoteFrees<A> {
    fn default() -> Self {
        RemoteFrees { head: A::new_word(NIL), pending_pages: A::new_word(0) }
    }
}

impl<A: AtomicWord> RemoteFrees<A> {
    /// Pushes `chain`; returns the pages pending with it. Counted before the chain is
    /// visible, so a take never releases pages not yet counted and the count never wraps.
    pub fn push(&self, chain: Chain, links: &impl ChainLinks<Word = A>) -> u32 {
        debug_assert!(chain.head != NIL && chain.tail != NIL && chain.pages > 0);
        #[cfg(debug_assertions)]
        debug_assert_chain(chain, links);
        let pending = self.pending_pages.fetch_add(chain.pages, Relaxed).wrapping_add(chain.pages);
        // Releases subtract only pages counted before their chains were visible: no wrap.
        debug_assert!(pending >= chain.pages, "pending pages wrapped");
        let mut head = self.head.load(Relaxed);
        loop {
            links.next(chain.tail).store(head, Relaxed);
            // Release: the taker's Acquire sees the chain's links and records.
            match self.head.compare_exchange(head, chain.head, Release, Relaxed) {
                Ok(_) => return pending,
                Err(current) => head = current,
            }
        }
    }

    /// Whether a chain is pushed: one load, for the zone lock's fast check.
    #[inline(always)]
    pub fn is_pending(&self) -> bool {
        self.head.load(Relaxed) != NIL
    }

    /// Takes every pushed chain: the first block's index, the rest through `next` links
    /// ending in NIL. The caller returns the pages it releases with [`Self::released`].
    pub fn take(&self) -> Option<u32> {
        // Acquire: the pushes' Release, so the chains' links and records are visible.
        let head = self.head.swap(NIL, Acquire);
        (head != NIL).then_some(head)
    }

    /// The first pushed block, leaving the chains in place: for a walker that excludes
    /// pushes and takes by other means (the invariant checker, holding every pageset of
    /// the zone and its lock).
    pub fn first(&self) -> Option<u32> {
        // Acquire: as `take`, the chains' links are visible.
        let head = self.head.load(Acquire);
        (head != NIL).then_some(head)
    }

    /// `pages` of taken chains went to the buddy.
    pub fn released(&self, pages: u32) {
        // Pushes count their pages before the chains are visible, and only the zone-lock
        // holder releases: the count covers what it releases.
        debug_assert!(pages <= self.pending_pages(), "releasing more pages than pending");
        self.pending_pages.fetch_add(pages.wrapping_neg(), Relaxed);
    }

    /// Pages pushed and not yet released (racy; exact when nothing runs concurrently).
    pub fn pending_pages(&self) -> u32 {
        self.pending_pages.load(Relaxed)
    }
}

/// Debug builds: `chain` runs from its head to its tail in at most one block per page (it is
/// not yet visible, so no other CPU writes its links).
#[cfg(debug_assertions)]
fn debug_assert_chain<L: ChainLinks>(chain: Chain, links: &L) {
    let (mut index, mut blocks) = (chain.head, 1);
    while index != chain.tail {
        index = links.next(index).load(Relaxed);
        blocks += 1;
        debug_assert!(index != NIL && blocks <= chain.pages, "chain of {} pages misses its tail", chain.pages);
    }
}

/// A zone's frame table: chains run through the records' `next` links.
impl ChainLinks for GrowableTable<FrameLinks> {
    type Word = AtomicU32;
    #[inline]
    fn next(&self, index: u32) -> &AtomicU32 {
        &self[index as usize].next
    }
}
