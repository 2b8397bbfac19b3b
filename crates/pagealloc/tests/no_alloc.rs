//! The core without the `alloc` feature, as a kernel uses it before it has a heap: the
//! allocator is built in memory the caller gives (`build_in`), its clients are `&'static`
//! references, and its description tables are fixed arrays. A counting global allocator
//! shows that building it, allocating and freeing at every order, draining, the periodic
//! work, kswapd, reclaim through a reclaim client and compaction with a migration client
//! take nothing from the heap. Run with `cargo test -p pagealloc --no-default-features --test no_alloc`.
#![cfg(not(feature = "alloc"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::Mutex;

use pagealloc::allocator::{Migrate, MigrateSource, Reclaim, ReclaimRequest};
use pagealloc::platform::TestPlatform;
use pagealloc::table::{FIXED_NODES, FIXED_RANGES};
use pagealloc::{AllocRequest, AllocatorBuilder, Block, BuildError, MetadataMemory, PageAllocator, PhysAddr, ZoneType};

/// Counts the heap allocations this thread makes while `COUNTING` is on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; the counters are
// const-initialised thread-locals without destructors, so touching them never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|count| count.set(count.get() + 1));
        }
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap allocations `work` made on this thread.
fn heap_allocations_of<R>(work: impl FnOnce() -> R) -> (R, u64) {
    ALLOCATIONS.with(|count| count.set(0));
    COUNTING.with(|on| on.set(true));
    let result = work();
    COUNTING.with(|on| on.set(false));
    (result, ALLOCATIONS.with(Cell::get))
}

/// Memory for the metadata, as a boot allocator hands it out (leaked here for 'static,
/// before counting starts).
fn boot_memory(bytes: usize) -> MetadataMemory {
    let heap = Box::leak(vec![MaybeUninit::uninit(); bytes].into_boxed_slice());
    // SAFETY: heap memory is no frame of any described zone.
    unsafe { MetadataMemory::outside_managed_memory(heap) }
}

/// A page cache without a heap: blocks it holds in a fixed array, which reclaim frees.
struct FixedCache {
    blocks: Mutex<[Option<Block>; 64]>,
}

static CACHE: FixedCache = FixedCache { blocks: Mutex::new([const { None }; 64]) };

impl Reclaim<TestPlatform> for FixedCache {
    fn reclaim(&self, allocator: &PageAllocator<TestPlatform>, request: ReclaimRequest) -> u64 {
        let mut blocks = self.blocks.lock().unwrap();
        let mut freed = 0;
        for slot in blocks.iter_mut().filter(|slot| slot.is_some()) {
            if freed >= request.pages {
                break;
            }
            let block = slot.take().expect("a held block");
            freed += block.pages();
            allocator.free_pages(block).expect("the cache's own block");
        }
        freed
    }
}

/// Moves any block it is asked to (no contents to copy in this test).
struct MovesAll;

static MOVER: MovesAll = MovesAll;

impl Migrate<TestPlatform> for MovesAll {
    fn migrate(&self, _: &PageAllocator<TestPlatform>, source: MigrateSource, target: Block) -> Result<Block, Block> {
        let mut blocks = CACHE.blocks.lock().unwrap();
        match blocks.iter_mut().find(|slot| slot.as_ref().is_some_and(|held| held.pfn() == source.pfn)) {
            Some(slot) => Ok(slot.replace(target).expect("the source")),
            None => Err(target),
        }
    }
}

