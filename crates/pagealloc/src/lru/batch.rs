//! Per-CPU add batches and their flush onto the lists (mirrors folio_add_lru(),
//! folio_batch_move_lru(), lru_add_fn() and lru_add_drain_cpu()).

use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use super::links::PageState;
use super::{CpuBatch, Lru, LruCommit, LruError, LruList, LruPage, NR_LRU_LISTS};
use crate::platform::Platform;
use crate::sync::PlatformGuard;

impl<P: Platform> Lru<P> {
    /// Puts `page` in the current CPU's add batch, bound for `list`; a full batch is
    /// flushed (mirrors folio_add_lru()).
    pub fn add(&self, platform: &P, page: LruPage, list: LruList) -> Result<(), LruError> {
        let page = self.check_page(page)?;
        // A CPU id past the table breaks the Platform contract; any batch stays correct.
        let cpu = platform.current_cpu() % self.cpus.len();
        let mut batch = self.cpus[cpu].lock(platform);
        let pending = PageState::Pending { cpu: cpu as u32, list };
        if !self.links.transition(page, PageState::Off, pending) {
            return Err(LruError::AlreadyOnLru { page });
        }
        debug_assert!(batch.len < self.config.batch_pages);
        let len = batch.len as usize;
        batch.pages[len] = page;
        batch.len += 1;
        self.counters.adds.fetch_add(1, Relaxed);
        if batch.len >= self.config.batch_pages {
            self.flush(platform, cpu as u32, &mut batch);
        }
        Ok(())
    }

    /// Flushes `cpu`'s add batch (mirrors lru_add_drain_cpu()).
    pub fn drain_cpu(&self, platform: &P, cpu: usize) {
        let Some(slot) = self.cpus.get(cpu) else { return };
        let mut batch = slot.lock(platform);
        if batch.len > 0 {
            self.flush(platform, cpu as u32, &mut batch);
        }
    }

    /// Flushes every CPU's add batch (mirrors lru_add_drain_all()).
    pub fn drain_all(&self, platform: &P) {
        for cpu in 0..self.cpus.len() {
            self.drain_cpu(platform, cpu);
        }
    }

    /// Moves a batch onto the lists, a run of pages of one node per lock hold (the kernel
    /// relocks when the lruvec changes).
    fn flush(&self, platform: &P, cpu: u32, batch: &mut PlatformGuard<'_, P, CpuBatch>) {
        self.counters.flushes.fetch_add(1, Relaxed);
        let (all_pages, len) = (batch.pages, batch.len as usize);
        let pages = &all_pages[..len];
        let mut start = 0;
        while start < pages.len() {
            let node = self.node_of(pages[start]);
            let end = start + pages[start..].iter().take_while(|&&page| self.node_of(page) == node).count();
            match self.config.commit {
                LruCommit::Classic | LruCommit::ScaledRemoval => {
                    self.flush_each(platform, cpu, node, &pages[start..end])
                }
                LruCommit::Splice => self.flush_spliced(platform, cpu, node, &pages[start..end]),
            }
            start = end;
        }
        batch.len = 0;
    }

    /// The list a pending page is bound for.
    fn pending_list(&self, page: u32, cpu: u32) -> LruList {
        match self.links.state(page) {
            PageState::Pending { cpu: owner, list } if owner == cpu => list,
            other => unreachable!("page {page} in cpu {cpu}'s batch is {other:?}"),
        }
    }

    /// Adds page by page under the node lock (and, scaled, the batch locks of the new pages
    /// and of the lists' first pages): each add writes the head, the page and the old first.
    fn flush_each(&self, platform: &P, cpu: u32, node: u16, pages: &[u32]) {
        let lists: Vec<LruList> = pages.iter().map(|&page| self.pending_list(page, cpu)).collect();
        let _node_lock = self.nodes[node as usize].lock.lock(platform);
        let (lock, _batch_locks) = self.lock_for_adds(platform, node, &lists);
        for (&page, &list) in pages.iter().zip(&lists) {
            self.links.insert_after(platform, self.links.head(node, list), page);
            self.links.set_state(page, PageState::Pending { cpu, list }, PageState::Listed { list, lock });
            self.nodes[node as usize].sizes[list.index()].fetch_add(1, Relaxed);
        }
    }

    /// Prepares one chain per target list outside the locks, newest page first as page by
    /// page adds would leave them, then splices each chain in one hold.
    fn flush_spliced(&self, platform: &P, cpu: u32, node: u16, pages: &[u32]) {
        let lists: Vec<LruList> = pages.iter().map(|&page| self.pending_list(page, cpu)).collect();
        // (first, last, pages) per list; `last` starts at the list's head, so a prev link
        // written here always names a real entry (an unlocked reader may see it).
        let mut chains: [(u32, u32, u64); NR_LRU_LISTS] =
            core::array::from_fn(|index| (0, self.links.head(node, LruList::ALL[index]), 0));
        for (&page, &list) in pages.iter().zip(&lists).rev() {
            let chain = &mut chains[list.index()];
            if chain.2 == 0 {
                chain.0 = page;
            } else {
                self.links.set_next(platform, chain.1, page);
            }
            self.links.set_prev(platform, page, chain.1);
            chain.1 = page;
            chain.2 += 1;
        }
        let _node_lock = self.nodes[node as usize].lock.lock(platform);
        let (lock, _batch_locks) = self.lock_for_adds(platform, node, &lists);
        for (list, &(first, last, count)) in super::LruList::ALL.iter().zip(&chains) {
            if count == 0 {
                continue;
            }
            self.links.splice_after(platform, self.links.head(node, *list), first, last);
            self.nodes[node as usize].sizes[list.index()].fetch_add(count, Relaxed);
        }
        for (&page, &list) in pages.iter().zip(&lists) {
            self.links.set_state(page, PageState::Pending { cpu, list }, PageState::Listed { list, lock });
        }
    }

    /// With the node lock held: the batch lock id for pages added now and, in the scaled
    /// modes, the guards of that lock and of the first pages of `lists` (whose prev links an
    /// add writes), taken in increasing id order.
    fn lock_for_adds<'a>(
        &'a self,
        platform: &'a P,
        node: u16,
        lists: &[LruList],
    ) -> (u32, Vec<PlatformGuard<'a, P, ()>>) {
        if !self.scaled() {
            return (0, Vec::new());
        }
        let state = &self.nodes[node as usize];
        let lock = state.next_batch_lock.fetch_add(1, Relaxed) % u32::from(self.config.batch_locks);
        let mut ids = alloc::vec![lock];
        for list in lists {
            let first = self.links.next(self.links.head(node, *list));
            // A head reads as Off: no batch lock covers it.
            if let PageState::Listed { lock, .. } = self.links.state(first) {
                ids.push(lock);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        (lock, ids.into_iter().map(|id| state.batch_locks[id as usize].lock(platform)).collect())
    }
}
