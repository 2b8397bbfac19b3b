//! Moving pages within a node's lists: isolation from the tail for reclaim and putback
//! (mirrors isolate_lru_folios() and folio_putback_lru()), rotation to the inactive tail
//! (folio_rotate_reclaimable()) and activation (folio_activate()). Each holds the node lock
//! and, in the scaled modes, every batch lock of the node, so no removal runs meanwhile.

use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use super::links::PageState;
use super::{Lru, LruError, LruList, LruPage};
use crate::platform::Platform;
use crate::sync::PlatformGuard;

impl<P: Platform> Lru<P> {
    /// The node lock and, scaled, every batch lock (in id order).
    pub(super) fn lock_node_exclusively<'a>(&'a self, platform: &'a P, node: u16) -> Vec<PlatformGuard<'a, P, ()>> {
        let state = &self.nodes[node as usize];
        let mut guards = alloc::vec![state.lock.lock(platform)];
        if self.scaled() {
            guards.extend(state.batch_locks.iter().map(|lock| lock.lock(platform)));
        }
        guards
    }

    /// A batch-lock id for a page listed now (any id is valid while every lock is held).
    fn next_lock_id(&self, node: u16) -> u32 {
        self.nodes[node as usize].next_batch_lock.fetch_add(1, Relaxed) % u32::from(self.config.batch_locks)
    }

    /// Takes up to `max` pages from the tail of `node`'s `list`, oldest first, into `out`;
    /// they are isolated until put back or deleted. Returns how many.
    pub fn isolate(&self, platform: &P, node: u16, list: LruList, max: usize, out: &mut Vec<LruPage>) -> usize {
        if node as usize >= self.nodes.len() {
            return 0;
        }
        let _locks = self.lock_node_exclusively(platform, node);
        let head = self.links.head(node, list);
        let mut taken = 0;
        while taken < max {
            let page = self.links.prev(head);
            if page == head {
                break;
            }
            let state = self.links.state(page);
            debug_assert!(matches!(state, PageState::Listed { list: on, .. } if on == list), "{page}: {state:?}");
            self.links.unlink(platform, page);
            self.links.set_state(page, state, PageState::Isolated);
            out.push(LruPage(page));
            taken += 1;
        }
        self.nodes[node as usize].sizes[list.index()].fetch_sub(taken as u64, Relaxed);
        self.counters.isolated.fetch_add(taken as u64, Relaxed);
        taken
    }

    /// Returns an isolated page to the head of `list` on its node.
    pub fn putback(&self, platform: &P, page: LruPage, list: LruList) -> Result<(), LruError> {
        let page = self.check_page(page)?;
        let node = self.node_of(page);
        let _locks = self.lock_node_exclusively(platform, node);
        // A delete of an isolated page takes no lock: claim the page before linking it, so
        // that a page deleted (and perhaps freed or added again) meanwhile is not listed.
        // A racing delete that now sees it listed waits for the locks held here.
        let lock = self.next_lock_id(node);
        if !self.links.transition(page, PageState::Isolated, PageState::Listed { list, lock }) {
            return Err(LruError::NotIsolated { page });
        }
        self.links.insert_after(platform, self.links.head(node, list), page);
        self.nodes[node as usize].sizes[list.index()].fetch_add(1, Relaxed);
        Ok(())
    }

    /// Moves a listed page to the tail of its kind's inactive list, to be reclaimed next.
    pub fn rotate(&self, platform: &P, page: LruPage) -> Result<(), LruError> {
        let page = self.check_page(page)?;
        let node = self.node_of(page);
        let _locks = self.lock_node_exclusively(platform, node);
        let state = self.links.state(page);
        let PageState::Listed { list, lock } = state else { return Err(LruError::NotOnLru { page }) };
        let inactive = list.with_active(false);
        self.links.unlink(platform, page);
        let tail = self.links.prev(self.links.head(node, inactive));
        self.links.insert_after(platform, tail, page);
        self.links.set_state(page, state, PageState::Listed { list: inactive, lock });
        let sizes = &self.nodes[node as usize].sizes;
        sizes[list.index()].fetch_sub(1, Relaxed);
        sizes[inactive.index()].fetch_add(1, Relaxed);
        self.counters.rotations.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Moves an inactive page to the head of its kind's active list; a pending page is
    /// marked to land there. An active page stays.
    pub fn activate(&self, platform: &P, page: LruPage) -> Result<(), LruError> {
        let id = self.check_page(page)?;
        let node = self.node_of(id);
        loop {
            let state = self.links.state(id);
            match state {
                PageState::Off | PageState::Isolated => return Err(LruError::NotOnLru { page: id }),
                PageState::Pending { cpu, list } => {
                    let _batch = self.cpus[cpu as usize].lock(platform);
                    let active = PageState::Pending { cpu, list: list.with_active(true) };
                    if self.links.transition(id, state, active) {
                        break;
                    }
                }
                PageState::Listed { .. } => {
                    let _locks = self.lock_node_exclusively(platform, node);
                    let state = self.links.state(id);
                    let PageState::Listed { list, lock } = state else { continue };
                    if !list.is_active() {
                        let active = list.with_active(true);
                        self.links.unlink(platform, id);
                        self.links.insert_after(platform, self.links.head(node, active), id);
                        self.links.set_state(id, state, PageState::Listed { list: active, lock });
                        let sizes = &self.nodes[node as usize].sizes;
                        sizes[list.index()].fetch_sub(1, Relaxed);
                        sizes[active.index()].fetch_add(1, Relaxed);
                    }
                    break;
                }
            }
        }
        self.counters.activations.fetch_add(1, Relaxed);
        Ok(())
    }
}