#[test]
fn built_in_caller_memory_the_core_runs_without_a_heap() {
    // A PC layout of 1 GiB (DMA, DMA32, the legacy and PCI holes), 4 CPUs.
    let builder = AllocatorBuilder::pc_layout(1024);
    let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 4) as usize;
    let memory = boot_memory(bytes);
    let platform = TestPlatform::new(4);
    let (allocator, built_allocations) = heap_allocations_of(|| PageAllocator::build_in(builder, platform, memory));
    let mut allocator = allocator.expect("metadata_bytes is enough");
    assert_eq!(built_allocations, 0, "the build took heap memory");
    allocator.set_reclaim_static(&CACHE);
    allocator.set_migrate_static(&MOVER);
    let managed = allocator.counters().managed_pages();
    assert!(managed > 200_000, "1 GiB less holes and reservations: {managed}");

    let ((), allocations) = heap_allocations_of(|| {
        // Every order on every CPU, then all of it back.
        let mut held: [Option<Block>; 44] = [const { None }; 44];
        for (slot, index) in held.iter_mut().zip(0..) {
            allocator.platform().set_cpu(index % 4);
            let order = (index % 11) as u8;
            *slot = Some(allocator.alloc_pages(order, AllocRequest::KERNEL).expect("memory is free"));
        }
        for (slot, index) in held.iter_mut().zip(0..) {
            allocator.platform().set_cpu((index + 1) % 4);
            allocator.free_pages(slot.take().unwrap()).expect("a held block");
        }
        // Fill the page cache with movable pages, then the rest of memory, largest blocks
        // first, until allocations fail: reclaim takes the cache, compaction tries.
        for slot in CACHE.blocks.lock().unwrap().iter_mut() {
            *slot = Some(allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).expect("memory is free"));
        }
        let mut hog: [Option<Block>; 4096] = [const { None }; 4096];
        let mut slots = hog.iter_mut();
        for order in (0..=10u8).rev() {
            while let Ok(block) = allocator.alloc_pages(order, AllocRequest::KERNEL) {
                *slots.next().expect("room for the hog") = Some(block);
            }
        }
        for cpu in 0..4 {
            allocator.background().run_due_work(cpu, 2_000_000_000);
        }
        allocator.background().run_kswapd(0);
        for block in hog.iter_mut().filter_map(Option::take) {
            allocator.free_pages(block).expect("a hog block");
        }
        allocator.background().compact_node(0);
        allocator.pagesets().drain_all();
    });
    assert_eq!(allocations, 0, "the core took heap memory");
    // The hog's failing attempts reclaimed (directly, before kswapd ran) and compacted
    // through the static clients.
    let reclaim = allocator.counters().reclaim_stats(0);
    assert_eq!(reclaim.pgsteal_direct + reclaim.pgsteal_kswapd, 64, "the whole cache reclaimed: {reclaim:?}");
    assert!(allocator.counters().compaction_stats(0).compact_stall > 0, "direct compaction ran");
    let cached: u64 = CACHE.blocks.lock().unwrap().iter().flatten().map(Block::pages).sum();
    assert_eq!(allocator.counters().buddy_free_pages() + cached, managed, "every page is free or cached");
    for block in CACHE.blocks.lock().unwrap().iter_mut().filter_map(Option::take) {
        allocator.free_pages(block).unwrap();
    }
    allocator.pagesets().drain_all();
    assert_eq!(allocator.counters().buddy_free_pages(), managed);
}

#[test]
fn a_fixed_description_table_that_overflows_is_a_typed_error() {
    let mut holes = AllocatorBuilder::new().zone(0, ZoneType::Normal, 0..1 << 16);
    for hole in 0..=FIXED_RANGES as u64 {
        holes = holes.hole(hole * 8..hole * 8 + 1);
    }
    let mut nodes = AllocatorBuilder::new();
    for _ in 0..=FIXED_NODES {
        nodes = nodes.node(1);
    }
    for (builder, table, capacity) in [(holes, "holes", FIXED_RANGES), (nodes, "nodes", FIXED_NODES)] {
        let error = PageAllocator::build_in(builder, TestPlatform::new(FIXED_NODES + 1), boot_memory(1 << 20));
        assert_eq!(error.unwrap_err(), BuildError::TableFull { table, capacity });
    }
}

#[test]
fn too_little_caller_memory_is_a_typed_error() {
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16);
    let needed = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 2);
    let error = PageAllocator::build_in(builder, TestPlatform::new(2), boot_memory(needed as usize / 2)).unwrap_err();
    // The error names everything the build needs, so a retry with that figure succeeds.
    assert_eq!(error, BuildError::MetadataMemoryTooSmall { needed_bytes: needed, given_bytes: needed / 2 });
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16);
    assert!(PageAllocator::build_in(builder, TestPlatform::new(2), boot_memory(needed as usize)).is_ok());
}

