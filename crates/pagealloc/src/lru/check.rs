//! The LRU's invariant checker (like CONFIG_DEBUG_VM's list checks): every page is on at
//! most one list or batch, each list links the same pages both ways and matches its size,
//! and every state word agrees with where its page is.

use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use super::links::PageState;
use super::{Lru, LruList};
use crate::platform::Platform;

/// What the checker found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LruViolation {
    pub page: Option<u32>,
    pub what: String,
}

impl core::error::Error for LruViolation {}

impl core::fmt::Display for LruViolation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.page {
            Some(page) => write!(f, "LRU page {page}: {}", self.what),
            None => write!(f, "LRU: {}", self.what),
        }
    }
}

fn violation(page: Option<u32>, what: String) -> Result<(), LruViolation> {
    Err(LruViolation { page, what })
}

impl<P: Platform> Lru<P> {
    /// Checks every list and batch, holding every lock of the LRU (CPU batches, then each
    /// node's lock and batch locks).
    pub fn check_invariants(&self, platform: &P) -> Result<(), LruViolation> {
        let batches: Vec<_> = self.cpus.iter().map(|cpu| cpu.lock(platform)).collect();
        let mut seen = alloc::vec![false; self.links.pages as usize];
        for (cpu, batch) in batches.iter().enumerate() {
            for &page in &batch.pages[..batch.len as usize] {
                if core::mem::replace(&mut seen[page as usize], true) {
                    return violation(Some(page), alloc::format!("twice in the batches (cpu {cpu})"));
                }
                if !matches!(self.links.state(page), PageState::Pending { cpu: owner, .. } if owner as usize == cpu) {
                    return violation(
                        Some(page),
                        alloc::format!("in cpu {cpu}'s batch as {:?}", self.links.state(page)),
                    );
                }
            }
        }
        for node in 0..self.nodes.len() as u16 {
            let _locks = self.lock_node_exclusively(platform, node);
            for list in LruList::ALL {
                self.check_list(node, list, &mut seen)?;
            }
        }
        for (page, &listed) in seen.iter().enumerate() {
            let state = self.links.state(page as u32);
            let placed = matches!(state, PageState::Pending { .. } | PageState::Listed { .. });
            if placed != listed {
                return violation(
                    Some(page as u32),
                    alloc::format!("state {state:?} but found on a list or batch: {listed}"),
                );
            }
        }
        Ok(())
    }

    fn check_list(&self, node: u16, list: LruList, seen: &mut [bool]) -> Result<(), LruViolation> {
        let head = self.links.head(node, list);
        let (mut previous, mut current, mut count) = (head, self.links.next(head), 0u64);
        while current != head {
            if self.links.is_head(current) || core::mem::replace(&mut seen[current as usize], true) {
                return violation(Some(current), alloc::format!("node {node} {list:?}: foreign entry or a cycle"));
            }
            if self.links.prev(current) != previous {
                return violation(Some(current), alloc::format!("node {node} {list:?}: prev link broken"));
            }
            match self.links.state(current) {
                PageState::Listed { list: on, lock } if on == list && lock < u32::from(self.config.batch_locks) => {}
                other => return violation(Some(current), alloc::format!("on node {node} {list:?} as {other:?}")),
            }
            if self.node_of(current) != node {
                return violation(Some(current), alloc::format!("on node {node}'s lists but of another node"));
            }
            count += 1;
            (previous, current) = (current, self.links.next(current));
        }
        if self.links.prev(head) != previous {
            return violation(None, alloc::format!("node {node} {list:?}: tail link broken"));
        }
        let size = self.nodes[node as usize].sizes[list.index()].load(Relaxed);
        if size != count {
            return violation(None, alloc::format!("node {node} {list:?}: {count} pages linked, size says {size}"));
        }
        Ok(())
    }
}

impl<P: Platform> Lru<P> {
    /// The pages of `node`'s `list`, head (newest) to tail, read under the node's locks.
    pub fn list_pages(&self, platform: &P, node: u16, list: LruList) -> Vec<super::LruPage> {
        let mut pages = Vec::new();
        if node as usize >= self.nodes.len() {
            return pages;
        }
        let _locks = self.lock_node_exclusively(platform, node);
        let head = self.links.head(node, list);
        let mut current = self.links.next(head);
        while current != head && pages.len() <= self.links.pages as usize {
            pages.push(super::LruPage(current));
            current = self.links.next(current);
        }
        pages
    }
}
