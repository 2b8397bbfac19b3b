//! What an OS author writes to bring the allocator up, end to end: a firmware memory map
//! with holes, a heap-free start-up whose metadata is carved from that map, every CPU
//! allocating, memory hot-added into a hole, and the statistics. Each step checks what it
//! claims; `cargo run -p pagealloc --example kernel_boot` runs it (CI does).
//!
//! The parts a kernel has and a host does not are stand-ins, marked: physical memory is not
//! mapped here, so the metadata buffer is heap memory standing for the physical range it
//! names, and the CPUs are threads.

use std::mem::MaybeUninit;

use pagealloc::builder::MemoryRegion;
use pagealloc::handle::OwnedBlock;
use pagealloc::platform::{Platform, StdPlatform};
use pagealloc::{AllocRequest, AllocatorBuilder, MetadataMemory, PageAllocator, PhysAddr, ZoneType};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const CPUS: usize = 4;

/// The firmware's usable RAM (an E820 map): low memory, 1 MiB to 1 GiB, and two ranges
/// above 4 GiB with a 512 MiB gap between them (absent at boot, hot-added later).
const MAP: [MemoryRegion; 4] = [
    MemoryRegion::new(PhysAddr(0x1000), PhysAddr(0x9f000)),
    MemoryRegion::new(PhysAddr(MIB), PhysAddr(GIB)),
    MemoryRegion::new(PhysAddr(4 * GIB), PhysAddr(4 * GIB + 512 * MIB)),
    MemoryRegion::new(PhysAddr(5 * GIB), PhysAddr(5 * GIB + 512 * MIB)),
];

/// Metadata for every frame the map spans from 0 to its end, sized before anything runs.
const METADATA_BYTES: u64 = PageAllocator::<StdPlatform>::metadata_bytes_bound((5 * GIB + 512 * MIB) / 4096, 1, CPUS);

fn main() {
    let allocator = boot();
    every_cpu_allocates(&allocator);
    hot_add(&allocator);
    report(&allocator);
}

/// Builds the allocator with no heap: the metadata lies in the first megabytes above
/// 4 GiB, which the build reserves, so no allocation ever hands those frames out.
fn boot() -> PageAllocator<StdPlatform> {
    let builder = AllocatorBuilder::new().node(CPUS as u32).memory_map(&MAP);
    let needed = PageAllocator::<StdPlatform>::metadata_bytes(&builder, CPUS);
    assert!(needed <= METADATA_BYTES, "the const bound covers the build: {needed} of {METADATA_BYTES}");
    // Stand-in: a kernel maps the physical range at its direct-map address instead.
    let bytes: &'static mut [MaybeUninit<u8>] = Box::leak(vec![MaybeUninit::uninit(); needed as usize].into());
    let memory = MetadataMemory::at(bytes, PhysAddr(4 * GIB));
    let reserved = memory.frames().expect("its address is known");
    let allocator = PageAllocator::build_in(builder, StdPlatform::with_cpus(CPUS), memory).expect("the map is valid");
    let zones: Vec<ZoneType> = allocator.zones().iter().map(|zone| zone.state().zone_type()).collect();
    assert_eq!(zones, [ZoneType::Dma, ZoneType::Dma32, ZoneType::Normal]);
    let usable_pages = (0x9f000 - 0x1000 + (GIB - MIB) + GIB) / 4096;
    assert_eq!(allocator.counters().managed_pages(), usable_pages - (reserved.end - reserved.start));
    println!(
        "booted: {} MiB managed, {} KiB of metadata at {:#x} reserved",
        allocator.counters().managed_pages() / 256,
        needed / 1024,
        4 * GIB
    );
    allocator
}

/// Every CPU takes pages and 2 MiB blocks through handles that free on drop.
fn every_cpu_allocates(allocator: &PageAllocator<StdPlatform>) {
    let free_before = allocator.stats().free_pages;
    std::thread::scope(|scope| {
        for _ in 0..CPUS {
            scope.spawn(|| {
                let mut held: Vec<OwnedBlock<'_, StdPlatform>> = Vec::new();
                for round in 0..2_000 {
                    let order = if round % 100 == 0 { 9 } else { 0 };
                    held.push(allocator.alloc_owned(order, AllocRequest::KERNEL).expect("memory is plentiful"));
                    if held.len() > 64 {
                        held.swap_remove(round % held.len());
                    }
                }
                allocator.platform().current_cpu()
            });
        }
    });
    allocator.pagesets().drain_all();
    assert_eq!(allocator.stats().free_pages, free_before, "every handle freed its block");
    println!("{CPUS} CPUs allocated and freed 8,000 blocks");
}

/// The 512 MiB gap comes online (a DIMM the firmware announces after boot).
fn hot_add(allocator: &PageAllocator<StdPlatform>) {
    let before = allocator.counters().managed_pages();
    let gap = (4 * GIB + 512 * MIB) / 4096..(5 * GIB) / 4096;
    let added =
        allocator.hotplug().add_memory(gap.clone(), ZoneType::Normal).expect("the gap is a hole of the Normal zone");
    assert_eq!(added, gap.end - gap.start);
    assert_eq!(allocator.counters().managed_pages(), before + added);
    println!("hot-added {} MiB", added / 256);
}

fn report(allocator: &PageAllocator<StdPlatform>) {
    let stats = allocator.stats();
    assert_eq!(stats.free_pages, stats.managed_pages, "nothing is allocated");
    println!("free {} of {} pages; per zone:", stats.free_pages, stats.managed_pages);
    for zone in stats.zones.iter() {
        println!(
            "  {:>7}: {:>7} free, largest blocks (order 10) {}",
            zone.zone_type.kernel_name(),
            zone.free_pages(),
            zone.free_blocks[10]
        );
    }
    let mut buddyinfo = String::new();
    pagealloc::views::write_buddyinfo(&mut buddyinfo, allocator).expect("a String takes any text");
    print!("/proc/buddyinfo:\n{buddyinfo}");
    allocator.check_invariants().expect("every structure is consistent");
}