/// Metadata carved from the described RAM: given with its physical address, its frames are
/// reserved by the build, and no allocation ever hands them out.
#[test]
fn metadata_inside_described_memory_is_never_handed_out() {
    let pages = 1 << 14;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, pages);
    let start = pagealloc::builder::NORMAL_START_PFN;
    let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 1) as usize;
    let heap = Box::leak(vec![MaybeUninit::uninit(); bytes].into_boxed_slice());
    // The buffer stands for frames 16.. of the zone (a kernel passes its real address).
    let phys = PhysAddr::of_pfn(start + 16);
    let memory = MetadataMemory::at(heap, phys);
    let reserved = memory.frames().unwrap();
    assert_eq!(reserved, start + 16..start + 16 + (bytes as u64).div_ceil(4096));
    let allocator = PageAllocator::build_in(builder, TestPlatform::new(1), memory).unwrap();
    assert_eq!(allocator.counters().managed_pages(), pages - (reserved.end - reserved.start));
    let mut held = Vec::new();
    while let Ok(block) = allocator.alloc_pages(0, AllocRequest::KERNEL) {
        assert!(!reserved.contains(&block.pfn()), "pfn {:#x} holds the allocator's records", block.pfn());
        held.push(block);
    }
    assert!(held.len() as u64 > (pages - 64) * 9 / 10);
    // Freeing into the reserved frames is refused: they are not the allocator's.
    // SAFETY: refused before anything is touched.
    assert!(unsafe { allocator.free_pfn(reserved.start, 0) }.is_err());
    for block in held {
        allocator.free_pages(block).unwrap();
    }
}

/// A const upper bound on the metadata sizes a static buffer before anything runs.
#[test]
fn the_const_metadata_bound_covers_every_description() {
    const BOUND: u64 = PageAllocator::<TestPlatform>::metadata_bytes_bound(1 << 18, 2, 4);
    assert!(BOUND >= (1 << 18) * pagealloc::FRAME_METADATA_BYTES as u64);
    let pagealloc = pagealloc::presets::find("pagealloc").unwrap().policy;
    for (name, builder) in [
        ("pc 1 GiB", AllocatorBuilder::pc_layout(1024)),
        ("single zone", AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18)),
        ("pagealloc preset", AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18).policy(pagealloc)),
        (
            "two nodes",
            AllocatorBuilder::new().node(2).node(2).zone(0, ZoneType::Normal, 1 << 20..(1 << 20) + (1 << 17)).zone(
                1,
                ZoneType::Normal,
                (1 << 20) + (1 << 17)..(1 << 20) + (1 << 18),
            ),
        ),
    ] {
        let needed = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 4);
        assert!(needed <= BOUND, "{name}: {needed} needed, bound {BOUND}");
        let built = PageAllocator::build_in(builder, TestPlatform::new(4), boot_memory(BOUND as usize));
        assert!(built.is_ok(), "{name}: {:?}", built.err());
    }
    // A bound, not a guess: within a tenth of the single zone's need.
    let single =
        PageAllocator::<TestPlatform>::metadata_bytes(&AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18), 4);
    assert!(BOUND < single + single / 10, "bound {BOUND}, single zone {single}");
}

/// Linux's boot stack on x86-64 is 16 KiB (THREAD_SIZE): the build and a first allocation
/// fit in it (a fixed table lives by value in the builder, so its capacities are kept small).
#[test]
fn the_build_fits_a_16_kib_stack() {
    let on_small_stack = std::thread::Builder::new().stack_size(16 << 10).spawn(|| {
        let builder = AllocatorBuilder::pc_layout(1024);
        let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 4) as usize;
        let allocator = PageAllocator::build_in(builder, TestPlatform::new(4), boot_memory(bytes)).unwrap();
        let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
        allocator.free_pages(block).unwrap();
        std::mem::size_of_val(&allocator)
    });
    // An overflow aborts the test binary: the failure is loud.
    let allocator_bytes = on_small_stack.unwrap().join().unwrap();
    eprintln!(
        "AllocatorBuilder {} bytes, PageAllocator {allocator_bytes} bytes",
        std::mem::size_of::<AllocatorBuilder>()
    );
}

