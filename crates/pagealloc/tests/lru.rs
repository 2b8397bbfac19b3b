//! The LRU lists: hand-computed orders, every error, a property test of random operations
//! on several CPUs in all three commit modes against an independent model (and against each
//! other), and real threads racing in each mode.

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

mod common;

use std::collections::VecDeque;

use common::proptest_cases;
use pagealloc::lru::{Lru, LruCommit, LruConfig, LruError, LruList, LruPage, LruSpan};
use pagealloc::platform::TestPlatform;
use proptest::prelude::*;

const MODES: [LruCommit; 3] = [LruCommit::Classic, LruCommit::ScaledRemoval, LruCommit::Splice];
/// Two nodes of 24 pages each (pages 0..24 on node 0, 24..48 on node 1).
const SPANS: [LruSpan; 2] = [LruSpan { node: 0, zone: 0, pages: 24 }, LruSpan { node: 1, zone: 1, pages: 24 }];
const PAGES: u32 = 48;
const CPUS: usize = 3;

fn lru(commit: LruCommit, batch_pages: u8) -> Lru<TestPlatform> {
    Lru::new(&SPANS, CPUS, LruConfig { batch_pages, commit, batch_locks: 4 }).unwrap()
}

fn ids(pages: Vec<LruPage>) -> Vec<u32> {
    pages.into_iter().map(|page| page.0).collect()
}

#[test]
fn a_flushed_batch_lands_newest_first_and_reclaim_takes_the_oldest() {
    for commit in MODES {
        let platform = TestPlatform::new(CPUS);
        let lru = lru(commit, 3);
        for page in [5, 6] {
            lru.add(&platform, LruPage(page), LruList::InactiveFile).unwrap();
        }
        assert_eq!((lru.pages(0, LruList::InactiveFile), lru.pending_pages(&platform)), (0, 2), "{commit:?}");
        lru.add(&platform, LruPage(7), LruList::ActiveAnon).unwrap();
        assert_eq!(lru.pending_pages(&platform), 0, "the third add flushed");
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::InactiveFile)), [6, 5]);
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::ActiveAnon)), [7]);
        // Rotation puts a page at the tail of its inactive list: reclaim takes it first.
        lru.rotate(&platform, LruPage(6)).unwrap();
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::InactiveFile)), [5, 6]);
        lru.activate(&platform, LruPage(5)).unwrap();
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::ActiveFile)), [5]);
        let mut out = Vec::new();
        assert_eq!(lru.isolate(&platform, 0, LruList::ActiveAnon, 5, &mut out), 1);
        assert_eq!(ids(out.clone()), [7]);
        lru.putback(&platform, LruPage(7), LruList::InactiveAnon).unwrap();
        lru.delete_batch(&platform, &[LruPage(6), LruPage(7)]).unwrap();
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::InactiveFile)), Vec::<u32>::new());
        let stats = lru.stats();
        assert_eq!((stats.adds, stats.flushes, stats.deletes, stats.isolated), (3, 1, 2, 1));
        assert_eq!((stats.rotations, stats.activations), (1, 1));
        lru.check_invariants(&platform).unwrap();
    }
}

#[test]
fn a_pending_page_can_be_deleted_or_activated_before_its_flush() {
    for commit in MODES {
        let platform = TestPlatform::new(CPUS);
        let lru = lru(commit, 4);
        for page in [1, 2, 3] {
            lru.add(&platform, LruPage(page), LruList::InactiveAnon).unwrap();
        }
        lru.delete(&platform, LruPage(2)).unwrap();
        lru.activate(&platform, LruPage(3)).unwrap();
        lru.drain_all(&platform);
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::InactiveAnon)), [1], "{commit:?}");
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::ActiveAnon)), [3]);
        lru.check_invariants(&platform).unwrap();
    }
}

