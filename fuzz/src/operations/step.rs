//! What each `Op` does to the allocator and what it checks: one method per operation that
//! needs more than a line, dispatched by `Harness::step`.

use std::alloc::Layout;

use pagealloc::platform::{Platform, TestPlatform};
use pagealloc::types::{MAX_ORDER, PAGE_SHIFT};
use pagealloc::{AllocError, AllocRequest, Block, FreeError, PageAllocator, RawBlock};

use super::client::without_client_panics;
use super::harness::Harness;
use super::input::{order_of, Op, Req};
use super::observe::{cpu_pageset_pages, fingerprint};

impl Harness {
    pub(super) fn step(&mut self, op: Op) {
        match op {
            Op::Alloc { order, req } => {
                self.alloc(order_of(order), req.request());
            }
            Op::AllocLayout { size, align_log2, req } => self.alloc_layout(size, align_log2, req),
            Op::AllocOwned { order, req } => self.alloc_owned(order, req),
            Op::Free { pick } if !self.held.is_empty() => {
                let block = self.held.swap_remove(usize::from(pick) % self.held.len());
                self.free(block);
            }
            Op::FreeNewest => {
                if let Some(block) = self.held.pop() {
                    self.free(block);
                }
            }
            Op::AllocBulk { order, req, count } => self.alloc_bulk(order, req, count),
            Op::FreeBulk { pick, count } if !self.held.is_empty() => self.free_bulk(pick, count),
            Op::DrainLocal => {
                self.drained("drain_local", |a| a.pagesets().drain_local());
                assert_eq!(cpu_pageset_pages(&self.allocator, self.cpu()), 0, "drain_local left pages");
            }
            Op::DrainAll => {
                self.drained("drain_all", |a| a.pagesets().drain_all());
                assert_eq!(self.allocator.counters().pcp_pages(), 0, "drain_all left pages");
            }
            Op::CpuOffline { cpu } => {
                let cpu = usize::from(cpu) % self.cpus;
                self.drained("cpu_offline", |a| a.hotplug().cpu_offline(cpu));
                assert_eq!(cpu_pageset_pages(&self.allocator, cpu), 0, "cpu_offline left pages");
            }
            Op::Tick { advance_ms } => self.tick(advance_ms, false),
            Op::TickAll { advance_ms } => self.tick(advance_ms, true),
            Op::VmstatTick => {
                let cpu = self.cpu();
                self.drained("vmstat_tick", |a| a.background().vmstat_tick(cpu));
            }
            Op::Pressure { order, req } => self.pressure(order, req),
            Op::SetCpu { cpu } => self.allocator.platform().set_cpu(usize::from(cpu) % self.cpus),
            Op::ForeignFree { order, movable } => self.foreign_free(order % (MAX_ORDER + 1), movable),
            Op::Check => self.check("check op"),
            Op::Free { .. } | Op::FreeBulk { .. } => {}
        }
    }

    /// `alloc_layout`: a block of the smallest order covering the size and the alignment, or
    /// `LayoutTooLarge` when no order does.
    fn alloc_layout(&mut self, size: u32, align_log2: u8, req: Req) {
        let align = 1usize << (align_log2 % 32);
        let layout = Layout::from_size_align(size as usize, align).expect("u32 sizes fit");
        let request = req.request();
        // The smallest order whose block covers the size and the alignment.
        let bytes = (size as u64).max(align as u64).max(1);
        let pages = bytes.div_ceil(1 << PAGE_SHIFT);
        let order = (0..=MAX_ORDER).find(|&order| 1u64 << order >= pages);
        match (self.allocator.alloc_layout(layout, request), order) {
            (Err(AllocError::LayoutTooLarge { size_bytes, align_bytes }), None) => {
                assert_eq!((size_bytes, align_bytes), (size as usize, align));
            }
            (Ok(block), Some(order)) => {
                assert!(block.pages() << PAGE_SHIFT >= size as u64 && block.phys_addr().0 % align as u64 == 0);
                assert!(self.model.request_errors(order, &request).is_empty());
                self.model.take(&self.allocator, &block, order, &request);
                self.held.push(block);
            }
            (Err(error), Some(order)) => {
                let expected = self.model.request_errors(order, &request);
                self.check_alloc_error(error, order, &request, &expected, None);
            }
            (result, None) => panic!("{layout:?}: {result:?}, expected LayoutTooLarge"),
        }
    }

    /// `alloc_owned`: checked while held, then dropped, which frees it.
    fn alloc_owned(&mut self, order: u8, req: Req) {
        let (order, request) = (order_of(order), req.request());
        let expected = self.model.request_errors(order, &request);
        match self.allocator.alloc_owned(order, request) {
            Ok(owned) => {
                self.model.take(&self.allocator, owned.block(), order, &request);
                self.check("holding an owned block");
                self.model.release(owned.block());
                drop(owned);
                self.check("after dropping an owned block");
            }
            Err(error) => self.check_alloc_error(error, order, &request, &expected, None),
        }
    }