/// A zone grown past its span without a heap: the new records go in memory the caller
/// gives (`add_memory_in`); without it, the growth is refused as a typed error.
#[cfg(feature = "memory-growth")]
#[test]
fn memory_added_past_the_span_without_a_heap() {
    use pagealloc::{GrowError, RangeError};
    let base = 1u64 << 20;
    let builder = AllocatorBuilder::new().zone(0, ZoneType::Normal, base..base + 4096);
    let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 2) as usize;
    let allocator = PageAllocator::build_in(builder, TestPlatform::new(2), boot_memory(bytes)).unwrap();
    let dimm = base + 8192..base + 16384;
    assert!(matches!(
        allocator.hotplug().add_memory(dimm.clone(), ZoneType::Normal),
        Err(RangeError::Grow { reason: GrowError::Metadata(_), .. })
    ));
    let needed = allocator.hotplug().add_memory_metadata_bytes(dimm.clone(), ZoneType::Normal).unwrap() as usize;
    let memory = boot_memory(needed);
    let (added, allocations) =
        heap_allocations_of(|| allocator.hotplug().add_memory_in(dimm.clone(), ZoneType::Normal, memory));
    assert_eq!((added, allocations), (Ok(8192), 0));
    let ((), allocations) = heap_allocations_of(|| {
        let mut held: [Option<Block>; 16] = [const { None }; 16];
        for slot in held.iter_mut() {
            *slot = Some(allocator.alloc_pages(9, AllocRequest::KERNEL).expect("memory is free"));
        }
        assert!(held.iter().flatten().any(|block| dimm.contains(&block.pfn())), "the added memory serves");
        for slot in held.iter_mut() {
            allocator.free_pages(slot.take().unwrap()).expect("a held block");
        }
    });
    assert_eq!(allocations, 0);
    assert_eq!(allocator.counters().managed_pages(), 4096 + 8192);
}

/// Per-CPU arenas in fixed tables: at most `FIXED_NODES` of them, however many CPUs, built
/// without a heap (with the `alloc` feature, one per CPU: `tests/arenas.rs`).
#[test]
fn per_cpu_arenas_stop_at_the_fixed_node_table() {
    let arena_pages = pagealloc::builder::MIN_ARENA_PAGES;
    let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 16 * arena_pages)
        .policy(pagealloc::presets::find("pagealloc").unwrap().policy);
    let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 16) as usize;
    let memory = boot_memory(bytes);
    let (allocator, allocations) =
        heap_allocations_of(|| PageAllocator::build_in(builder, TestPlatform::new(16), memory));
    let allocator = allocator.expect("metadata_bytes is enough");
    assert_eq!(allocations, 0, "the build took heap memory");
    assert_eq!(allocator.zones().len(), FIXED_NODES);
    let arenas: Vec<u16> = (0..16).map(|cpu| allocator.node_of_cpu(cpu)).collect();
    assert_eq!(arenas, (0..16).map(|cpu| (cpu % FIXED_NODES) as u16).collect::<Vec<_>>(), "round robin");
}

/// A `core::fmt::Write` into a fixed buffer, as a kernel's console or seq_file would be.
struct FixedText {
    bytes: [u8; 16384],
    len: usize,
}

impl std::fmt::Write for FixedText {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let end = self.len + text.len();
        self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?.copy_from_slice(text.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The /proc views and the stats snapshot need no heap.
#[test]
fn views_and_stats_work_without_a_heap() {
    let builder = AllocatorBuilder::pc_layout(256);
    let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 2) as usize;
    let memory = boot_memory(bytes);
    let (allocator, allocations) =
        heap_allocations_of(|| PageAllocator::build_in(builder, TestPlatform::new(2), memory));
    let allocator = allocator.unwrap();
    assert_eq!(allocations, 0);
    let block = allocator.alloc_pages(3, AllocRequest::KERNEL).unwrap();
    let mut text = FixedText { bytes: [0; 16384], len: 0 };
    let ((), allocations) = heap_allocations_of(|| {
        pagealloc::views::write_buddyinfo(&mut text, &allocator).unwrap();
        pagealloc::views::write_pagetypeinfo(&mut text, &allocator).unwrap();
        pagealloc::views::write_zoneinfo(&mut text, &allocator).unwrap();
        let stats = allocator.stats();
        assert_eq!(stats.free_pages, stats.managed_pages - 8);
    });
    assert_eq!(allocations, 0, "the views took heap memory");
    let text = std::str::from_utf8(&text.bytes[..text.len]).unwrap();
    assert!(text.starts_with("Node 0, zone      DMA "), "{text}");
    assert!(text.contains("Node 0, zone   Normal\n  pages free"), "{text}");
    allocator.free_pages(block).unwrap();
}