#[test]
fn every_misuse_is_an_error_and_changes_nothing() {
    for commit in MODES {
        let platform = TestPlatform::new(CPUS);
        let lru = lru(commit, 2);
        assert_eq!(
            lru.add(&platform, LruPage(PAGES), LruList::ActiveAnon),
            Err(LruError::PageOutOfRange { page: 48, pages: 48 })
        );
        lru.add(&platform, LruPage(1), LruList::ActiveAnon).unwrap();
        assert_eq!(
            lru.add(&platform, LruPage(1), LruList::InactiveAnon),
            Err(LruError::AlreadyOnLru { page: 1 }),
            "pending"
        );
        lru.add(&platform, LruPage(2), LruList::ActiveAnon).unwrap();
        assert_eq!(
            lru.add(&platform, LruPage(2), LruList::ActiveAnon),
            Err(LruError::AlreadyOnLru { page: 2 }),
            "listed"
        );
        assert_eq!(lru.delete(&platform, LruPage(9)), Err(LruError::NotOnLru { page: 9 }));
        assert_eq!(lru.rotate(&platform, LruPage(9)), Err(LruError::NotOnLru { page: 9 }));
        assert_eq!(lru.activate(&platform, LruPage(9)), Err(LruError::NotOnLru { page: 9 }));
        assert_eq!(lru.putback(&platform, LruPage(1), LruList::ActiveAnon), Err(LruError::NotIsolated { page: 1 }));
        assert_eq!(lru.delete_batch(&platform, &[LruPage(1), LruPage(9)]), Err(LruError::NotOnLru { page: 9 }));
        assert_eq!(ids(lru.list_pages(&platform, 0, LruList::ActiveAnon)), [2], "page 1 went, 9 changed nothing");
        lru.check_invariants(&platform).unwrap();
        for config in [
            LruConfig { batch_pages: 0, commit, batch_locks: 1 },
            LruConfig { batch_pages: 65, commit, batch_locks: 1 },
            LruConfig { batch_pages: 14, commit, batch_locks: 0 },
        ] {
            assert!(matches!(Lru::<TestPlatform>::new(&SPANS, CPUS, config), Err(LruError::InvalidConfig(_))));
        }
    }
}

/// An independent model: per (node, list) a deque with the head in front, per CPU the
/// pending pages with their lists.
#[derive(Default, Clone)]
struct Model {
    lists: [[VecDeque<u32>; 4]; 2],
    pending: [Vec<(u32, LruList)>; CPUS],
    isolated: Vec<u32>,
}

