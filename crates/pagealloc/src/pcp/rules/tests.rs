//! Each rule against the kernel's arithmetic, stage by stage.

use super::*;

/// A free as the free path sees it: the answer, then the order noted.
fn free_high_then_note(pcp: &mut PerCpuPages, policy: &PcpPolicy, order: u8) -> bool {
    let free_high = is_free_high(pcp, policy, order);
    note_free_order(pcp, order);
    free_high
}
use crate::presets::find;

fn policy(name: &str) -> PcpPolicy {
    find(name).unwrap().policy.pcp
}

/// A pageset of a 64 GiB Normal zone on 64 CPUs: batch 63, high_min 390, high_max 32768.
fn pageset() -> PerCpuPages {
    PerCpuPages::new(63, 390, 32_768, false)
}

#[test]
fn refill_before_alloc_factor_is_batch_scaled_down_by_order() {
    let mut pcp = pageset();
    let base = policy("base");
    assert_eq!(nr_pcp_alloc(&mut pcp, &base, 0, 0), 63);
    assert_eq!(nr_pcp_alloc(&mut pcp, &base, 0, 1), 31);
    assert_eq!(nr_pcp_alloc(&mut pcp, &base, 0, 3), 7);
    assert_eq!(nr_pcp_alloc(&mut pcp, &base, 0, 9), 2, "at least 2 blocks");
}

#[test]
fn pageblock_order_refills_scale_with_the_shift_up_to_high_max() {
    let pagealloc = policy("pagealloc");
    assert_eq!(pagealloc.thp_batch_shift, 8);
    // 63 << 8 = 16,128 pages: 31 pageblocks per zone-lock hold, under high_max 32,768.
    assert_eq!(nr_pcp_alloc(&mut pageset(), &pagealloc, 0, PAGEBLOCK_ORDER), 31);
    // 224 CPUs on 4 GiB: high_max 585 pages holds one pageblock; the refill is Linux's 2.
    let mut many_cpus = PerCpuPages::new(63, 390, 585, false);
    assert_eq!(thp_batch_pages(&many_cpus, &pagealloc), 585);
    assert_eq!(nr_pcp_alloc(&mut many_cpus, &pagealloc, 0, PAGEBLOCK_ORDER), 2);
    // Linux presets: no shift, batch >> order and at least 2 blocks.
    assert_eq!(thp_batch_pages(&pageset(), &policy("mainline")), 63);
}

/// The largest batch an override allows (2^24 pages) shifted by the largest shift (8)
/// is 2^32: it must cap at high_max, not wrap to a zero chunk.
#[test]
fn the_largest_batch_and_shift_cap_at_high_max_without_wrapping() {
    let pagealloc = policy("pagealloc");
    let largest = PerCpuPages::new(1 << 24, 1 << 24, u32::MAX, false);
    assert_eq!(thp_batch_pages(&largest, &pagealloc), u32::MAX);
    let small_high = PerCpuPages::new(1 << 24, 6, 9, false);
    assert_eq!(thp_batch_pages(&small_high, &pagealloc), 1 << 24, "at least batch");
}

#[test]
fn refill_raises_high_and_doubles_alloc_factor_until_capped() {
    let mainline = policy("mainline");
    let mut pcp = pageset();
    // high 390: raised by the batch, factor 0 -> 1 (63 <= max(453 - 0 - 63, 63)).
    assert_eq!(nr_pcp_alloc(&mut pcp, &mainline, 0, 0), 63);
    assert_eq!((pcp.high_pages, pcp.alloc_factor), (453, 1));
    // Next refill: 126 pages, high 579.
    assert_eq!(nr_pcp_alloc(&mut pcp, &mainline, 0, 0), 126);
    assert_eq!((pcp.high_pages, pcp.alloc_factor), (579, 2));
    // With count near high the refill is capped at max(high - count - batch, batch).
    pcp.count_pages = 700;
    let got = nr_pcp_alloc(&mut pcp, &mainline, 0, 0);
    assert_eq!(pcp.high_pages, 579 + 252);
    assert_eq!(got, 831 - 700 - 63);
    for _ in 0..20 {
        pcp.count_pages = 0;
        nr_pcp_alloc(&mut pcp, &mainline, 0, 0);
    }
    assert_eq!(pcp.alloc_factor, 5, "PCP_BATCH_SCALE_MAX");
    assert_eq!(pcp.high_pages, 32_768, "raised up to high_max");
}

