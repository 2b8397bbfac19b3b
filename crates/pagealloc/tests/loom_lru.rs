//! Loom models of the LRU's splice path with scaled removal, running the real code: a CPU
//! splices a prepared chain onto a list under the node lock and batch locks while another
//! splices too, or takes a listed page off under batch locks (and the node lock when a
//! neighbour is the list head). Loom explores the interleavings of every lock operation;
//! afterwards the list must hold exactly the pages added and not deleted, each once, with
//! every invariant intact, and no interleaving may deadlock. Under `cfg(loom)` the links
//! are loom atomics too, so loom may switch threads at every link read and write: moving
//! the splice before the locks fails two of these models (tried).

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod loom_lock;

use std::cell::Cell;

use loom::sync::Arc;
use loom_lock::LoomLock;
use pagealloc::lru::{Lru, LruCommit, LruConfig, LruList, LruPage, LruSpan};
use pagealloc::platform::Platform;

loom::thread_local! {
    static CPU: Cell<usize> = Cell::new(0);
}

/// Two CPUs; each model thread says which one it runs on.
struct LoomPlatform;

impl Platform for LoomPlatform {
    type RawLock = LoomLock;
    type PcpLock = LoomLock;

    fn current_cpu(&self) -> usize {
        CPU.with(Cell::get)
    }
    fn nr_cpus(&self) -> usize {
        2
    }
    fn now_ns(&self) -> u64 {
        0
    }
}

/// Splice-mode LRU over 8 pages of one node on two CPUs, with batches of two and two batch
/// locks; pages 0 and 1 are listed before any model thread starts (head, 1, 0), so every
/// lock the model takes exists before other threads can see it.
fn listed_lru(platform: &LoomPlatform) -> Arc<Lru<LoomPlatform>> {
    let config = LruConfig { batch_pages: 2, commit: LruCommit::Splice, batch_locks: 2 };
    let lru = Arc::new(Lru::new(&[LruSpan { node: 0, zone: 0, pages: 8 }], 2, config).unwrap());
    for page in [0, 1] {
        lru.add(platform, LruPage(page), LruList::InactiveAnon).unwrap();
    }
    lru.check_invariants(platform).unwrap();
    lru
}

/// A model thread on `cpu` that adds `pages` (a full batch: one splice).
fn flusher(lru: &Arc<Lru<LoomPlatform>>, cpu: usize, pages: [u32; 2]) -> loom::thread::JoinHandle<()> {
    let lru = lru.clone();
    loom::thread::spawn(move || {
        CPU.with(|current| current.set(cpu));
        for page in pages {
            lru.add(&LoomPlatform, LruPage(page), LruList::InactiveAnon).unwrap();
        }
    })
}

/// After the threads: invariants hold and the list holds exactly `expected`, each once.
fn assert_listed(lru: &Lru<LoomPlatform>, expected: &[u32]) {
    lru.check_invariants(&LoomPlatform).unwrap();
    let mut listed: Vec<u32> =
        lru.list_pages(&LoomPlatform, 0, LruList::InactiveAnon).into_iter().map(|page| page.0).collect();
    listed.sort_unstable();
    assert_eq!(listed, expected);
}

fn model() -> loom::model::Builder {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model
}

/// A splice onto the list races a removal of its first page: before the splice the removal
/// needs the node lock (its prev is the head), after it only batch locks; either way the
/// list ends whole.
#[test]
fn a_splice_and_a_removal_of_the_first_page_keep_the_list_whole() {
    model().check(|| {
        let lru = listed_lru(&LoomPlatform);
        let splicer = flusher(&lru, 1, [2, 3]);
        lru.delete(&LoomPlatform, LruPage(1)).unwrap();
        splicer.join().unwrap();
        assert_listed(&lru, &[0, 2, 3]);
    });
}

/// A splice races a removal of the last page (whose next is the head, so it takes the node
/// lock the splice also takes).
#[test]
fn a_splice_and_a_removal_of_the_last_page_keep_the_list_whole() {
    model().check(|| {
        let lru = listed_lru(&LoomPlatform);
        let splicer = flusher(&lru, 1, [2, 3]);
        lru.delete(&LoomPlatform, LruPage(0)).unwrap();
        splicer.join().unwrap();
        assert_listed(&lru, &[1, 2, 3]);
    });
}

/// Two CPUs splice onto the same list head at once.
#[test]
fn two_splices_onto_one_head_keep_the_list_whole() {
    model().check(|| {
        let lru = listed_lru(&LoomPlatform);
        let splicers = [flusher(&lru, 0, [2, 3]), flusher(&lru, 1, [4, 5])];
        for splicer in splicers {
            splicer.join().unwrap();
        }
        assert_listed(&lru, &[0, 1, 2, 3, 4, 5]);
    });
}

/// Two removals of neighbours under batch locks race: each locks the other's batch lock as
/// a neighbour's, so they serialise, and the re-validation catches the links the first one
/// changed.
#[test]
fn removals_of_two_neighbours_keep_the_list_whole() {
    model().check(|| {
        let lru = listed_lru(&LoomPlatform);
        for page in [2, 3] {
            lru.add(&LoomPlatform, LruPage(page), LruList::InactiveAnon).unwrap();
        }
        // head, 3, 2, 1, 0: pages 2 and 1 are neighbours with no head beside them.
        let remover = {
            let lru = lru.clone();
            loom::thread::spawn(move || {
                CPU.with(|current| current.set(1));
                lru.delete(&LoomPlatform, LruPage(2)).unwrap();
            })
        };
        lru.delete(&LoomPlatform, LruPage(1)).unwrap();
        remover.join().unwrap();
        assert_listed(&lru, &[0, 3]);
    });
}
