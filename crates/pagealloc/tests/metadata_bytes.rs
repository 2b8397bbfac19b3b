//! `PageAllocator::metadata_bytes` against what a build really allocates, measured by a
//! counting global allocator (this test binary's only allocator), and what a build in
//! caller memory (`build_in`) still takes from the heap with the `alloc` feature (without
//! it, nothing: tests/no_alloc.rs).

// The invariant checker and the views need the alloc feature (tests/no_alloc.rs covers the core without it).
#![cfg(feature = "alloc")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering::SeqCst};

use pagealloc::platform::TestPlatform;
use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};

struct Counting;

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as i64, SeqCst);
        // SAFETY: the caller's layout contract is passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, SeqCst);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn measured(builder: AllocatorBuilder, cpus: usize) -> (u64, i64) {
    let predicted = PageAllocator::<TestPlatform>::metadata_bytes(&builder, cpus);
    let before = LIVE_BYTES.load(SeqCst);
    let allocator = PageAllocator::build(builder, TestPlatform::new(cpus)).unwrap();
    let after = LIVE_BYTES.load(SeqCst);
    drop(allocator);
    (predicted, after - before)
}

/// One test, so no other test's allocations run in between.
#[test]
fn the_prediction_is_what_the_build_allocates_within_a_few_kib() {
    let pc = AllocatorBuilder::pc_layout(1024);
    let two_nodes = AllocatorBuilder::new().node(2).node(2).zone(0, ZoneType::Normal, 0..1 << 17).zone(
        1,
        ZoneType::Normal,
        1 << 17..1 << 18,
    );
    let fullest =
        AllocatorBuilder::pc_layout(512).policy(pagealloc::presets::find("mainline+fullest-first").unwrap().policy);
    let no_pcp = AllocatorBuilder::pc_layout(512).policy(pagealloc::presets::find("global-lock").unwrap().policy);
    // Per-CPU arenas: 4 GiB of Normal cut in 4 zones on 4 nodes.
    let arenas = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 20)
        .policy(pagealloc::presets::find("pagealloc").unwrap().policy);
    for (name, builder, cpus) in [
        ("pc 1 GiB", pc, 4),
        ("2 nodes", two_nodes, 4),
        ("fullest-first", fullest, 8),
        ("no pagesets", no_pcp, 8),
        ("pagealloc arenas", arenas, 4),
    ] {
        let (predicted, net) = measured(builder, cpus);
        let difference = net - predicted as i64;
        assert!(predicted > 1 << 20, "{name}: {predicted}");
        assert!(difference.abs() < 8 << 10, "{name}: predicted {predicted} bytes, the build kept {net}");
    }
    a_build_in_caller_memory_keeps_nothing_but_zonelists_on_the_heap();
}

/// The net heap bytes of `build_in` given `metadata_bytes` of memory (allocated before
/// counting), and what the heap build keeps.
fn measured_in_place(builder: AllocatorBuilder, cpus: usize) -> (i64, u64) {
    let predicted = PageAllocator::<TestPlatform>::metadata_bytes(&builder, cpus);
    let heap = Box::leak(vec![std::mem::MaybeUninit::uninit(); predicted as usize].into_boxed_slice());
    // SAFETY: heap memory is no frame of any described zone.
    let memory = unsafe { pagealloc::MetadataMemory::outside_managed_memory(heap) };
    let before = LIVE_BYTES.load(SeqCst);
    let allocator = PageAllocator::build_in(builder, TestPlatform::new(cpus), memory).unwrap();
    let after = LIVE_BYTES.load(SeqCst);
    // It works: every managed page can be taken and given back.
    let block = allocator.alloc_pages(0, pagealloc::AllocRequest::KERNEL).unwrap();
    allocator.free_pages(block).unwrap();
    allocator.check_invariants().unwrap();
    drop(allocator);
    (after - before, predicted)
}

/// Called from the one test, so no other test's allocations run in between.
fn a_build_in_caller_memory_keeps_nothing_but_zonelists_on_the_heap() {
    let fullest = pagealloc::presets::find("mainline+fullest-first").unwrap().policy;
    for (name, builder, cpus) in [
        ("pc 1 GiB", AllocatorBuilder::pc_layout(1024), 4),
        ("pc 4 GiB, 64 CPUs", AllocatorBuilder::pc_layout(4096), 64),
        ("fullest-first", AllocatorBuilder::pc_layout(512).policy(fullest), 8),
        (
            "pagealloc arenas",
            AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 19)
                .policy(pagealloc::presets::find("pagealloc").unwrap().policy),
            4,
        ),
    ] {
        let (heap, placed) = measured_in_place(builder, cpus);
        assert!(placed > 1 << 20, "{name}: {placed}");
        // Net of the builder's own tables, which the build frees: what stays is the
        // zonelists (2 bytes per zone and node), smaller than the builder's tables.
        assert!(heap <= 0, "{name}: {heap} heap bytes kept beside {placed} placed");
    }
    // Too little memory: the build says how much it needed.
    let heap = Box::leak(vec![std::mem::MaybeUninit::uninit(); 4096].into_boxed_slice());
    // SAFETY: as above.
    let memory = unsafe { pagealloc::MetadataMemory::outside_managed_memory(heap) };
    let error = PageAllocator::build_in(AllocatorBuilder::pc_layout(64), TestPlatform::new(2), memory).unwrap_err();
    assert!(
        matches!(error, pagealloc::BuildError::MetadataMemoryTooSmall { needed_bytes, given_bytes: 4096 } if needed_bytes > 4096),
        "{error}"
    );
}