#[test]
fn below_high_stops_raising_high() {
    let mainline = policy("mainline");
    let mut pcp = pageset();
    nr_pcp_alloc(&mut pcp, &mainline, zone_flags::BELOW_HIGH, 0);
    assert_eq!(pcp.high_pages, 390);
    // Before patch 8 the flag is ignored.
    let mut pcp = pageset();
    nr_pcp_alloc(&mut pcp, &policy("patch7"), zone_flags::BELOW_HIGH, 0);
    assert_eq!(pcp.high_pages, 453);
}

#[test]
fn free_high_rules_per_stage() {
    // base: any order 1..3 free while freeing without allocation.
    let mut pcp = pageset();
    pcp.free_factor = 1;
    assert!(free_high_then_note(&mut pcp, &policy("base"), 1));
    // patch1: needs the previous free to be high-order too.
    let mut pcp = pageset();
    pcp.free_factor = 1;
    assert!(!free_high_then_note(&mut pcp, &policy("patch1"), 1), "first order-1 free after order-0 frees");
    assert!(free_high_then_note(&mut pcp, &policy("patch1"), 2), "second consecutive");
    assert!(!free_high_then_note(&mut pcp, &policy("patch1"), 0));
    assert_eq!(pcp.flags & pcp_flags::PREV_FREE_HIGH_ORDER, 0, "order-0 free clears the flag");
    // patch3: with a large cache slice, only once a batch is cached.
    let mut pcp = PerCpuPages::new(63, 390, 32_768, true);
    pcp.free_factor = 1;
    pcp.flags |= pcp_flags::PREV_FREE_HIGH_ORDER;
    pcp.count_pages = 62;
    assert!(!free_high_then_note(&mut pcp, &policy("patch3"), 1));
    pcp.count_pages = 63;
    assert!(free_high_then_note(&mut pcp, &policy("patch3"), 1));
    // patch9: free_count >= batch; mainline: >= batch + high_min / 2 = 258.
    let mut pcp = pageset();
    pcp.flags |= pcp_flags::PREV_FREE_HIGH_ORDER;
    pcp.free_count_pages = 63;
    assert!(free_high_then_note(&mut pcp, &policy("patch9"), 1));
    assert!(!free_high_then_note(&mut pcp, &policy("mainline"), 1));
    pcp.free_count_pages = 258;
    assert!(free_high_then_note(&mut pcp, &policy("mainline"), 1));
    // THP frees never count and clear the flag.
    assert!(!free_high_then_note(&mut pcp, &policy("mainline"), 9));
    assert_eq!(pcp.flags & pcp_flags::PREV_FREE_HIGH_ORDER, 0);
}

#[test]
fn fixed_high_drains_on_free_high_and_under_reclaim() {
    let base = policy("base");
    let mut pcp = PerCpuPages::new(63, 1000, 1000, false);
    assert_eq!(nr_pcp_high(&mut pcp, &base, 0, false), 1000);
    assert_eq!(nr_pcp_high(&mut pcp, &base, 0, true), 0);
    assert_eq!(nr_pcp_high(&mut pcp, &base, zone_flags::RECLAIM_ACTIVE, false), 252);
    pcp.count_pages = 1000;
    assert_eq!(nr_pcp_free(&mut pcp, &base, 1000, true), 1000, "v6.6 free_high empties the pageset");
    assert_eq!(nr_pcp_free(&mut pcp, &policy("patch4"), 1000, true), 1000, "under the cap of 63 << 5");
    pcp.count_pages = 3000;
    assert_eq!(nr_pcp_free(&mut pcp, &policy("patch4"), 1000, true), 63 << 5);
}

#[test]
fn free_factor_doubles_drains_up_to_high_minus_batch() {
    let base = policy("base");
    let mut pcp = PerCpuPages::new(63, 1000, 1000, false);
    let drains: alloc::vec::Vec<u32> = (0..6).map(|_| nr_pcp_free(&mut pcp, &base, 1000, false)).collect();
    assert_eq!(drains, [63, 126, 252, 504, 937, 937]);
    assert_eq!(pcp.free_factor, 4, "stops growing once the scaled batch passes high - batch");
}

/// decay_pcp_high() may leave high above high_max (count - batch << scale_max, with a
/// pageblock-order block on the pageset). The next free clamps it and stores the clamp,
/// as nr_pcp_high() does on every call, and drains against high_max.
#[test]
fn a_decayed_high_above_high_max_is_clamped_by_the_next_free() {
    let mainline = policy("mainline");
    let mut pcp = PerCpuPages::new(3, 60, 384, false);
    pcp.count_pages = 535;
    pcp.high_pages = 384;
    decay_high(&mut pcp, &mainline);
    assert_eq!(pcp.high_pages, 535 - (3 << 5), "decay_pcp_high()'s max3(), unclamped");
    pcp.count_pages = 400;
    assert_eq!(nr_pcp_high(&mut pcp, &mainline, 0, false), 384);
    assert_eq!(pcp.high_pages, 384, "the clamp is stored");
}

