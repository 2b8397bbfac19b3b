//! Intrusive doubly linked lists of frames, linked by 32-bit zone-relative indices.
//!
//! A list only stores its two ends; the links live in the frames. Callers hold the lock that
//! owns the list (zone lock for free lists, per-CPU pageset lock for PCP lists).
//!
//! Every operation reports the frame records whose links it writes to a [`RecordCost`], so
//! the cost of list maintenance is charged where the links change, not worked out by each
//! caller. On real hardware the cost sink is empty and compiles away.

use core::ops::Index;
use core::sync::atomic::Ordering::Relaxed;

use crate::frame::{FrameLinks, NIL};
use crate::growable::{GrowableTable, GrowableView};
use crate::platform::{Platform, SharedLine};

/// Where a list's links live: a zone's frame records (a [`GrowableTable`]), or a slice in
/// tests. Indexing panics past the end; `get_frame` does not (for checkers).
pub trait FrameTable: Index<usize, Output = FrameLinks> {
    fn get_frame(&self, index: usize) -> Option<&FrameLinks>;
}

impl FrameTable for [FrameLinks] {
    #[inline(always)]
    fn get_frame(&self, index: usize) -> Option<&FrameLinks> {
        self.get(index)
    }
}

impl FrameTable for GrowableTable<FrameLinks> {
    #[inline(always)]
    fn get_frame(&self, index: usize) -> Option<&FrameLinks> {
        self.get(index)
    }
}

impl FrameTable for GrowableView<'_, FrameLinks> {
    #[inline(always)]
    fn get_frame(&self, index: usize) -> Option<&FrameLinks> {
        self.get(index)
    }
}

/// Receives the frame records (by zone-relative index) an operation reads or writes.
pub trait RecordCost {
    fn touch(&self, index: u32, write: bool);
}

/// No cost: tests, and structures no platform observes.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoCost;

impl RecordCost for NoCost {
    #[inline(always)]
    fn touch(&self, _index: u32, _write: bool) {}
}

/// One zone's frame records as the platform sees them: each touch is a
/// [`SharedLine::FrameMeta`] of that zone.
#[derive(Debug)]
pub struct ZoneRecords<'a, P: Platform> {
    pub platform: &'a P,
    pub zone: u16,
}

impl<P: Platform> RecordCost for ZoneRecords<'_, P> {
    #[inline(always)]
    fn touch(&self, index: u32, write: bool) {
        self.platform.touch_shared(SharedLine::frame_meta(self.zone, index), write);
    }
}

/// Whether a list operation charges [`RecordCost`] for the moved frame's own record (its
/// neighbours' records are always charged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnRecord {
    /// The record is a new touch: charged.
    Charge,
    /// This CPU wrote the record earlier in the same lock hold (the frame was unlinked from
    /// another list moments before): not charged again.
    AlreadyWritten,
}

