//! Intrusive doubly linked lists of frames, linked by 32-bit zone-relative indices.
//!
//! A list only stores its two ends; the links live in the frames. Callers hold the lock that
//! owns the list (zone lock for free lists, per-CPU pageset lock for PCP lists).

use core::sync::atomic::Ordering::Relaxed;

use crate::frame::{Frame, NIL};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameList {
    head: u32,
    tail: u32,
}

impl Default for FrameList {
    fn default() -> Self {
        FrameList::EMPTY
    }
}

impl FrameList {
    pub const EMPTY: FrameList = FrameList { head: NIL, tail: NIL };

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    #[inline]
    pub fn head(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    #[inline]
    pub fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// Adds `index` at the head (the hot end).
    #[inline]
    pub fn push_head(&mut self, frames: &[Frame], index: u32) {
        let frame = &frames[index as usize];
        frame.prev.store(NIL, Relaxed);
        frame.next.store(self.head, Relaxed);
        if self.head == NIL {
            self.tail = index;
        } else {
            frames[self.head as usize].prev.store(index, Relaxed);
        }
        self.head = index;
    }

    /// Adds `index` at the tail (the cold end).
    #[inline]
    pub fn push_tail(&mut self, frames: &[Frame], index: u32) {
        let frame = &frames[index as usize];
        frame.next.store(NIL, Relaxed);
        frame.prev.store(self.tail, Relaxed);
        if self.tail == NIL {
            self.head = index;
        } else {
            frames[self.tail as usize].next.store(index, Relaxed);
        }
        self.tail = index;
    }

    /// The frames whose links unlinking `index` rewrites: its predecessor and successor.
    /// Lets a caller account for the metadata an unlink touches.
    #[inline]
    pub fn neighbours(frames: &[Frame], index: u32) -> [Option<u32>; 2] {
        let frame = &frames[index as usize];
        let link = |index: u32| (index != NIL).then_some(index);
        [link(frame.prev.load(Relaxed)), link(frame.next.load(Relaxed))]
    }

    /// Unlinks `index`, which the caller knows is on this list.
    #[inline]
    pub fn remove(&mut self, frames: &[Frame], index: u32) {
        let frame = &frames[index as usize];
        let next = frame.next.load(Relaxed);
        let prev = frame.prev.load(Relaxed);
        if prev == NIL {
            debug_assert_eq!(self.head, index, "frame is not on this list");
            self.head = next;
        } else {
            frames[prev as usize].next.store(next, Relaxed);
        }
        if next == NIL {
            debug_assert_eq!(self.tail, index, "frame is not on this list");
            self.tail = prev;
        } else {
            frames[next as usize].prev.store(prev, Relaxed);
        }
        frame.next.store(NIL, Relaxed);
        frame.prev.store(NIL, Relaxed);
    }

    #[inline]
    pub fn pop_head(&mut self, frames: &[Frame]) -> Option<u32> {
        let index = self.head()?;
        self.remove(frames, index);
        Some(index)
    }

    #[inline]
    pub fn pop_tail(&mut self, frames: &[Frame]) -> Option<u32> {
        let index = self.tail()?;
        self.remove(frames, index);
        Some(index)
    }

    /// Walks the list head to tail. At most `bound` steps, so a corrupted (cyclic) list cannot
    /// hang a checker: the iterator stops and the caller's count comparison reports it.
    pub fn iter<'a>(&self, frames: &'a [Frame], bound: usize) -> FrameListIter<'a> {
        FrameListIter { frames, next: self.head, steps_left: bound }
    }
}

pub struct FrameListIter<'a> {
    frames: &'a [Frame],
    next: u32,
    steps_left: usize,
}

impl Iterator for FrameListIter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.next == NIL || self.steps_left == 0 {
            return None;
        }
        self.steps_left -= 1;
        let index = self.next;
        self.next = self.frames.get(index as usize)?.next.load(Relaxed);
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn frames(count: usize) -> Vec<Frame> {
        (0..count).map(|_| Frame::reserved()).collect()
    }

    #[test]
    fn neighbours_are_the_frames_an_unlink_rewrites() {
        let frames = frames(8);
        let mut list = FrameList::EMPTY;
        for index in [5, 6, 7] {
            list.push_tail(&frames, index);
        }
        assert_eq!(FrameList::neighbours(&frames, 6), [Some(5), Some(7)]);
        assert_eq!(FrameList::neighbours(&frames, 5), [None, Some(6)], "the head has no predecessor");
        assert_eq!(FrameList::neighbours(&frames, 7), [Some(6), None]);
        list.remove(&frames, 6);
        assert_eq!(FrameList::neighbours(&frames, 5), [None, Some(7)], "5 and 7 were relinked");
        assert_eq!(FrameList::neighbours(&frames, 7), [Some(5), None]);
        assert_eq!(FrameList::neighbours(&frames, 6), [None, None], "an unlinked frame has none");
    }

    #[test]
    fn push_pop_both_ends_and_remove_middle() {
        let frames = frames(8);
        let mut list = FrameList::EMPTY;
        list.push_head(&frames, 1);
        list.push_head(&frames, 2);
        list.push_tail(&frames, 3);
        list.push_tail(&frames, 4);
        let order: Vec<u32> = list.iter(&frames, 100).collect();
        assert_eq!(order, [2, 1, 3, 4]);
        list.remove(&frames, 3);
        assert_eq!(list.iter(&frames, 100).collect::<Vec<_>>(), [2, 1, 4]);
        assert_eq!(list.pop_tail(&frames), Some(4));
        assert_eq!(list.pop_head(&frames), Some(2));
        assert_eq!(list.pop_head(&frames), Some(1));
        assert!(list.is_empty());
        assert_eq!(list.pop_head(&frames), None);
        assert_eq!(list.tail(), None);
    }
}
