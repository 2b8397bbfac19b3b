//! The allocator's hottest path in isolation: order-0 alloc+free pairs on a warm pageset.
//! `cargo run --release --example hot_pair [pairs] [preset]` (default: the builder's
//! policy); also handy under callgrind or perf.

use std::time::Instant;

use pagealloc::platform::{Platform, StdPlatform};
use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};

fn main() {
    let pairs: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000_000);
    let mut builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 18);
    if let Some(name) = std::env::args().nth(2) {
        let preset = pagealloc::presets::find(&name).unwrap_or_else(|| panic!("no preset {name}"));
        builder = builder.policy(preset.policy);
    }
    let allocator = PageAllocator::build(builder, StdPlatform::new()).unwrap();
    let warm = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
    let start = Instant::now();
    for _ in 0..pairs {
        let block = allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap();
        allocator.free_pages(std::hint::black_box(block)).unwrap();
    }
    let ns = start.elapsed().as_nanos() as f64 / pairs as f64;
    println!("{pairs} pairs: {ns:.1} ns per alloc+free pair");
    allocator.free_pages(warm).unwrap();

    // The CPU id comes from sched_getcpu(), which glibc >= 2.35 answers from the rseq area.
    let platform = allocator.platform();
    let calls = 20_000_000u64;
    let start = Instant::now();
    let mut sum = 0usize;
    for _ in 0..calls {
        sum = sum.wrapping_add(std::hint::black_box(platform.current_cpu()));
    }
    let ns = start.elapsed().as_nanos() as f64 / calls as f64;
    println!("current_cpu(): {ns:.2} ns per call (checksum {sum})");
}