impl OwnRecord {
    /// Charges the moved frame's own record (a write), unless this CPU already wrote it.
    #[inline(always)]
    fn charge(self, index: u32, cost: &impl RecordCost) {
        if self == OwnRecord::Charge {
            cost.touch(index, true);
        }
    }
}

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

    /// Adds `index` at the head (the hot end): writes its record and the old head's.
    #[inline]
    pub fn push_head(
        &mut self,
        frames: &(impl FrameTable + ?Sized),
        index: u32,
        own: OwnRecord,
        cost: &impl RecordCost,
    ) {
        own.charge(index, cost);
        let frame = &frames[index as usize];
        #[cfg(debug_assertions)]
        self.debug_assert_unlinked(frames, index);
        frame.prev.store(NIL, Relaxed);
        frame.next.store(self.head, Relaxed);
        if self.head == NIL {
            self.tail = index;
        } else {
            cost.touch(self.head, true);
            debug_assert!(frames[self.head as usize].prev.load(Relaxed) == NIL, "list head has a predecessor");
            frames[self.head as usize].prev.store(index, Relaxed);
        }
        self.head = index;
    }

    /// Adds `index` at the tail (the cold end): writes its record and the old tail's.
    #[inline]
    pub fn push_tail(
        &mut self,
        frames: &(impl FrameTable + ?Sized),
        index: u32,
        own: OwnRecord,
        cost: &impl RecordCost,
    ) {
        own.charge(index, cost);
        let frame = &frames[index as usize];
        #[cfg(debug_assertions)]
        self.debug_assert_unlinked(frames, index);
        frame.next.store(NIL, Relaxed);
        frame.prev.store(self.tail, Relaxed);
        if self.tail == NIL {
            self.head = index;
        } else {
            cost.touch(self.tail, true);
            debug_assert!(frames[self.tail as usize].next.load(Relaxed) == NIL, "list tail has a successor");
            frames[self.tail as usize].next.store(index, Relaxed);
        }
        self.tail = index;
    }

    /// Unlinks `index`, which the caller knows is on this list: writes its record, then its
    /// predecessor's and its successor's.
    #[inline]
    pub fn remove(&mut self, frames: &(impl FrameTable + ?Sized), index: u32, own: OwnRecord, cost: &impl RecordCost) {
        own.charge(index, cost);
        let frame = &frames[index as usize];
        let next = frame.next.load(Relaxed);
        let prev = frame.prev.load(Relaxed);
        debug_assert!(index != NIL && !self.is_empty(), "removing from an empty list");
        if prev == NIL {
            debug_assert_eq!(self.head, index, "frame is not on this list");
            self.head = next;
        } else {
            cost.touch(prev, true);
            debug_assert!(frames[prev as usize].next.load(Relaxed) == index, "predecessor does not link to frame");
            frames[prev as usize].next.store(next, Relaxed);
        }
        if next == NIL {
            debug_assert_eq!(self.tail, index, "frame is not on this list");
            self.tail = prev;
        } else {
            cost.touch(next, true);
            debug_assert!(frames[next as usize].prev.load(Relaxed) == index, "successor does not link to frame");
            frames[next as usize].prev.store(prev, Relaxed);
        }
        frame.next.store(NIL, Relaxed);
        frame.prev.store(NIL, Relaxed);
        debug_assert!((self.head == NIL) == (self.tail == NIL), "list ends disagree after a remove");
    }

    #[inline]
    pub fn pop_head(
        &mut self,
        frames: &(impl FrameTable + ?Sized),
        own: OwnRecord,
        cost: &impl RecordCost,
    ) -> Option<u32> {
        let index = self.head()?;
        self.remove(frames, index, own, cost);
        Some(index)
    }

    #[inline]
    pub fn pop_tail(
        &mut self,
        frames: &(impl FrameTable + ?Sized),
        own: OwnRecord,
        cost: &impl RecordCost,
    ) -> Option<u32> {
        let index = self.tail()?;
        self.remove(frames, index, own, cost);
        Some(index)
    }

    /// Empties the list and returns its (head, tail): the blocks stay linked head to tail
    /// through `next` (the tail's NIL), as a chain to hand over whole; their `prev` links
    /// are stale, and whoever lists them again rewrites both.
    #[inline]
    pub fn take_all(&mut self) -> Option<(u32, u32)> {
        debug_assert!((self.head == NIL) == (self.tail == NIL), "list ends disagree");
        let ends = (self.head(), self.tail());
        *self = FrameList::EMPTY;
        Some((ends.0?, ends.1?))
    }

    /// Debug builds: `index` is on no list, as a push needs. A frame off every list has both
    /// links NIL (a remove leaves them so); one that is alone on this list does too, so
    /// the ends are checked as well.
    #[cfg(debug_assertions)]
    fn debug_assert_unlinked(&self, frames: &(impl FrameTable + ?Sized), index: u32) {
        let frame = &frames[index as usize];
        let links = (frame.next.load(Relaxed), frame.prev.load(Relaxed));
        debug_assert_eq!(links, (NIL, NIL), "pushing frame {index}, which is linked");
        debug_assert!(self.head != index && self.tail != index, "pushing frame {index}, which is on this list");
        debug_assert_eq!(self.head == NIL, self.tail == NIL, "list ends disagree");
    }

    /// Walks the list head to tail. At most `bound` steps, so a corrupted (cyclic) list cannot
    /// hang a checker: the iterator stops and the caller's count comparison reports it.
    pub fn iter<'a, F: FrameTable + ?Sized>(&self, frames: &'a F, bound: usize) -> FrameListIter<'a, F> {
        FrameListIter { frames, next: self.head, steps_left: bound }
    }
}

