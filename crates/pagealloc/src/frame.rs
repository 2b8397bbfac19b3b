//! Frame metadata: one 12-byte record per 4 KiB frame (Linux spends a 64-byte `struct page`).
//!
//! Fields are atomics. List links and list-state transitions change under the lock that owns
//! the list (zone lock or per-CPU pageset lock), which gives the ordering, so they use
//! `Relaxed` (a plain `mov` on x86-64). One transition has no lock: a free claims its block
//! with a compare-and-swap from allocated to interior (`transition`, AcqRel), so two racing
//! frees of one block cannot both succeed. A block just taken off a list is owned by the
//! caller alone, which marks it allocated after unlinking it.
//!
//! With feature `generations` (default), the word's upper 22 bits are the frame's
//! generation: a free of the block headed here adds one, and every other state change keeps
//! it, so a [`crate::Block`] carries the generation it was handed out with and a stale copy
//! of it (freed, then reallocated to someone else) no longer matches. It costs a load before
//! each store of the word, on a line the store owns anyway (measured: docs/decisions.md).

use core::sync::atomic::{AtomicU32, Ordering, Ordering::Relaxed};

use crate::platform::AtomicWord;

use crate::types::{MigrateType, MAX_ORDER};

/// "No frame" in an index link.
pub const NIL: u32 = u32::MAX;

/// What a frame currently is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameState {
    /// Part of a block whose head is another frame.
    Interior = 0,
    /// Head of a free buddy block, on a zone free list.
    FreeHead = 1,
    /// Head of an allocated block.
    AllocHead = 2,
    /// Head of a block cached on a per-CPU list.
    PcpHead = 3,
    /// Present but not managed: memory reserved at boot (firmware, the kernel image, the
    /// allocator's own records). Hot-plug never adds, offlines or onlines it.
    Reserved = 4,
    /// Not present: a hole of the span (memory not yet added) or memory taken offline.
    /// Only holes become memory by hot-plug.
    Hole = 5,
    /// Head of a freed block parked in its pageblock (beyond Linux,
    /// `FragBeyondLinux::parked_frees`): free, on no list, counted by its pageblock's parked
    /// pages, and given to the buddy when its pageblock is wholly free or memory is wanted.
    Parked = 6,
}

impl FrameState {
    const fn from_bits(bits: u32) -> FrameState {
        match bits {
            0 => FrameState::Interior,
            1 => FrameState::FreeHead,
            2 => FrameState::AllocHead,
            3 => FrameState::PcpHead,
            4 => FrameState::Reserved,
            6 => FrameState::Parked,
            _ => FrameState::Hole,
        }
    }

    /// A frame no block covers: reserved or a hole (one compare of the state bits).
    #[inline(always)]
    pub const fn is_unmanaged(self) -> bool {
        matches!(self, FrameState::Reserved | FrameState::Hole)
    }
}

/// Packed (state, order, migratetype) word of a frame.
///
/// Layout: bits 0..3 state, 3..7 order, 7..10 migratetype, 10..32 generation. For a free or
/// PCP head the type is the list it sits on; for an allocated head it is the request's type
/// (movable accounting).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo(u32);

impl FrameInfo {
    const STATE_BITS: u32 = 3;
    const ORDER_SHIFT: u32 = 3;
    const ORDER_MASK: u32 = 0xf;
    const TYPE_SHIFT: u32 = 7;
    const TYPE_MASK: u32 = 0x7;
    const GENERATION_SHIFT: u32 = 10;
    const GENERATION_MASK: u32 = !((1 << Self::GENERATION_SHIFT) - 1);
    /// Generations wrap at 2^22: a stale block is caught unless its head was freed a
    /// multiple of 2^22 times since.
    pub const GENERATION_LIMIT: u32 = 1 << (32 - Self::GENERATION_SHIFT);
    /// Whether frees advance generations and state changes keep them (feature
    /// `generations`); without it every generation is 0 and nothing reads the old word.
    pub const GENERATIONS: bool = cfg!(feature = "generations");

    pub const INTERIOR: FrameInfo = FrameInfo::new(FrameState::Interior, 0, MigrateType::Unmovable);
    pub const RESERVED: FrameInfo = FrameInfo::new(FrameState::Reserved, 0, MigrateType::Unmovable);
    pub const HOLE: FrameInfo = FrameInfo::new(FrameState::Hole, 0, MigrateType::Unmovable);

