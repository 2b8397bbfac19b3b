//! Per-page LRU metadata: two links and a state word, 12 bytes a page (Linux keeps `lru`
//! and the flags in `struct page`). Each list is circular through a sentinel entry that
//! follows the pages (one per node and list). Links are atomics written only under the lock
//! that covers them (for a page still in a CPU's add batch, that batch's lock); every write
//! touches the written entry's cache line on the platform.
//! Under `cfg(loom)` they are loom's atomics, so the model `tests/loom_lru.rs` may switch
//! threads at every link read and write, and a write made without its lock shows.

#[cfg(not(loom))]
use core::sync::atomic::AtomicU32;
use core::sync::atomic::Ordering::Relaxed;
#[cfg(loom)]
use loom::sync::atomic::AtomicU32;

use super::{LruList, NR_LRU_LISTS};
use crate::platform::{Platform, SharedLine};

/// A page's or sentinel's entry.
#[derive(Debug, Default)]
pub(super) struct Entry {
    pub(super) next: AtomicU32,
    pub(super) prev: AtomicU32,
    pub(super) state: AtomicU32,
}

/// Where a page is, as its state word encodes it: kind in bits 0..2, list in 2..4, the
/// batch-lock id (listed) or the CPU (pending) from bit 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PageState {
    /// Not on the LRU.
    Off,
    /// In `cpu`'s add batch, bound for `list`.
    Pending { cpu: u32, list: LruList },
    /// On `list`, covered by batch lock `lock` (scaled modes).
    Listed { list: LruList, lock: u32 },
    /// Taken off by isolation; the caller puts it back or frees it.
    Isolated,
}

impl PageState {
    pub(super) fn encode(self) -> u32 {
        match self {
            PageState::Off => 0,
            PageState::Pending { cpu, list } => 1 | (list.index() as u32) << 2 | cpu << 8,
            PageState::Listed { list, lock } => 2 | (list.index() as u32) << 2 | lock << 8,
            PageState::Isolated => 3,
        }
    }

    pub(super) fn decode(word: u32) -> PageState {
        let list = LruList::ALL[((word >> 2) & 3) as usize];
        match word & 3 {
            0 => PageState::Off,
            1 => PageState::Pending { cpu: word >> 8, list },
            2 => PageState::Listed { list, lock: word >> 8 },
            _ => PageState::Isolated,
        }
    }
}

/// Every entry, and how entries map to cache lines.
#[derive(Debug)]
pub(super) struct Links {
    entries: alloc::boxed::Box<[Entry]>,
    /// Pages (the sentinels follow them).
    pub(super) pages: u32,
    /// Per span: first page id, zone index (for the frame-metadata line).
    spans: alloc::boxed::Box<[(u32, u16)]>,
}

impl Links {
    /// Entries for `pages` pages and a sentinel per (node, list); each sentinel starts as an
    /// empty circular list.
    pub(super) fn new(pages: u32, nodes: u16, spans: alloc::boxed::Box<[(u32, u16)]>) -> Links {
        let total = pages as usize + usize::from(nodes) * NR_LRU_LISTS;
        let entries: alloc::vec::Vec<Entry> = (0..total).map(|_| Entry::default()).collect();
        let links = Links { entries: entries.into_boxed_slice(), pages, spans };
        for node in 0..nodes {
            for list in LruList::ALL {
                let head = links.head(node, list);
                links.entry(head).next.store(head, Relaxed);
                links.entry(head).prev.store(head, Relaxed);
            }
        }
        links
    }

    /// The sentinel of `node`'s `list`.
    #[inline]
    pub(super) fn head(&self, node: u16, list: LruList) -> u32 {
        self.pages + u32::from(node) * NR_LRU_LISTS as u32 + list.index() as u32
    }

    #[inline]
    pub(super) fn is_head(&self, id: u32) -> bool {
        id >= self.pages
    }

    #[inline]
    pub(super) fn entry(&self, id: u32) -> &Entry {
        &self.entries[id as usize]
    }