#[derive(Debug)]
pub struct FrameListIter<'a, F: ?Sized> {
    frames: &'a F,
    next: u32,
    steps_left: usize,
}

impl<F: FrameTable + ?Sized> Iterator for FrameListIter<'_, F> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.next == NIL || self.steps_left == 0 {
            return None;
        }
        self.steps_left -= 1;
        let index = self.next;
        self.next = self.frames.get_frame(index as usize)?.next.load(Relaxed);
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use core::cell::RefCell;

    fn frames(count: usize) -> Vec<FrameLinks> {
        (0..count).map(|_| FrameLinks::unlinked()).collect()
    }

    /// Records every touch, in order.
    #[derive(Default)]
    struct Log(RefCell<Vec<u32>>);

    impl RecordCost for Log {
        fn touch(&self, index: u32, write: bool) {
            assert!(write, "list operations only write");
            self.0.borrow_mut().push(index);
        }
    }

    impl Log {
        fn take(&self) -> Vec<u32> {
            core::mem::take(&mut self.0.borrow_mut())
        }
    }

    #[test]
    fn each_operation_charges_the_records_whose_links_it_writes() {
        let frames = frames(8);
        let log = Log::default();
        let mut list = FrameList::EMPTY;
        list.push_tail(&frames[..], 5, OwnRecord::Charge, &log);
        assert_eq!(log.take(), [5], "first link: only its own record");
        list.push_tail(&frames[..], 6, OwnRecord::Charge, &log);
        list.push_tail(&frames[..], 7, OwnRecord::AlreadyWritten, &log);
        assert_eq!(log.take(), [6, 5, 6], "own record (unless warm), then the old tail");
        list.remove(&frames[..], 6, OwnRecord::Charge, &log);
        assert_eq!(log.take(), [6, 5, 7], "own record, predecessor, successor");
        assert_eq!(list.pop_head(&frames[..], OwnRecord::AlreadyWritten, &log), Some(5));
        assert_eq!(log.take(), [7], "the new head");
        list.push_head(&frames[..], 2, OwnRecord::Charge, &log);
        assert_eq!(log.take(), [2, 7], "own record, then the old head");
        assert_eq!(list.pop_tail(&frames[..], OwnRecord::Charge, &log), Some(7));
        assert_eq!(log.take(), [7, 2], "own record, then the new tail");
    }

    #[test]
    fn push_pop_both_ends_and_remove_middle() {
        let frames = frames(8);
        let mut list = FrameList::EMPTY;
        list.push_head(&frames[..], 1, OwnRecord::Charge, &NoCost);
        list.push_head(&frames[..], 2, OwnRecord::Charge, &NoCost);
        list.push_tail(&frames[..], 3, OwnRecord::Charge, &NoCost);
        list.push_tail(&frames[..], 4, OwnRecord::Charge, &NoCost);
        let order: Vec<u32> = list.iter(&frames[..], 100).collect();
        assert_eq!(order, [2, 1, 3, 4]);
        list.remove(&frames[..], 3, OwnRecord::Charge, &NoCost);
        assert_eq!(list.iter(&frames[..], 100).collect::<Vec<_>>(), [2, 1, 4]);
        assert_eq!(list.pop_tail(&frames[..], OwnRecord::Charge, &NoCost), Some(4));
        assert_eq!(list.pop_head(&frames[..], OwnRecord::Charge, &NoCost), Some(2));
        assert_eq!(list.pop_head(&frames[..], OwnRecord::Charge, &NoCost), Some(1));
        assert!(list.is_empty());
        assert_eq!(list.pop_head(&frames[..], OwnRecord::Charge, &NoCost), None);
        assert_eq!(list.tail(), None);
    }
}