    #[inline]
    pub const fn new(state: FrameState, order: u8, migratetype: MigrateType) -> FrameInfo {
        debug_assert!(order <= MAX_ORDER, "frame word of an order past MAX_ORDER");
        FrameInfo(
            state as u32
                | ((order as u32 & Self::ORDER_MASK) << Self::ORDER_SHIFT)
                | ((migratetype as u32 & Self::TYPE_MASK) << Self::TYPE_SHIFT),
        )
    }

    #[inline]
    pub const fn state(self) -> FrameState {
        FrameState::from_bits(self.0 & ((1 << Self::STATE_BITS) - 1))
    }

    #[inline]
    pub const fn order(self) -> u8 {
        ((self.0 >> Self::ORDER_SHIFT) & Self::ORDER_MASK) as u8
    }

    #[inline]
    pub const fn migratetype(self) -> MigrateType {
        MigrateType::from_index(((self.0 >> Self::TYPE_SHIFT) & Self::TYPE_MASK) as usize)
    }

    /// The head word of an allocated block as a [`crate::Block`] records it (type bits zero).
    #[inline]
    pub const fn allocated_head(order: u8, generation: u32) -> FrameInfo {
        // `Block::from_raw` turns parts no block can have into a valid rejected block.
        debug_assert!(order <= MAX_ORDER && generation < Self::GENERATION_LIMIT, "no block has these parts");
        FrameInfo(
            FrameState::AllocHead as u32
                | ((order as u32 & Self::ORDER_MASK) << Self::ORDER_SHIFT)
                | generation << Self::GENERATION_SHIFT,
        )
    }

    #[inline]
    pub(crate) const fn from_bits(bits: u32) -> FrameInfo {
        FrameInfo(bits)
    }

    #[inline]
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    /// The word with its type bits zero.
    #[inline]
    pub const fn without_type(self) -> FrameInfo {
        FrameInfo(self.0 & !(Self::TYPE_MASK << Self::TYPE_SHIFT))
    }

    /// How many times a block headed here has been freed, modulo [`Self::GENERATION_LIMIT`].
    #[inline]
    pub const fn generation(self) -> u32 {
        self.0 >> Self::GENERATION_SHIFT
    }

    /// The word with another order, state, type and generation kept (a split head).
    #[inline]
    pub const fn with_order(self, order: u8) -> FrameInfo {
        debug_assert!(order <= MAX_ORDER, "frame word of an order past MAX_ORDER");
        FrameInfo(
            (self.0 & !(Self::ORDER_MASK << Self::ORDER_SHIFT))
                | ((order as u32 & Self::ORDER_MASK) << Self::ORDER_SHIFT),
        )
    }

    /// The word with generation 0: state, order and type only.
    #[inline]
    pub const fn without_generation(self) -> FrameInfo {
        FrameInfo(self.0 & !Self::GENERATION_MASK)
    }

    /// The word as a free claims it: interior, one generation on (wrapping).
    #[inline]
    pub const fn freed(self) -> FrameInfo {
        // The generation is the word's top bits, so the add wraps it at GENERATION_LIMIT,
        // and the interior word is all zeros below it: two instructions.
        const _: () = assert!(FrameInfo::INTERIOR.0 == 0);
        if !Self::GENERATIONS {
            return FrameInfo::INTERIOR;
        }
        FrameInfo((self.0 & Self::GENERATION_MASK).wrapping_add(1 << Self::GENERATION_SHIFT))
    }

    /// True if this is the head of an allocated block of exactly `order` (any type).
    #[inline]
    pub fn is_alloc_head_of_order(self, order: u8) -> bool {
        let state_and_order = (1 << Self::TYPE_SHIFT) - 1;
        self.0 & state_and_order == FrameInfo::new(FrameState::AllocHead, order, MigrateType::Unmovable).0
    }

    /// True if this word is `expected` (an [`FrameInfo::allocated_head`]) but for its
    /// type bits: the free fast path's one compare.
    #[inline]
    pub fn matches_allocated(self, expected: FrameInfo) -> bool {
        let type_bits = Self::TYPE_MASK << Self::TYPE_SHIFT;
        (self.0 ^ expected.0) & !type_bits == 0
    }

