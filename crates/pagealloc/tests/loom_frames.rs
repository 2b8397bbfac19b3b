//! Loom models of the real frame-word code (`FrameWord`, which every frame's state change
//! goes through), and of a pageblock's counts (`PageblockWord`), run on loom's atomics: two
//! frees racing for one block, parked or not, a collection racing a park, and the hand-off
//! of a block's contents from the allocating thread to the one that frees it. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p pagealloc --test loom_frames --release`.

#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU32;
use loom::sync::Arc;
use pagealloc::frame::{FrameInfo, FrameState, FrameWord};
use pagealloc::fullness::PageblockWord;
use pagealloc::MigrateType;

/// The free's claim: one compare-and-swap from the block's allocated head word to interior,
/// one generation on. (`free_pages` first reads the word Relaxed to pick `current`; loom 0.7
/// explores no alternative for a Relaxed load, so the models name `current` themselves and
/// run the compare-and-swap, which is what orders the free after the hand-out.)
fn claim(word: &FrameWord<AtomicU32>, current: FrameInfo) -> bool {
    word.transition(current, current.freed()).is_ok()
}

/// Two threads free the same order-2 block at once: in every interleaving exactly one
/// claim wins, and the word ends interior, one generation on.
#[test]
fn racing_frees_of_one_block_claim_it_exactly_once() {
    loom::model(|| {
        let head = FrameInfo::new(FrameState::AllocHead, 2, MigrateType::Movable);
        let word = Arc::new(FrameWord::<AtomicU32>::new(head));
        let other = word.clone();
        let racer = loom::thread::spawn(move || claim(&other, head));
        let mine = claim(&word, head);
        let theirs = racer.join().unwrap();
        assert!(mine ^ theirs, "claims: {mine} {theirs}");
        let end = word.info();
        let generation = if FrameInfo::GENERATIONS { 1 } else { 0 };
        assert_eq!((end.state(), end.generation()), (FrameState::Interior, generation));
    });
}

/// Executions in which the free claimed the block: a model that never claims proves nothing.
static CLAIMED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The allocating thread fills the block and hands it out (Release); a thread that then
/// claims it for a free (Acquire) must see the contents. Loom reports a data race on the
/// cell if the orderings do not give that edge.
#[test]
fn a_claimed_block_sees_what_was_written_before_it_was_handed_out() {
    loom::model(|| {
        let shared = Arc::new((FrameWord::<AtomicU32>::new(FrameInfo::INTERIOR), UnsafeCell::new(0u32)));
        let other = shared.clone();
        let allocator = loom::thread::spawn(move || {
            other.1.with_mut(|contents| unsafe { *contents = 42 });
            other.0.hand_out(&[FrameState::Interior], FrameInfo::new(FrameState::AllocHead, 0, MigrateType::Movable));
        });
        if claim(&shared.0, FrameInfo::new(FrameState::AllocHead, 0, MigrateType::Movable)) {
            CLAIMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(shared.1.with(|contents| unsafe { *contents }), 42);
        }
        allocator.join().unwrap();
    });
    assert!(CLAIMED.load(std::sync::atomic::Ordering::Relaxed) > 0, "no execution claimed the block");
}

/// A parked free (`FragBeyondLinux::parked_frees`) as `Zone::park` makes it: the claim,
/// the word parked, the pageblock's parked count added.
fn park(word: &FrameWord<AtomicU32>, counts: &PageblockWord<AtomicU32>, head: FrameInfo) -> bool {
    if !claim(word, head) {
        return false;
    }
    word.change(&[FrameState::Interior], FrameInfo::new(FrameState::Parked, head.order(), MigrateType::Unmovable));
    counts.park(1 << head.order());
    true
}

/// Two threads free the same order-1 block at once, parking it: exactly one parks it,
/// and the pageblock counts its two pages once.
#[test]
fn racing_parked_frees_count_the_block_once() {
    loom::model(|| {
        let head = FrameInfo::new(FrameState::AllocHead, 1, MigrateType::Movable);
        let shared = Arc::new((FrameWord::<AtomicU32>::new(head), PageblockWord::<AtomicU32>::new()));
        let other = shared.clone();
        let racer = loom::thread::spawn(move || park(&other.0, &other.1, head));
        let mine = park(&shared.0, &shared.1, head);
        let theirs = racer.join().unwrap();
        assert!(mine ^ theirs, "parks: {mine} {theirs}");
        assert_eq!(shared.0.info().state(), FrameState::Parked);
        assert_eq!((shared.1.parked_pages(), shared.1.free_pages()), (2, 0));
    });
}

/// A collection (under the zone lock) runs while a free parks a block: it takes the block
/// if it finds the word parked, perhaps before the park counted it. Either way the count
/// ends matching the word: 0 and interior if collected, the block's pages and parked if not.
#[test]
fn a_collection_racing_a_park_leaves_the_count_matching_the_word() {
    loom::model(|| {
        let head = FrameInfo::new(FrameState::AllocHead, 0, MigrateType::Movable);
        let shared = Arc::new((FrameWord::<AtomicU32>::new(head), PageblockWord::<AtomicU32>::new()));
        shared.1.set_free_pages(7);
        let other = shared.clone();
        let freer = loom::thread::spawn(move || assert!(park(&other.0, &other.1, head)));
        let collected = shared.0.info().state() == FrameState::Parked;
        if collected {
            shared.0.change(&[FrameState::Parked], FrameInfo::INTERIOR);
            shared.1.unpark(1);
        }
        freer.join().unwrap();
        let (state, parked) = (shared.0.info().state(), shared.1.parked_pages());
        assert_eq!((state, parked), if collected { (FrameState::Interior, 0) } else { (FrameState::Parked, 1) });
        assert_eq!(shared.1.free_pages(), 7, "a park never touches the free half");
    });
}
