//! `cargo bench -p pagealloc`: the hot paths under criterion, against
//! `buddy_system_allocator`'s `FrameAllocator` (the crate most Rust kernels use) on the same
//! operations. Both run on one host thread; ours on the test platform, which says which CPU
//! the caller is on, so a free on another CPU is a real cross-CPU free.
//! - `pair`: allocate and free one order-0 page (the pageset fast path);
//! - `bulk_512`: allocate 512 order-0 pages, then free them (refills and drains);
//! - `cross_cpu_free_64`: CPU 0 allocates 64 pages, CPU 1 frees them (the producer/consumer
//!   pattern of network buffers); buddy_system_allocator has no CPUs, so it runs the same
//!   allocations and frees.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use pagealloc::platform::TestPlatform;
use pagealloc::{AllocRequest, AllocatorBuilder, Block, PageAllocator, ZoneType};

/// 1 GiB of 4 KiB frames for both.
const FRAMES: u64 = 1 << 18;

fn ours() -> PageAllocator<TestPlatform> {
    let builder = AllocatorBuilder::new().node(2).zone(0, ZoneType::Normal, 0..FRAMES);
    PageAllocator::build(builder, TestPlatform::new(2)).expect("a valid machine")
}

fn theirs() -> buddy_system_allocator::FrameAllocator<33> {
    let mut allocator = buddy_system_allocator::FrameAllocator::<33>::new();
    allocator.add_frame(0, FRAMES as usize);
    allocator
}

fn pair(c: &mut Criterion) {
    let mut group = c.benchmark_group("pair");
    let allocator = ours();
    group.bench_function("pagealloc", |b| {
        b.iter(|| {
            let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
            allocator.free_pages(black_box(block)).unwrap();
        })
    });
    let mut buddy = theirs();
    group.bench_function("buddy_system_allocator", |b| {
        b.iter(|| {
            let frame = buddy.alloc(1).unwrap();
            buddy.dealloc(black_box(frame), 1);
        })
    });
    group.finish();
}

fn bulk(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk_512");
    let allocator = ours();
    let mut blocks: Vec<Block> = Vec::with_capacity(512);
    group.bench_function("pagealloc", |b| {
        b.iter(|| {
            blocks.extend((0..512).map(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap()));
            allocator.free_bulk(blocks.drain(..)).unwrap();
        })
    });
    let mut buddy = theirs();
    let mut frames: Vec<usize> = Vec::with_capacity(512);
    group.bench_function("buddy_system_allocator", |b| {
        b.iter(|| {
            frames.extend((0..512).map(|_| buddy.alloc(1).unwrap()));
            frames.drain(..).for_each(|frame| buddy.dealloc(frame, 1));
        })
    });
    group.finish();
}

fn cross_cpu_free(c: &mut Criterion) {
    let mut group = c.benchmark_group("cross_cpu_free_64");
    let allocator = ours();
    let mut blocks: Vec<Block> = Vec::with_capacity(64);
    group.bench_function("pagealloc", |b| {
        b.iter(|| {
            allocator.platform().set_cpu(0);
            blocks.extend((0..64).map(|_| allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap()));
            allocator.platform().set_cpu(1);
            blocks.drain(..).for_each(|block| allocator.free_pages(block).unwrap());
        })
    });
    let mut buddy = theirs();
    let mut frames: Vec<usize> = Vec::with_capacity(64);
    group.bench_function("buddy_system_allocator", |b| {
        b.iter(|| {
            frames.extend((0..64).map(|_| buddy.alloc(1).unwrap()));
            frames.drain(..).for_each(|frame| buddy.dealloc(frame, 1));
        })
    });
    group.finish();
}

criterion_group!(benches, pair, bulk, cross_cpu_free);
criterion_main!(benches);