    /// True if this is the head of a free buddy block: one mask and compare.
    #[inline(always)]
    pub fn is_free_head(self) -> bool {
        self.0 & ((1 << Self::STATE_BITS) - 1) == FrameState::FreeHead as u32
    }

    /// True if this is the head of a free buddy block of exactly `order`.
    #[inline]
    pub fn is_free_head_of_order(self, order: u8) -> bool {
        self.state() == FrameState::FreeHead && self.order() == order
    }
}

impl core::fmt::Debug for FrameInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}(order {}, {:?}, gen {})", self.state(), self.order(), self.migratetype(), self.generation())
    }
}

/// A frame's info word and every state change of it, generic over the atomic it lives in:
/// core's in frames, loom's in the model `tests/loom_frames.rs`, which so runs this code.
pub struct FrameWord<A> {
    word: A,
}

impl<A: AtomicWord> core::fmt::Debug for FrameWord<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?}", self.info())
    }
}

impl<A: AtomicWord> FrameWord<A> {
    pub fn new(info: FrameInfo) -> FrameWord<A> {
        FrameWord { word: A::new_word(info.0) }
    }

    #[inline(always)]
    pub fn info(&self) -> FrameInfo {
        FrameInfo(self.word.load(Relaxed))
    }

    /// Moves the frame from one of the states `from` (checked in debug builds) to `to`,
    /// keeping its generation. Every state change of a frame under a list lock goes through
    /// here; the lockless claim of a free goes through [`FrameWord::transition`].
    #[inline(always)]
    pub fn change(&self, from: &[FrameState], to: FrameInfo) {
        self.store_checked(from, to, Relaxed);
    }

    /// Marks the head allocated and hands it to the caller: like [`FrameWord::change`], with
    /// a Release store, so a later free on another CPU, whose claim is an Acquire
    /// compare-and-swap on this word, sees everything done to the block before it was
    /// handed out (a plain `mov` on x86-64, as Relaxed is).
    #[inline(always)]
    pub fn hand_out(&self, from: &[FrameState], to: FrameInfo) {
        debug_assert_eq!(to.state(), FrameState::AllocHead);
        self.store_checked(from, to, Ordering::Release);
    }

    /// The one store of a state change: asserts (debug builds) the frame is in one of `from`,
    /// and keeps the frame's generation.
    #[inline(always)]
    fn store_checked(&self, from: &[FrameState], to: FrameInfo, order: Ordering) {
        debug_assert_eq!(to.generation(), 0, "a state change names no generation");
        // A block is handed out with Release (`hand_out`), for the Acquire of its free's claim.
        debug_assert!(to.state() != FrameState::AllocHead || order == Ordering::Release, "hand-out not Release");
        debug_assert!(
            from.contains(&self.info().state()),
            "frame {:?} changing to {to:?}, expected one of {from:?}",
            self.info()
        );
        let kept = if FrameInfo::GENERATIONS { self.word.load(Relaxed) & FrameInfo::GENERATION_MASK } else { 0 };
        self.word.store(to.0 | kept, order);
    }

    /// Atomically moves from `current` to `new`; on failure returns what the frame really
    /// holds. Used where two CPUs may race on the same frame (two frees of one block).
    #[inline(always)]
    pub fn transition(&self, current: FrameInfo, new: FrameInfo) -> Result<(), FrameInfo> {
        // Only the owner of an allocated head claims it: for a free (to interior, one
        // generation on) or a split (to a smaller order, still allocated).
        debug_assert!(current.state() == FrameState::AllocHead, "claiming a head not handed out");
        debug_assert!(
            new == current.freed() || new == current.with_order(new.order()) && new.order() <= current.order(),
            "claim neither a free nor a split"
        );
        self.word.compare_exchange(current.0, new.0, Ordering::AcqRel, Relaxed).map(|_| ()).map_err(FrameInfo)
    }
}

/// A frame's list links (zone-relative indices), in a table of their own beside the
/// frames' state words: a free claims the word without touching the links, and a table of
/// words is a third of the records' size, so more of it stays cached.
pub struct FrameLinks {
    pub(crate) next: AtomicU32,
    pub(crate) prev: AtomicU32,
}