#[test]
fn autotuned_high_rules() {
    let mainline = policy("mainline");
    // free_high: shrink high by batch << 5, drain everything (h = 0).
    let mut pcp = pageset();
    pcp.high_pages = 5000;
    assert_eq!(nr_pcp_high(&mut pcp, &mainline, 0, true), 0);
    assert_eq!(pcp.high_pages, 5000 - 2016);
    // RECLAIM_ACTIVE: shrink by max(free_count, batch), effective min(4 batch, high).
    let mut pcp = pageset();
    pcp.high_pages = 5000;
    pcp.free_count_pages = 100;
    assert_eq!(nr_pcp_high(&mut pcp, &mainline, zone_flags::RECLAIM_ACTIVE, false), 252);
    assert_eq!(pcp.high_pages, 4900);
    // BELOW_HIGH: shrink, effective max(count, high_min).
    let mut pcp = pageset();
    pcp.high_pages = 5000;
    pcp.count_pages = 600;
    assert_eq!(nr_pcp_high(&mut pcp, &mainline, zone_flags::BELOW_HIGH, false), 600);
    assert_eq!(pcp.high_pages, 5000 - 63);
    // Over high: grow high to free_count + batch, but this free drains against the old high.
    let mut pcp = pageset();
    pcp.count_pages = 400;
    pcp.free_count_pages = 700;
    assert_eq!(nr_pcp_high(&mut pcp, &mainline, 0, false), 390);
    assert_eq!(pcp.high_pages, 763);
    assert_eq!(nr_pcp_free(&mut pcp, &mainline, 390, false), 390 - 63, "clamp(free_count, batch, high - batch)");
    // Equal bounds: fixed.
    let mut pcp = PerCpuPages::new(63, 700, 700, false);
    assert_eq!(nr_pcp_high(&mut pcp, &mainline, 0, false), 700);
}

/// A tiny zone's low-watermark share can exceed managed/8's: high_min 20 > high_max 10.
/// Growing high then follows the kernel's clamp() (to high_max), where Rust's
/// Ord::clamp panicked on every over-high free.
#[test]
fn growing_high_on_a_tiny_zone_with_crossed_bounds_does_not_panic() {
    let mut pcp = PerCpuPages::new(1, 20, 10, false);
    pcp.count_pages = 25;
    pcp.free_count_pages = 100;
    assert_eq!(nr_pcp_high(&mut pcp, &policy("mainline"), 0, false), 10, "drains against the re-clamped high");
    assert_eq!(pcp.high_pages, 10, "min(max(need_high, high_min), high_max)");
}

/// Crossed bounds (high_min 20 > high_max 10) clamp to high_max, as the kernel's clamp()
/// does for every high at or above high_max: min(max(high, high_min), high_max).
#[test]
fn crossed_bounds_clamp_to_high_max() {
    let mut pcp = PerCpuPages::new(1, 20, 10, false);
    assert_eq!(clamped_high(&mut pcp), 10);
    assert_eq!(pcp.high_pages, 10, "stored back");
    pcp.high_pages = 30;
    assert_eq!(clamped_high(&mut pcp), 10);
    let mut pcp = pageset();
    pcp.high_pages = 100;
    assert_eq!(clamped_high(&mut pcp), 390, "below high_min: high_min");
    pcp.high_pages = 40_000;
    assert_eq!(clamped_high(&mut pcp), 32_768, "above high_max: high_max");
}

#[test]
fn decay_moves_high_an_eighth_towards_high_min() {
    let mainline = policy("mainline");
    let mut pcp = pageset();
    pcp.high_pages = 8000;
    pcp.count_pages = 7000;
    let to_drain = decay_high(&mut pcp, &mainline);
    assert_eq!(pcp.high_pages, 7000);
    assert_eq!(to_drain, 0);
    pcp.count_pages = 7500;
    assert_eq!(decay_high(&mut pcp, &mainline), 7500 - 6125);
    let mut pcp = pageset();
    pcp.high_pages = 400;
    decay_high(&mut pcp, &mainline);
    assert_eq!(pcp.high_pages, 390);
}
