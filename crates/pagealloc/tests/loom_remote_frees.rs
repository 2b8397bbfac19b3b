//! Loom model of the real hand-over stack (`pagealloc::remote_frees`, which frees into
//! another CPU's arena go through under the `pagealloc` preset) on loom's atomics: two CPUs
//! push chains while the owner takes, and every block comes out exactly once, with what its
//! pusher wrote before the push visible to the taker. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p pagealloc --test loom_remote_frees --release`.

#![cfg(loom)]

use std::sync::atomic::Ordering::Relaxed;

use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU32;
use loom::sync::Arc;
use pagealloc::frame::NIL;
use pagealloc::remote_frees::{Chain, ChainLinks, RemoteFrees};

/// Four blocks: their `next` links, and a word each pusher writes before pushing (a
/// stand-in for the record a free writes).
struct Blocks {
    next: Vec<AtomicU32>,
    written: Vec<UnsafeCell<u32>>,
}

impl ChainLinks for Blocks {
    type Word = AtomicU32;
    fn next(&self, index: u32) -> &AtomicU32 {
        &self.next[index as usize]
    }
}

/// Walks a taken chain, reading each block's word; returns the blocks in order.
fn walk(blocks: &Blocks, mut index: u32) -> Vec<u32> {
    let mut seen = Vec::new();
    while index != NIL {
        let written = blocks.written[index as usize].with(|word| unsafe { *word });
        assert_eq!(written, index + 100, "block {index}'s word not visible to the taker");
        seen.push(index);
        index = blocks.next[index as usize].load(Relaxed);
    }
    seen
}

#[test]
fn concurrent_pushes_and_a_take_hand_over_every_block_once() {
    loom::model(|| {
        let blocks = Arc::new(Blocks {
            next: (0..4).map(|_| AtomicU32::new(NIL)).collect(),
            written: (0..4).map(|_| UnsafeCell::new(0)).collect(),
        });
        let stack = Arc::new(RemoteFrees::<AtomicU32>::default());
        // Two CPUs, each pushing a chain of two blocks (`head -> tail`), one page each.
        let pushers: Vec<_> = [(0u32, 1u32), (2, 3)]
            .into_iter()
            .map(|(head, tail)| {
                let (blocks, stack) = (blocks.clone(), stack.clone());
                loom::thread::spawn(move || {
                    for index in [head, tail] {
                        blocks.written[index as usize].with_mut(|word| unsafe { *word = index + 100 });
                    }
                    blocks.next[head as usize].store(tail, Relaxed);
                    stack.push(Chain { head, tail, pages: 2 }, &*blocks);
                })
            })
            .collect();
        // The owner takes concurrently, and again once the pushers are done.
        let mut seen = Vec::new();
        EXECUTIONS.fetch_add(1, Relaxed);
        if let Some(head) = stack.take() {
            CONCURRENT_TAKES.fetch_add(1, Relaxed);
            let taken = walk(&blocks, head);
            stack.released(taken.len() as u32);
            seen.extend(taken);
        }
        for pusher in pushers {
            pusher.join().unwrap();
        }
        if let Some(head) = stack.take() {
            let taken = walk(&blocks, head);
            stack.released(taken.len() as u32);
            seen.extend(taken);
        }
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3], "every block exactly once");
        assert_eq!(stack.pending_pages(), 0);
        assert!(!stack.is_pending());
    });
    // A model whose owner never took a chain mid-push proves nothing about the orderings.
    let (executions, concurrent) = (EXECUTIONS.load(Relaxed), CONCURRENT_TAKES.load(Relaxed));
    assert!(concurrent > 0, "no execution took a chain while the pushers ran ({executions} executions)");
}

static EXECUTIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static CONCURRENT_TAKES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