impl core::fmt::Debug for FrameLinks {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FrameLinks")
            .field("next", &self.next.load(Relaxed))
            .field("prev", &self.prev.load(Relaxed))
            .finish()
    }
}

impl FrameLinks {
    /// Links of a frame on no list.
    pub(crate) const fn unlinked() -> FrameLinks {
        FrameLinks { next: AtomicU32::new(NIL), prev: AtomicU32::new(NIL) }
    }
}

/// A frame's state word as a zone keeps it.
pub type Frame = FrameWord<AtomicU32>;

/// Bytes of metadata per 4 KiB frame: its links and its state word.
pub const FRAME_METADATA_BYTES: usize = core::mem::size_of::<FrameLinks>() + core::mem::size_of::<Frame>();
const _: () = assert!(FRAME_METADATA_BYTES <= 12);
const _: () = assert!(MAX_ORDER as u32 <= FrameInfo::ORDER_MASK);
const _: () = assert!((FrameState::Parked as u32) < 1 << FrameInfo::STATE_BITS);

impl Frame {
    /// A frame of a span before the build or a growth says what it is: a hole.
    pub(crate) const fn hole() -> Frame {
        FrameWord { word: AtomicU32::new(FrameInfo::HOLE.0) }
    }

    /// Overwrites the word with no check: the invariant checker's tests corrupt frames.
    #[cfg(test)]
    pub(crate) fn corrupt(&self, info: FrameInfo) {
        self.word.store(info.0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_round_trips_every_field() {
        for state in [
            FrameState::Interior,
            FrameState::FreeHead,
            FrameState::AllocHead,
            FrameState::PcpHead,
            FrameState::Reserved,
            FrameState::Hole,
            FrameState::Parked,
        ] {
            for order in 0..=MAX_ORDER {
                for migratetype in MigrateType::ALL {
                    let info = FrameInfo::new(state, order, migratetype);
                    assert_eq!(info.state(), state);
                    assert_eq!(info.order(), order);
                    assert_eq!(info.migratetype(), migratetype);
                }
            }
        }
    }

    #[test]
    fn alloc_head_test_ignores_the_type_only() {
        for migratetype in MigrateType::ALL {
            let head = FrameInfo::new(FrameState::AllocHead, 3, migratetype);
            assert!(head.is_alloc_head_of_order(3));
            assert!(!head.is_alloc_head_of_order(2));
            assert!(!FrameInfo::new(FrameState::PcpHead, 3, migratetype).is_alloc_head_of_order(3));
            assert!(!FrameInfo::new(FrameState::FreeHead, 3, migratetype).is_alloc_head_of_order(3));
        }
    }

    #[test]
    #[cfg(feature = "generations")]
    fn state_changes_keep_the_generation_and_frees_advance_it() {
        let frame = Frame::hole();
        frame.change(&[FrameState::Hole], FrameInfo::INTERIOR);
        let head = FrameInfo::new(FrameState::AllocHead, 2, MigrateType::Movable);
        for round in 1..=3 {
            frame.hand_out(&[FrameState::Interior], head);
            let handed = frame.info();
            assert!(handed.matches_allocated(FrameInfo::allocated_head(2, round - 1)));
            assert!(!handed.matches_allocated(FrameInfo::allocated_head(2, round)));
            assert!(!handed.matches_allocated(FrameInfo::allocated_head(3, round - 1)));
            assert_eq!(frame.transition(handed, handed.freed()), Ok(()));
            assert_eq!((frame.info().state(), frame.info().generation()), (FrameState::Interior, round));
            frame.change(&[FrameState::Interior], FrameInfo::new(FrameState::PcpHead, 2, MigrateType::Movable));
            assert_eq!(frame.info().generation(), round, "a list move keeps the generation");
            frame.change(&[FrameState::PcpHead], FrameInfo::INTERIOR);
        }
        let last = FrameInfo(FrameInfo::INTERIOR.0 | (FrameInfo::GENERATION_LIMIT - 1) << FrameInfo::GENERATION_SHIFT);
        assert_eq!(last.freed().generation(), 0, "generations wrap");
        assert_eq!(last.without_generation(), FrameInfo::INTERIOR);
    }

    #[test]
    fn frame_is_twelve_bytes() {
        assert_eq!(FRAME_METADATA_BYTES, 12);
    }
}