    pub(super) fn state(&self, page: u32) -> PageState {
        PageState::decode(self.entry(page).state.load(Relaxed))
    }

    /// Moves `page` from state `from` to `to`; false if it was not in `from` (a racing
    /// caller changed it first).
    pub(super) fn transition(&self, page: u32, from: PageState, to: PageState) -> bool {
        self.entry(page).state.compare_exchange(from.encode(), to.encode(), Relaxed, Relaxed).is_ok()
    }

    /// Sets the state of a page the caller's locks cover, asserting the previous one.
    pub(super) fn set_state(&self, page: u32, expected: PageState, to: PageState) {
        let previous = self.entry(page).state.swap(to.encode(), Relaxed);
        debug_assert_eq!(PageState::decode(previous), expected, "page {page}");
    }

    /// The line holding entry `id`: the page's `struct page`, or a list head.
    fn line(&self, id: u32) -> SharedLine {
        if self.is_head(id) {
            let offset = id - self.pages;
            let (node, list) = (offset / NR_LRU_LISTS as u32, offset % NR_LRU_LISTS as u32);
            return SharedLine::LruHead { node: node as u16, list: list as u8 };
        }
        let span = self.spans.partition_point(|&(first, _)| first <= id) - 1;
        let (first, zone) = self.spans[span];
        SharedLine::FrameMeta { zone, frame: id - first }
    }

    #[inline]
    pub(super) fn set_next<P: Platform>(&self, platform: &P, id: u32, next: u32) {
        self.entry(id).next.store(next, Relaxed);
        platform.touch_shared(self.line(id), true);
    }

    #[inline]
    pub(super) fn set_prev<P: Platform>(&self, platform: &P, id: u32, prev: u32) {
        self.entry(id).prev.store(prev, Relaxed);
        platform.touch_shared(self.line(id), true);
    }

    /// Sets both links of `id` (one line touch).
    pub(super) fn set_both<P: Platform>(&self, platform: &P, id: u32, prev: u32, next: u32) {
        self.entry(id).prev.store(prev, Relaxed);
        self.entry(id).next.store(next, Relaxed);
        platform.touch_shared(self.line(id), true);
    }

    pub(super) fn next(&self, id: u32) -> u32 {
        self.entry(id).next.load(Relaxed)
    }

    pub(super) fn prev(&self, id: u32) -> u32 {
        self.entry(id).prev.load(Relaxed)
    }

    /// Links `page` after `at` (mirrors list_add()).
    pub(super) fn insert_after<P: Platform>(&self, platform: &P, at: u32, page: u32) {
        let next = self.next(at);
        self.set_both(platform, page, at, next);
        self.set_prev(platform, next, page);
        self.set_next(platform, at, page);
    }

    /// Unlinks `page` (mirrors list_del()); its own links are left as they were.
    pub(super) fn unlink<P: Platform>(&self, platform: &P, page: u32) {
        let (prev, next) = (self.prev(page), self.next(page));
        debug_assert!(self.next(prev) == page && self.prev(next) == page, "page {page} not linked");
        self.set_next(platform, prev, next);
        self.set_prev(platform, next, prev);
    }

    /// Splices the chain `first..=last` (already linked among themselves) after `at` (mirrors
    /// list_splice()): four entries written whatever the chain's length (three when
    /// `first == last`).
    pub(super) fn splice_after<P: Platform>(&self, platform: &P, at: u32, first: u32, last: u32) {
        let next = self.next(at);
        self.set_prev(platform, first, at);
        self.set_next(platform, last, next);
        self.set_prev(platform, next, last);
        self.set_next(platform, at, first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_words() {
        for state in [
            PageState::Off,
            PageState::Pending { cpu: 223, list: LruList::ActiveFile },
            PageState::Listed { list: LruList::InactiveAnon, lock: 31 },
            PageState::Isolated,
        ] {
            assert_eq!(PageState::decode(state.encode()), state);
        }
    }
}
