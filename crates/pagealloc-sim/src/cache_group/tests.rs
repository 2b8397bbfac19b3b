//! The cache group against one reference cache per member, and its fused walks against
//! the separate calls.

use pagealloc::platform::SharedLine;

use super::*;
use crate::cache_set::CacheSet;
use crate::rng::SplitMix64;
use crate::MetadataLayout;

#[test]
fn each_cpu_is_an_lru_of_its_own_and_chains_list_the_holders() {
    let line = CacheKey::line(SharedLine::frame_meta(0, 9), MetadataLayout::LinuxStructPage);
    let mut caches = CacheGroup::new(3, 2 * 4096);
    assert!(!caches.touch(0, line, 64));
    assert!(!caches.touch(2, line, 64));
    assert!(caches.touch(0, line, 64));
    let mut others = Vec::new();
    caches.other_holders(0, line, |cpu| others.push(cpu));
    assert_eq!(others, [2]);
    // CPU 0 streams two pages: the line is evicted there, not on CPU 2.
    caches.touch(0, CacheKey::page(1), 4096);
    caches.touch(0, CacheKey::page(2), 4096);
    assert!(!caches.contains(0, line) && caches.contains(2, line));
    assert_eq!((caches.len(0), caches.used_bytes(0)), (2, 8192));
    assert!(caches.invalidate(2, line));
    assert!(!caches.invalidate(2, line));
    let mut none = Vec::new();
    caches.other_holders(1, line, |cpu| none.push(cpu));
    assert!(none.is_empty());
}

#[test]
fn invalidating_the_others_leaves_only_the_writer() {
    let line = CacheKey::line(SharedLine::frame_meta(0, 9), MetadataLayout::LinuxStructPage);
    let mut caches = CacheGroup::new(4, 2 * 4096);
    for cpu in [3, 1, 0, 2] {
        caches.touch(cpu, line, 64);
    }
    let mut dropped = Vec::new();
    caches.invalidate_others(1, line, |cpu| dropped.push(cpu));
    dropped.sort_unstable();
    assert_eq!(dropped, [0, 2, 3]);
    assert!(caches.contains(1, line));
    assert!((0..4).filter(|&cpu| cpu != 1).all(|cpu| !caches.contains(cpu, line) && caches.len(cpu) == 0));
    // A CPU that does not hold the line drops everyone's copy.
    caches.invalidate_others(2, line, |_| {});
    assert!((0..4).all(|cpu| !caches.contains(cpu, line)));
    assert!(!caches.touch(2, CacheKey::page(5), 4096) && caches.len(2) == 1);
}

/// The same random touches and invalidations on one `CacheSet` per CPU and on
/// `CacheGroup` give the same hits and contents.
#[test]
fn matches_a_cache_set_per_cpu() {
    let cpus = 4;
    let mut sets: Vec<CacheSet> = (0..cpus).map(|_| CacheSet::new(20 * 64 + 2 * 4096)).collect();
    let mut caches = CacheGroup::new(cpus, 20 * 64 + 2 * 4096);
    let mut rng = SplitMix64::new(7);
    for step in 0..20_000 {
        let cpu = (rng.next_u64() % cpus as u64) as usize;
        let (key, bytes) = if rng.next_u64().is_multiple_of(4) {
            (CacheKey::page(rng.next_u64() % 8), 4096)
        } else {
            (
                CacheKey::line(
                    SharedLine::frame_meta(0, (rng.next_u64() % 64) as u32),
                    MetadataLayout::LinuxStructPage,
                ),
                64,
            )
        };
        if rng.next_u64().is_multiple_of(5) {
            assert_eq!(sets[cpu].invalidate(key), caches.invalidate(cpu, key), "step {step}");
        } else {
            assert_eq!(sets[cpu].touch(key, bytes), caches.touch(cpu, key, bytes), "step {step}");
        }
        for (other, set) in sets.iter().enumerate() {
            assert_eq!(set.contains(key), caches.contains(other, key), "step {step}");
            assert_eq!((set.len(), set.used_bytes()), (caches.len(other), caches.used_bytes(other)));
        }
    }
}

/// One walk that touches and visits (or drops) the other holders leaves the caches as
/// `touch` then `other_holders` or `invalidate_others` do, with the same holders seen.
#[test]
fn touching_while_visiting_others_is_touch_then_the_visit() {
    let cpus = 6;
    let mut fused = CacheGroup::new(cpus, 12 * 64 + 4096);
    let mut apart = CacheGroup::new(cpus, 12 * 64 + 4096);
    let mut rng = SplitMix64::new(11);
    let line = |index: u64| CacheKey::line(SharedLine::frame_meta(0, index as u32), MetadataLayout::LinuxStructPage);
    for step in 0..30_000 {
        let cpu = (rng.next_u64() % cpus as u64) as usize;
        let (key, bytes) = if rng.next_u64().is_multiple_of(6) {
            (CacheKey::page(rng.next_u64() % 4), 4096)
        } else {
            (line(rng.next_u64() % 24), 64)
        };
        let write = rng.next_u64().is_multiple_of(3);
        let (mut seen_fused, mut seen_apart) = (Vec::new(), Vec::new());
        let hit = fused.touch_visiting_others(cpu, key, bytes, write, |other| seen_fused.push(other));
        assert_eq!(hit, apart.touch(cpu, key, bytes), "step {step}");
        if write {
            apart.invalidate_others(cpu, key, |other| seen_apart.push(other));
        } else {
            apart.other_holders(cpu, key, |other| seen_apart.push(other));
        }
        seen_fused.sort_unstable();
        seen_apart.sort_unstable();
        assert_eq!(seen_fused, seen_apart, "step {step}");
        for other in 0..cpus {
            assert_eq!((fused.len(other), fused.used_bytes(other)), (apart.len(other), apart.used_bytes(other)));
            for probe in (0..24).map(line).chain((0..4).map(CacheKey::page)) {
                assert_eq!(fused.contains(other, probe), apart.contains(other, probe), "step {step}");
            }
        }
    }
}
