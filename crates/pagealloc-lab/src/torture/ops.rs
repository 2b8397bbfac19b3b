//! The operations of a torture worker, each checked against the ownership shadow: a block
//! is tagged with its owner as soon as it is allocated, and its tags are verified and
//! cleared just before it is freed (after the free another worker may already hold it).

use std::time::Instant;

use pagealloc::platform::Platform;
use pagealloc::{AllocError, Block, RawBlock, MAX_ORDER};

use super::cache::CACHE_OWNER;
use super::panicky::without_client_panics;
use super::tally::{Op, FILL_REQUESTS, NODE1_REQUEST, REQUESTS};
use super::worker::{Phase, Worker};

/// Most blocks a bulk call asks for or returns.
const BULK_MAX_BLOCKS: u64 = 32;
/// Most pages of an exact run.
const EXACT_MAX_PAGES: u64 = 40;
/// Most pages one read brings into the page cache (a readahead window of 32 KiB).
const CACHE_READ_MAX_PAGES: u64 = 8;

impl Worker<'_> {
    /// One random operation of the mix. Frees win while the worker holds more than its cap.
    pub(super) fn churn_step(&mut self) {
        let roll = if self.held_pages > self.shared.churn_cap_pages { 450 } else { self.rng.below(1000) };
        match roll {
            0..=404 => self.alloc_one(),
            405..=419 => self.alloc_exact(),
            420..=449 => self.cache_read(),
            450..=849 if !self.held.is_empty() => self.free_one(),
            450..=849 => self.alloc_one(),
            850..=889 => self.alloc_bulk(),
            890..=929 if !self.held.is_empty() => self.free_bulk(),
            890..=929 => self.alloc_bulk(),
            930..=959 => self.drain(Op::DrainLocal),
            960..=969 => self.drain(Op::DrainAll),
            970..=979 => self.drain(Op::CpuOffline),
            980..=982 => self.compact(),
            983 => self.offline_range(),
            984 => self.online_range(),
            985 => self.alloc_contig(),
            #[cfg(feature = "memory-growth")]
            986 => self.grow_memory(),
            _ => self.periodic_work(),
        }
    }

    /// Mostly small orders, as real traffic is, but every order up to MAX_ORDER.
    fn random_order(&mut self) -> u8 {
        match self.rng.below(20) {
            0..=11 => 0,
            12..=16 => 1 + self.rng.below(3) as u8,
            _ => self.rng.below(u64::from(MAX_ORDER) + 1) as u8,
        }
    }

    /// Any request of the table; the one for node 1 only on a machine that has it.
    fn random_request(&mut self) -> usize {
        let requests = if self.shared.allocator.described_nodes() > 1 { REQUESTS.len() } else { NODE1_REQUEST };
        self.rng.below(requests as u64) as usize
    }

    fn alloc_one(&mut self) {
        let (order, request) = (self.random_order(), self.random_request());
        if let Some(block) = self.alloc(order, request) {
            self.held_pages += block.pages();
            self.held.push(block);
        }
    }

    /// One `alloc_pages` call, its block adopted; OutOfMemory is counted, any other error
    /// is a violation.
    fn alloc(&mut self, order: u8, request: usize) -> Option<Block> {
        self.tally.count(Op::Alloc);
        match self.shared.allocator.alloc_pages(order, REQUESTS[request].1) {
            Ok(block) => self.adopt(block, order, request),
            Err(AllocError::OutOfMemory { .. }) => {
                self.tally.out_of_memory += 1;
                None
            }
            Err(error) => {
                let context = format!("worker {}: alloc order {order} {}: {error}", self.owner, REQUESTS[request].0);
                self.shared.violations.report(context);
                None
            }
        }
    }

    /// Checks a block the allocator handed out and tags its frames; `None` (the block set
    /// aside, never freed) when it is malformed or shares a frame with a held block.
    fn adopt(&mut self, block: Block, order: u8, request: usize) -> Option<Block> {
        let problem = if block.order() != order || !block.pfn().is_multiple_of(block.pages()) {
            Some(format!("returned order {} at pfn {:#x}", block.order(), block.pfn()))
        } else {
            self.shared.shadow.claim(block.pfn(), block.pages(), self.owner).err().map(|v| v.to_string())
        };
        if let Some(problem) = problem {
            let context = format!("worker {}: alloc order {order} {}: {problem}", self.owner, REQUESTS[request].0);
            self.shared.violations.report(context);
            self.shared.violations.quarantine(block.pages());
            return None;
        }
        self.tally.allocated(order, request);
        Some(block)
    }

    fn free_one(&mut self) {
        let block = self.held.swap_remove(self.rng.below(self.held.len() as u64) as usize);
        self.held_pages -= block.pages();
        self.free_block(block);
    }

    /// One `free_pages` call, after verifying and clearing the block's tags; any error is a
    /// violation.
    fn free_block(&mut self, block: Block) {
        self.tally.count(Op::Free);
        if let Some(block) = self.disown(block) {
            let (pfn, order) = (block.pfn(), block.order());
            if let Err(error) = self.shared.allocator.free_pages(block) {
                let context = format!("worker {}: free order {order} at pfn {pfn:#x}: {error}", self.owner);
                self.shared.violations.report(context);
            }
        }
    }

    /// Verifies and clears a block's tags before it goes back; `None` (the block set aside)
    /// when the worker does not hold every frame of it.
    fn disown(&mut self, block: Block) -> Option<Block> {
        match self.shared.shadow.release(block.pfn(), block.pages(), self.owner) {
            Ok(()) => Some(block),
            Err(violation) => {
                self.shared.violations.report(format!("worker {}: free: {violation}", self.owner));
                self.shared.violations.quarantine(block.pages());
                None
            }
        }
    }

    /// An exact run of 1 to EXACT_MAX_PAGES pages: its order-0 pages adopted one by one,
    /// and half the time a middle part of it freed at once by frame number.
    fn alloc_exact(&mut self) {
        self.tally.count(Op::Exact);
        let (pages, request) = (1 + self.rng.below(EXACT_MAX_PAGES), self.random_request());
        let run: Vec<Block> = match self.shared.allocator.alloc_pages_exact(pages, REQUESTS[request].1) {
            Ok(run) => run.collect(),
            Err(AllocError::OutOfMemory { .. }) => {
                self.tally.out_of_memory += 1;
                return;
            }
            Err(error) => {
                let context =
                    format!("worker {}: alloc_pages_exact {pages} {}: {error}", self.owner, REQUESTS[request].0);
                self.shared.violations.report(context);
                return;
            }
        };
        let mut adopted: Vec<Block> = run.into_iter().filter_map(|page| self.adopt(page, 0, request)).collect();
        if adopted.len() as u64 == pages && pages > 2 && self.rng.below(2) == 0 {
            let (from, to) = (1 + self.rng.below(pages - 2), pages - 1);
            let middle: Vec<Block> = adopted.drain(from as usize..to as usize).collect();
            self.free_exact(middle);
        }
        self.held_pages += adopted.len() as u64;
        self.held.extend(adopted);
    }

    /// Frees contiguous order-0 `pages` with one `free_pages_exact` call, after verifying
    /// and clearing their tags; any error is a violation.
    fn free_exact(&mut self, pages: Vec<Block>) {
        let (Some(first), count) = (pages.first().map(Block::pfn), pages.len() as u64) else { return };
        if self.shared.shadow.release(first, count, self.owner).is_err() {
            self.shared.violations.report(format!("worker {}: free_pages_exact at {first:#x}: not ours", self.owner));
            self.shared.violations.quarantine(count);
            return;
        }
        pages.into_iter().for_each(|page| {
            page.into_raw();
        });
        // SAFETY: this worker holds the run (the shadow just confirmed every frame) and
        // gave up its handles; nothing uses the frames after this call.
        if let Err(error) = unsafe { self.shared.allocator.free_pages_exact(first, count) } {
            self.shared.violations.report(format!("worker {}: free_pages_exact at {first:#x}: {error}", self.owner));
        }
    }

    fn alloc_bulk(&mut self) {
        let order = if self.rng.below(4) == 0 { self.random_order() } else { self.rng.below(4) as u8 };
        let (request, count) = (self.random_request(), 1 + self.rng.below(BULK_MAX_BLOCKS) as usize);
        self.tally.count(Op::AllocBulk);
        let mut blocks = Vec::with_capacity(count);
        // The blocks arrive in `blocks` as the call goes: a client panic midway would leave
        // them untagged in this frame, so none may panic here.
        let allocator = self.shared.allocator;
        let result = without_client_panics(|| allocator.alloc_bulk(order, REQUESTS[request].1, count, &mut blocks));
        match result {
            Ok(got) if got < count => self.tally.bulk_short += 1,
            Ok(_) => {}
            Err(error) => {
                let context = format!(
                    "worker {}: alloc_bulk {count} x order {order} {}: {error}",
                    self.owner, REQUESTS[request].0
                );
                self.shared.violations.report(context);
            }
        }
        for block in blocks {
            if let Some(block) = self.adopt(block, order, request) {
                self.held_pages += block.pages();
                self.held.push(block);
            }
        }
    }

    fn free_bulk(&mut self) {
        let count = 1 + self.rng.below(self.held.len().min(BULK_MAX_BLOCKS as usize) as u64);
        let blocks: Vec<Block> =
            (0..count).map(|_| self.held.swap_remove(self.rng.below(self.held.len() as u64) as usize)).collect();
        self.held_pages -= blocks.iter().map(Block::pages).sum::<u64>();
        self.free_blocks(blocks);
    }

    /// Frees `blocks` after verifying and clearing their tags: half the time with one
    /// `free_bulk` call, else by frame number with a `free_pfns_bulk` call per order.
    pub(super) fn free_blocks(&mut self, blocks: Vec<Block>) {
        if blocks.is_empty() {
            return;
        }
        self.tally.count(Op::FreeBulk);
        let count = blocks.len();
        let owned: Vec<Block> = blocks.into_iter().filter_map(|block| self.disown(block)).collect();
        if self.rng.below(2) == 0 {
            if let Err(error) = self.shared.allocator.free_bulk(owned) {
                self.shared.violations.report(format!("worker {}: free_bulk of {count} blocks: {error}", self.owner));
            }
            return;
        }
        // Given up: from here on only their frame numbers name them.
        let mut raw: Vec<RawBlock> = owned.into_iter().map(Block::into_raw).collect();
        raw.sort_by_key(|block| block.order);
        for run in raw.chunk_by(|a, b| a.order == b.order) {
            let pfns: Vec<u64> = run.iter().map(|block| block.pfn).collect();
            // SAFETY: this worker allocated each block, gave up its only `Block` above, and
            // frees each frame number once, at its order.
            let result = unsafe { self.shared.allocator.free_pfns_bulk(&pfns, run[0].order) };
            if let Err(error) = result {
                let worker = self.owner;
                self.shared
                    .violations
                    .report(format!("worker {worker}: free_pfns_bulk of {} blocks: {error}", pfns.len()));
            }
        }
    }

    /// Reads up to CACHE_READ_MAX_PAGES order-0 movable pages into the page cache, tagged
    /// with the cache's owner (allocations that may reclaim: they may drop other cached
    /// pages on the way); a full cache first drops as many of its oldest.
    fn cache_read(&mut self) {
        self.tally.count(Op::CacheRead);
        let pages = 1 + self.rng.below(CACHE_READ_MAX_PAGES);
        let cache = self.shared.cache;
        if cache.len_pages() >= self.shared.cache_cap_pages {
            cache.evict(self.shared.allocator, pages);
        }
        for _ in 0..pages {
            let request = pagealloc::AllocRequest::USER_MOVABLE;
            let block = match self.shared.allocator.alloc_pages(0, request) {
                Ok(block) => block,
                Err(AllocError::OutOfMemory { .. }) => {
                    self.tally.out_of_memory += 1;
                    return;
                }
                Err(error) => {
                    self.shared.violations.report(format!("worker {}: page cache read: {error}", self.owner));
                    return;
                }
            };
            if let Err(violation) = self.shared.shadow.claim(block.pfn(), block.pages(), CACHE_OWNER) {
                self.shared.violations.report(format!("worker {}: page cache read: {violation}", self.owner));
                self.shared.violations.quarantine(block.pages());
                continue;
            }
            self.tally.cache_pages_read += 1;
            cache.insert(block);
        }
    }

    /// A drain of this CPU's pagesets, of every CPU's, or of a random CPU's as it goes
    /// offline and comes straight back (its background work handed to another CPU and
    /// back, racing the other workers' hotplug), as its threads keep running there.
    fn drain(&mut self, op: Op) {
        self.tally.count(op);
        let allocator = self.shared.allocator;
        self.tally.drained_pages += match op {
            Op::DrainLocal => allocator.pagesets().drain_local(),
            Op::DrainAll => allocator.pagesets().drain_all(),
            _ => {
                let cpu = self.rng.below(allocator.platform().nr_cpus() as u64) as usize;
                let drained = allocator.hotplug().cpu_offline(cpu);
                allocator.hotplug().cpu_online(cpu);
                drained
            }
        };
    }

    /// Compacts a random node whole, racing the workers (and the cache's readers and
    /// reclaim) as a write to /proc/sys/vm/compact_memory does.
    fn compact(&mut self) {
        self.tally.count(Op::Compact);
        let allocator = self.shared.allocator;
        let node = self.rng.below(allocator.nodes().len() as u64) as u16;
        allocator.background().compact_node(node);
    }

    /// The periodic work of a random CPU at the platform's time (vmstat pass when due,
    /// kswapd when woken), racing the other workers as the kernel's timers do.
    fn periodic_work(&mut self) {
        self.tally.count(Op::PeriodicWork);
        let platform = self.shared.allocator.platform();
        let cpu = self.rng.below(platform.nr_cpus() as u64) as usize;
        let done = self.shared.allocator.background().run_due_work(cpu, platform.now_ns());
        self.tally.vmstat_passes += u64::from(done.vmstat_passes);
        self.tally.kswapd_passes += u64::from(done.kswapd_passes);
        self.tally.drained_pages += done.drained_pages;
        // Half the time also a round of the CPU's node's kswapd, as a kswapd task would run
        // it, racing the whole passes above and the other workers' rounds.
        if self.rng.below(2) == 0 {
            let node = self.shared.allocator.node_of_cpu(cpu);
            self.tally.kswapd_rounds += u64::from(self.shared.allocator.background().kswapd_round(node));
        }
    }

    /// A hog's allocation: a request that may use Normal, one order lower after each
    /// OutOfMemory, holding from OutOfMemory at order 0.
    pub(super) fn fill_step(&mut self, order: u8) {
        let request = self.rng.below(FILL_REQUESTS as u64) as usize;
        match self.alloc(order, request) {
            Some(block) => self.hoard.push(block),
            None if order > 0 => self.phase = Phase::Fill { order: order - 1 },
            None => self.phase = Phase::Hold { until: self.pause_from(Instant::now()) },
        }
    }

    /// A hog gives its hoard back, a bulk free or a single free per step.
    pub(super) fn release_step(&mut self) {
        if self.hoard.is_empty() {
            self.tally.hog_cycles += 1;
            self.phase = Phase::Churn { until: self.pause_from(Instant::now()) };
        } else if self.rng.below(2) == 0 {
            let keep = self.hoard.len().saturating_sub(BULK_MAX_BLOCKS as usize);
            let blocks = self.hoard.split_off(keep);
            self.free_blocks(blocks);
        } else {
            let block = self.hoard.pop().expect("not empty");
            self.free_block(block);
        }
    }
}