    /// `alloc_bulk`: up to `count` blocks, fewer only when out of memory is plausible; an
    /// error only before any block, and one the request warrants.
    fn alloc_bulk(&mut self, order: u8, req: Req, count: u8) {
        let (order, request) = (order_of(order), req.request());
        let expected = self.model.request_errors(order, &request);
        let mut out = Vec::new();
        let allocator = &self.allocator;
        let got = without_client_panics(|| allocator.alloc_bulk(order, request, usize::from(count), &mut out));
        match got {
            Ok(got) => {
                assert_eq!(got, out.len());
                assert!(got <= usize::from(count));
                assert!(count == 0 || expected.is_empty(), "bulk {request:?} got {got}; expected {expected:?}");
                for block in &out {
                    self.model.take(&self.allocator, block, order, &request);
                }
                self.held.extend(out);
                if got < usize::from(count) {
                    self.model.check_oom(&self.allocator, order, &request);
                }
            }
            Err(error) => {
                assert!(out.is_empty() && count > 0, "bulk failed after {} blocks: {error:?}", out.len());
                assert!(expected.contains(&error), "bulk {request:?}: {error:?}; expected {expected:?}");
            }
        }
    }

    /// Up to `count` held blocks from `pick` on, freed with `free_bulk` when `count` is even,
    /// else given up and freed by frame number with a `free_pfns_bulk` per order (the caller
    /// checks that some block is held).
    fn free_bulk(&mut self, pick: u16, count: u8) {
        let start = usize::from(pick) % self.held.len();
        let end = (start + usize::from(count)).min(self.held.len());
        let blocks: Vec<Block> = self.held.drain(start..end).collect();
        for block in &blocks {
            self.model.release(block);
        }
        if count % 2 == 0 {
            let freed = self.allocator.free_bulk(blocks).expect("bulk free of held blocks");
            assert_eq!(freed, end - start);
            return;
        }
        let mut raw: Vec<RawBlock> = blocks.into_iter().map(Block::into_raw).collect();
        raw.sort_by_key(|block| block.order);
        for run in raw.chunk_by(|a, b| a.order == b.order) {
            let pfns: Vec<u64> = run.iter().map(|block| block.pfn).collect();
            // SAFETY: each block was held here, its only `Block` given up just above; each
            // frame number is freed once, at its order.
            let freed = unsafe { self.allocator.free_pfns_bulk(&pfns, run[0].order) };
            assert_eq!(freed, Ok(pfns.len()), "bulk free by frame number of held blocks");
        }
    }

    /// Advances the clock, then runs the due work of the current CPU, or of every CPU.
    fn tick(&mut self, advance_ms: u16, every_cpu: bool) {
        self.allocator.platform().advance_ns(u64::from(advance_ms) * 1_000_000);
        let now = self.allocator.platform().now_ns();
        let cpus = if every_cpu {
            0..self.cpus
        } else {
            let cpu = self.cpu();
            cpu..cpu + 1
        };
        for cpu in cpus {
            self.drained("run_due_work", |a| a.background().run_due_work(cpu, now).drained_pages);
        }
    }

    /// Allocates until the first failure.
    fn pressure(&mut self, order: u8, req: Req) {
        let (order, request) = (order_of(order), req.request());
        // More successes than memory holds would already be a double hand-out.
        let limit = self.model.managed_pages + 1;
        for _ in 0..limit {
            if self.alloc(order, request).is_none() {
                break;
            }
        }
    }

    /// A block of a second allocator with the same layout (so its frame numbers are ones this
    /// allocator manages, often held here too) must be refused and change nothing.
    fn foreign_free(&mut self, order: u8, movable: bool) {
        let donor = self.donor.get_or_insert_with(|| {
            PageAllocator::build((self.builder_for_donor)(), TestPlatform::new(1)).expect("donor builds")
        });
        let request = if movable { AllocRequest::USER_MOVABLE } else { AllocRequest::KERNEL };
        let Ok(block) = donor.alloc_pages(order, request) else { return };
        assert_ne!(block.allocator_id(), self.allocator.id());
        let pfn = block.pfn();
        let before = fingerprint(&self.allocator, false);
        // The refused block is gone with the error: the donor leaks it, which is harmless.
        assert_eq!(self.allocator.free_pages(block), Err(FreeError::ForeignBlock { pfn }));
        // Any free, to the buddy or a pageset, shows in the fingerprint; the frames' states
        // are compared with the model by the next periodic check.
        assert_eq!(fingerprint(&self.allocator, false), before, "a foreign free changed the state");
    }
}
