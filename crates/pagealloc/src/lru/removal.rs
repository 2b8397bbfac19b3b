//! Taking pages off the LRU (mirrors lruvec_del_folio() under the LRU lock, and
//! release_pages() for many): from a CPU's add batch if pending, else from its list under
//! the node lock (classic) or under batch locks (scaled modes; protocol in the module doc).

use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use super::links::PageState;
use super::{Lru, LruError, LruPage, REMOVAL_LOCK_BATCH};
use crate::platform::Platform;
use crate::sync::PlatformGuard;

impl<P: Platform> Lru<P> {
    /// Takes `page` off the LRU: out of its CPU's add batch if pending, off its list if
    /// listed; an isolated page just leaves the LRU.
    pub fn delete(&self, platform: &P, page: LruPage) -> Result<(), LruError> {
        let page = self.check_page(page)?;
        loop {
            let state = self.links.state(page);
            let done = match state {
                PageState::Off => return Err(LruError::NotOnLru { page }),
                PageState::Isolated => self.links.transition(page, state, PageState::Off),
                PageState::Pending { cpu, .. } => self.delete_pending(platform, page, cpu),
                PageState::Listed { .. } if self.scaled() => self.delete_scaled(platform, page),
                PageState::Listed { .. } => {
                    let _node = self.nodes[self.node_of(page) as usize].lock.lock(platform);
                    self.delete_listed_locked(platform, page)
                }
            };
            // Not done: the page moved meanwhile (flushed, say); look again.
            if done {
                self.counters.deletes.fetch_add(1, Relaxed);
                return Ok(());
            }
        }
    }

    /// Takes many pages off (munmap's release_pages()): classic takes the node lock once per
    /// run of up to 32 listed pages of one node; the scaled modes take each page's batch
    /// locks. Stops at the first page not on the LRU, with the pages before it taken off.
    pub fn delete_batch(&self, platform: &P, pages: &[LruPage]) -> Result<(), LruError> {
        if self.scaled() {
            return pages.iter().try_for_each(|&page| self.delete(platform, page));
        }
        let mut held: Option<(u16, usize, PlatformGuard<'_, P, ()>)> = None;
        for &page in pages {
            let id = self.check_page(page)?;
            let node = self.node_of(id);
            if !matches!(self.links.state(id), PageState::Listed { .. }) {
                held = None;
                self.delete(platform, page)?;
                continue;
            }
            let relock = !matches!(&held, Some((locked, count, _)) if *locked == node && *count < REMOVAL_LOCK_BATCH);
            if relock {
                // Release before relocking: the next run may be on the same node.
                drop(held.take());
                held = Some((node, 0, self.nodes[node as usize].lock.lock(platform)));
            }
            if let Some((_, count, _)) = held.as_mut() {
                *count += 1;
            }
            if !self.delete_listed_locked(platform, id) {
                // Isolated by another CPU since the state was read: the general path.
                drop(held.take());
                self.delete(platform, page)?;
                continue;
            }
            self.counters.deletes.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    /// Drops a pending page from `cpu`'s batch; false if it left the batch meanwhile.
    fn delete_pending(&self, platform: &P, page: u32, cpu: u32) -> bool {
        let mut batch = self.cpus[cpu as usize].lock(platform);
        let state = self.links.state(page);
        if !matches!(state, PageState::Pending { cpu: owner, .. } if owner == cpu) {
            return false;
        }
        let len = batch.len as usize;
        let position = batch.pages[..len].iter().position(|&p| p == page).expect("a pending page is in its batch");
        // Keep the batch's order: it is the order the pages reach the list.
        batch.pages.copy_within(position + 1..len, position);
        batch.len -= 1;
        self.links.set_state(page, state, PageState::Off);
        true
    }

    /// Unlinks a listed page with the node lock held (classic); false if it is not listed.
    fn delete_listed_locked(&self, platform: &P, page: u32) -> bool {
        let state = self.links.state(page);
        let PageState::Listed { list, .. } = state else { return false };
        self.links.unlink(platform, page);
        self.links.set_state(page, state, PageState::Off);
        self.nodes[self.node_of(page) as usize].sizes[list.index()].fetch_sub(1, Relaxed);
        true
    }

    /// Unlinks a listed page under the batch locks of it and its neighbours (and the node
    /// lock if a neighbour is a head); false if it is not listed any more.
    fn delete_scaled(&self, platform: &P, page: u32) -> bool {
        let node = self.node_of(page);
        let state_of_node = &self.nodes[node as usize];
        loop {
            let state = self.links.state(page);
            let PageState::Listed { list, lock } = state else { return false };
            let (prev, next) = (self.links.prev(page), self.links.next(page));
            let needs_node = self.links.is_head(prev) || self.links.is_head(next);
            let mut ids = alloc::vec![lock];
            for neighbour in [prev, next] {
                if let PageState::Listed { lock, .. } = self.links.state(neighbour) {
                    ids.push(lock);
                }
            }
            ids.sort_unstable();
            ids.dedup();
            let _node = needs_node.then(|| state_of_node.lock.lock(platform));
            let _locks: Vec<_> = ids.iter().map(|&id| state_of_node.batch_locks[id as usize].lock(platform)).collect();
            // Re-validate under the locks: the page, its links, and the neighbours' locks.
            let neighbour_ok = |id: u32| match self.links.state(id) {
                PageState::Listed { lock, .. } => ids.contains(&lock),
                _ => self.links.is_head(id) && needs_node,
            };
            let valid = self.links.state(page) == state
                && self.links.prev(page) == prev
                && self.links.next(page) == next
                && self.links.next(prev) == page
                && self.links.prev(next) == page
                && neighbour_ok(prev)
                && neighbour_ok(next);
            if !valid {
                continue;
            }
            self.links.unlink(platform, page);
            self.links.set_state(page, state, PageState::Off);
            state_of_node.sizes[list.index()].fetch_sub(1, Relaxed);
            return true;
        }
    }
}