impl Model {
    fn node(page: u32) -> usize {
        (page / 24) as usize
    }
    fn listed(&self, page: u32) -> Option<(usize, usize)> {
        let node = Self::node(page);
        (0..4).find_map(|list| self.lists[node][list].iter().position(|&p| p == page).map(|at| (list, at)))
    }
    fn pending_at(&self, page: u32) -> Option<(usize, usize)> {
        (0..CPUS).find_map(|cpu| self.pending[cpu].iter().position(|&(p, _)| p == page).map(|at| (cpu, at)))
    }
    fn on_lru(&self, page: u32) -> bool {
        self.listed(page).is_some() || self.pending_at(page).is_some() || self.isolated.contains(&page)
    }
    fn flush(&mut self, cpu: usize) {
        for (page, list) in std::mem::take(&mut self.pending[cpu]) {
            self.lists[Self::node(page)][list.index()].push_front(page);
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add { cpu: usize, page: u32, list: usize },
    Delete { cpu: usize, page: u32 },
    DeleteBatch { cpu: usize, first: u32, count: u32 },
    Activate { page: u32 },
    Rotate { page: u32 },
    Isolate { node: u16, list: usize, max: usize },
    Putback { pick: usize, list: usize },
    Drain { cpu: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..CPUS, 0..PAGES, 0..4usize).prop_map(|(cpu, page, list)| Op::Add { cpu, page, list }),
        2 => (0..CPUS, 0..PAGES).prop_map(|(cpu, page)| Op::Delete { cpu, page }),
        1 => (0..CPUS, 0..PAGES, 1..8u32).prop_map(|(cpu, first, count)| Op::DeleteBatch { cpu, first, count }),
        1 => (0..PAGES).prop_map(|page| Op::Activate { page }),
        1 => (0..PAGES).prop_map(|page| Op::Rotate { page }),
        1 => (0..2u16, 0..4usize, 0..5usize).prop_map(|(node, list, max)| Op::Isolate { node, list, max }),
        1 => (any::<usize>(), 0..4usize).prop_map(|(pick, list)| Op::Putback { pick, list }),
        1 => (0..CPUS).prop_map(|cpu| Op::Drain { cpu }),
    ]
}

/// Applies `op` to the model, returning whether the LRU must accept it.
fn apply_model(model: &mut Model, op: &Op, batch_pages: usize) -> bool {
    match *op {
        Op::Add { cpu, page, list } => {
            if model.on_lru(page) {
                return false;
            }
            model.pending[cpu].push((page, LruList::ALL[list]));
            if model.pending[cpu].len() >= batch_pages {
                model.flush(cpu);
            }
            true
        }
        Op::Delete { page, .. } => model_delete(model, page),
        Op::DeleteBatch { first, count, .. } => {
            (first..(first + count).min(PAGES)).all(|page| model_delete(model, page))
        }
        Op::Activate { page } => {
            if let Some((cpu, at)) = model.pending_at(page) {
                let list = model.pending[cpu][at].1;
                model.pending[cpu][at].1 = list.with_active(true);
            } else if let Some((list, at)) = model.listed(page) {
                if !LruList::ALL[list].is_active() {
                    let node = Model::node(page);
                    model.lists[node][list].remove(at);
                    model.lists[node][LruList::ALL[list].with_active(true).index()].push_front(page);
                }
            } else {
                return false;
            }
            true
        }
        Op::Rotate { page } => {
            let Some((list, at)) = model.listed(page) else { return false };
            let node = Model::node(page);
            model.lists[node][list].remove(at);
            model.lists[node][LruList::ALL[list].with_active(false).index()].push_back(page);
            true
        }
        Op::Isolate { node, list, max } => {
            for _ in 0..max {
                let Some(page) = model.lists[node as usize][list].pop_back() else { break };
                model.isolated.push(page);
            }
            true
        }
        Op::Putback { pick, list } => {
            if model.isolated.is_empty() {
                return true;
            }
            let page = model.isolated.remove(pick % model.isolated.len());
            model.lists[Model::node(page)][list].push_front(page);
            true
        }
        Op::Drain { cpu } => {
            model.flush(cpu);
            true
        }
    }
}

fn model_delete(model: &mut Model, page: u32) -> bool {
    if let Some((cpu, at)) = model.pending_at(page) {
        model.pending[cpu].remove(at);
    } else if let Some((list, at)) = model.listed(page) {
        model.lists[Model::node(page)][list].remove(at);
    } else if let Some(at) = model.isolated.iter().position(|&p| p == page) {
        model.isolated.remove(at);
    } else {
        return false;
    }
    true
}

fn apply_lru(lru: &Lru<TestPlatform>, platform: &TestPlatform, op: &Op, model: &Model) -> bool {
    match *op {
        Op::Add { cpu, page, list } => {
            platform.set_cpu(cpu);
            lru.add(platform, LruPage(page), LruList::ALL[list]).is_ok()
        }
        Op::Delete { cpu, page } => {
            platform.set_cpu(cpu);
            lru.delete(platform, LruPage(page)).is_ok()
        }
        Op::DeleteBatch { cpu, first, count } => {
            platform.set_cpu(cpu);
            let pages: Vec<LruPage> = (first..(first + count).min(PAGES)).map(LruPage).collect();
            lru.delete_batch(platform, &pages).is_ok()
        }
        Op::Activate { page } => lru.activate(platform, LruPage(page)).is_ok(),
        Op::Rotate { page } => lru.rotate(platform, LruPage(page)).is_ok(),
        Op::Isolate { node, list, max } => {
            let mut out = Vec::new();
            lru.isolate(platform, node, LruList::ALL[list], max, &mut out);
            true
        }
        Op::Putback { pick, list } => {
            // The page the model picks: its isolated pages are in the order isolation took them.
            if model.isolated.is_empty() {
                return true;
            }
            let page = model.isolated[pick % model.isolated.len()];
            lru.putback(platform, LruPage(page), LruList::ALL[list]).is_ok()
        }
        Op::Drain { cpu } => {
            lru.drain_cpu(platform, cpu);
            true
        }
    }
}

fn lists(lru: &Lru<TestPlatform>, platform: &TestPlatform) -> Vec<Vec<u32>> {
    (0..2u16).flat_map(|node| LruList::ALL.map(|list| ids(lru.list_pages(platform, node, list)))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn random_operations_match_the_model_in_every_mode(
        ops in proptest::collection::vec(op(), 1..200),
        batch_pages in 1u8..6,
    ) {
        let platform = TestPlatform::new(CPUS);
        let lrus: Vec<_> = MODES.iter().map(|&commit| lru(commit, batch_pages)).collect();
        let mut model = Model::default();
        for op in &ops {
            let before = model.clone();
            let accepted = apply_model(&mut model, op, batch_pages as usize);
            for lru in &lrus {
                let result = apply_lru(lru, &platform, op, &before);
                prop_assert_eq!(result, accepted, "{:?} on {:?}", op, lru.config().commit);
                lru.check_invariants(&platform).map_err(|v| TestCaseError::fail(v.to_string()))?;
            }
            let expected: Vec<Vec<u32>> = model.lists.iter().flat_map(|node| node.iter().map(|list| list.iter().copied().collect())).collect();
            for lru in &lrus {
                prop_assert_eq!(lists(lru, &platform), expected.clone(), "{:?} after {:?}", lru.config().commit, op);
            }
        }
    }
}

/// Real threads race adds (through their CPUs' batches), batched removals, isolation and
/// putback on shared lists in each mode; afterwards every invariant holds and every page a
/// thread still holds is on the LRU exactly once.
#[cfg(feature = "std")]
#[test]
fn real_threads_keep_the_lists_consistent_in_every_mode() {
    use pagealloc::platform::StdPlatform;
    const THREADS: u32 = 4;
    const PER_THREAD: u32 = 2_000;
    let spans = [LruSpan { node: 0, zone: 0, pages: THREADS * PER_THREAD }];
    for commit in MODES {
        let platform = StdPlatform::with_cpus(4);
        let lru: Lru<StdPlatform> = Lru::new(&spans, 4, LruConfig { batch_pages: 15, commit, batch_locks: 8 }).unwrap();
        let kept: u64 = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|thread| {
                    let (lru, platform) = (&lru, &platform);
                    scope.spawn(move || {
                        let pages: Vec<LruPage> =
                            (thread * PER_THREAD..(thread + 1) * PER_THREAD).map(LruPage).collect();
                        let mut kept = 0u64;
                        for round in 0..4 {
                            for &page in &pages {
                                lru.add(platform, page, LruList::ActiveAnon).unwrap();
                            }
                            // Take every other page back off, in release_pages()-sized runs.
                            let (off, on): (Vec<LruPage>, Vec<LruPage>) =
                                pages.iter().partition(|page| page.0 % 2 == 0);
                            for chunk in off.chunks(32) {
                                lru.delete_batch(platform, chunk).unwrap();
                            }
                            if round < 3 {
                                lru.delete_batch(platform, &on).unwrap();
                            } else {
                                kept = on.len() as u64;
                            }
                            // Reclaim's view: isolate a few from the tail and put them back.
                            let mut isolated = Vec::new();
                            lru.isolate(platform, 0, LruList::ActiveAnon, 8, &mut isolated);
                            // Another thread's page may have been deleted by its owner
                            // (and even added again) since: then it is not isolated any more.
                            for page in isolated {
                                match lru.putback(platform, page, LruList::ActiveAnon) {
                                    Ok(()) | Err(LruError::NotIsolated { .. }) => {}
                                    Err(error) => panic!("{error}"),
                                }
                            }
                        }
                        kept
                    })
                })
                .collect();
            handles.into_iter().map(|handle| handle.join().unwrap()).sum()
        });
        lru.drain_all(&platform);
        lru.check_invariants(&platform).unwrap();
        assert_eq!(lru.pages(0, LruList::ActiveAnon), kept, "{commit:?}");
        assert_eq!(lru.stats().adds, u64::from(THREADS * PER_THREAD) * 4);
    }
}
