//! Fullest-first placement over LLFree's frag pattern (`pagelab bench frag`, after its
//! eval/src/bin/frag.rs): fill memory, free a random half, then churn (free a random page,
//! allocate one) on two CPUs. Emptier pageblocks must drain into whole free pageblocks,
//! and the pagesets, whose pages placement cannot see, must stay at high_min.

#![cfg(feature = "alloc")]

mod common;

use common::*;
use pagealloc::policy::HighMaxRule;
use pagealloc::{AllocRequest, Block, Policy, PAGEBLOCK_ORDER};

/// 1 GiB, as `pagelab reproduce --quick llfree-frag`.
const PAGES: u64 = 1 << 18;
const CPUS: usize = 2;
/// LLFree's frag: each round frees and reallocates a tenth of a thread's share.
const ROUNDS: usize = 100;

/// Allocations a CPU makes before the other takes its turn in the fill.
const FILL_TURN_PAGES: usize = 1000;

struct FragRun {
    whole_pageblocks_pct: f64,
    max_pageset_pages: u32,
    high_min_pages: u32,
}

/// Memory free as whole pageblocks in the buddy, percent of the zone.
fn whole_pageblocks_pct(allocator: &TestAllocator) -> f64 {
    let huge: u64 = buddyinfo(allocator)[0][PAGEBLOCK_ORDER as usize..]
        .iter()
        .enumerate()
        .map(|(above, blocks)| blocks << (PAGEBLOCK_ORDER as usize + above))
        .sum();
    huge as f64 * 100.0 / allocator.counters().managed_pages() as f64
}

fn max_pageset_pages(allocator: &TestAllocator) -> u32 {
    let pagesets = allocator.zones()[0].pagesets();
    pagesets.iter().map(|slot| slot.inspect(allocator.platform(), |p| p.small_order_pages())).max().unwrap_or(0)
}

/// LLFree's frag pattern under `policy`, the fill stopping at `fill_pages` if memory lasts.
fn frag_run(policy: Policy, fill_pages: usize) -> FragRun {
    let allocator = one_normal_zone(PAGES, policy, CPUS);
    let high_min_pages = allocator.zones()[0].pagesets()[0].inspect(allocator.platform(), |p| p.high_min_pages());
    // Both CPUs fill memory, as the bench's threads do, a pageset refill's worth at a time.
    let mut held: Vec<Block> = Vec::new();
    for cpu in (0..CPUS).cycle() {
        allocator.platform().set_cpu(cpu);
        let turn = FILL_TURN_PAGES.min(fill_pages - held.len());
        let before = held.len();
        held.extend((0..turn).map_while(|_| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).ok()));
        if held.len() - before < FILL_TURN_PAGES {
            break;
        }
    }
    allocator.platform().set_cpu(0);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // One CPU frees the random half, as the bench's main thread does.
    for _ in 0..held.len() / 2 {
        let victim = rng.below(held.len() as u64) as usize;
        allocator.free_pages(held.swap_remove(victim)).unwrap();
    }
    let mut max_pages = max_pageset_pages(&allocator);
    let churn = held.len() / CPUS / 10;
    for _ in 0..ROUNDS {
        for cpu in 0..CPUS {
            allocator.platform().set_cpu(cpu);
            for _ in 0..churn {
                let victim = rng.below(held.len() as u64) as usize;
                allocator.free_pages(held.swap_remove(victim)).unwrap();
                held.push(allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).unwrap());
            }
        }
        max_pages = max_pages.max(max_pageset_pages(&allocator));
    }
    allocator.check_invariants().unwrap();
    FragRun { whole_pageblocks_pct: whole_pageblocks_pct(&allocator), max_pageset_pages: max_pages, high_min_pages }
}

#[test]
fn fullest_first_drains_pageblocks_whole_with_pagesets_at_high_min() {
    for name in ["mainline+fullest-first", "pagealloc"] {
        let policy = preset(name);
        assert_eq!(policy.pcp.high_max, HighMaxRule::SmallOrdersAtHighMin, "{name}");
        let run = frag_run(policy, usize::MAX);
        assert!(
            run.max_pageset_pages <= run.high_min_pages,
            "{name}: a pageset held {} pages, above high_min {}",
            run.max_pageset_pages,
            run.high_min_pages
        );
        // Half of memory is free; LLFree keeps about 48% of memory whole after 100 rounds.
        assert!(run.whole_pageblocks_pct >= 20.0, "{name}: {:.1}% free as whole pageblocks", run.whole_pageblocks_pct);
    }
}

#[test]
fn an_auto_tuned_pageset_hides_enough_pages_to_stop_fullest_first() {
    // A fill that stops short of the watermarks leaves the zone above its high watermark,
    // so nothing shrinks the high the fill's refills raised (the state the bench's threads
    // sometimes leave): the CPU that frees the half keeps up to high_max of it. With frees
    // sent to the buddy only from pageblocks half free (the first threshold), the hidden
    // pages make every pageblock look fuller than that, and nothing drains.
    let fill_pages = PAGES as usize * 9 / 10;
    let with = |high_max: HighMaxRule, buddy_bound_free_pages: u16| {
        let mut policy = preset("mainline+fullest-first");
        policy.pcp.high_max = high_max;
        policy.frag.beyond_linux.buddy_bound_free_pages = buddy_bound_free_pages;
        frag_run(policy, fill_pages)
    };
    let half = 1u16 << (PAGEBLOCK_ORDER - 1);
    let linux = with(HighMaxRule::Linux, half);
    let bounded = with(HighMaxRule::SmallOrdersAtHighMin, half);
    assert!(
        linux.max_pageset_pages > 4 * linux.high_min_pages,
        "the half-free raised a pageset to {} pages (high_min {})",
        linux.max_pageset_pages,
        linux.high_min_pages
    );
    assert!(
        linux.whole_pageblocks_pct * 2.0 < bounded.whole_pageblocks_pct,
        "Linux's high_max {:.1}% against high_min {:.1}% free as whole pageblocks",
        linux.whole_pageblocks_pct,
        bounded.whole_pageblocks_pct
    );
    // The preset's quarter-pageblock threshold sees through the hidden pages as well.
    let quarter = preset("mainline+fullest-first").frag.beyond_linux.buddy_bound_free_pages;
    assert_eq!(quarter, 1u16 << (PAGEBLOCK_ORDER - 2));
    let linux_quarter = with(HighMaxRule::Linux, quarter);
    assert!(
        linux_quarter.whole_pageblocks_pct * 2.0 > bounded.whole_pageblocks_pct,
        "Linux's high_max with the quarter threshold {:.1}%",
        linux_quarter.whole_pageblocks_pct
    );
}

/// Every preset with fullest-first placement (`pagealloc`, `mainline+fullest-first`) holds
/// its pagesets' small orders to high_min, and every other preset keeps Linux's high_max.
/// Under the same frag pattern, the bound keeps mainline+fullest-first's pagesets at
/// high_min where mainline's auto-tunes above it.
#[test]
fn pagealloc_and_mainline_fullest_first_bound_high_and_linux_presets_do_not() {
    let (bounded, linux): (Vec<&pagealloc::presets::Preset>, Vec<_>) =
        pagealloc::presets::PRESETS.iter().partition(|preset| preset.policy.frag.beyond_linux.fullest_first);
    let bounded_names: Vec<&str> = bounded.iter().map(|preset| preset.name).collect();
    assert_eq!(bounded_names, ["mainline+fullest-first", "pagealloc"]);
    for preset in &bounded {
        assert_eq!(preset.policy.pcp.high_max, HighMaxRule::SmallOrdersAtHighMin, "{}", preset.name);
    }
    for preset in &linux {
        assert_ne!(preset.policy.pcp.high_max, HighMaxRule::SmallOrdersAtHighMin, "{}", preset.name);
        assert_ne!(preset.policy.pcp.high_max, HighMaxRule::HighMin, "{}", preset.name);
    }
    let fill_pages = PAGES as usize * 9 / 10;
    let mainline = frag_run(preset("mainline"), fill_pages);
    let fullest = frag_run(preset("mainline+fullest-first"), fill_pages);
    assert!(
        mainline.max_pageset_pages > mainline.high_min_pages,
        "mainline's pagesets auto-tune above high_min ({} pages, high_min {})",
        mainline.max_pageset_pages,
        mainline.high_min_pages
    );
    assert!(
        fullest.max_pageset_pages <= fullest.high_min_pages,
        "mainline+fullest-first held {} pages, above high_min {}",
        fullest.max_pageset_pages,
        fullest.high_min_pages
    );
}

/// `DrainBeyondLinux::warm_merges` only reads ahead: random frees on two CPUs leave the same
/// state with it as without it, buddy-bound flushes included.
#[test]
fn warming_buddy_bound_merges_changes_no_outcome() {
    let run = |warm_merges: bool| {
        let mut policy = preset("pagealloc");
        policy.pcp.drain.beyond_linux.warm_merges = warm_merges;
        // Frees that park never reach the buddy-bound lists these merges warm.
        policy.frag.beyond_linux.parked_frees = false;
        let allocator = one_normal_zone(1 << 14, policy, CPUS);
        let mut held: Vec<Block> =
            std::iter::from_fn(|| allocator.alloc_pages(0, AllocRequest::USER_MOVABLE).ok()).collect();
        let mut rng = Rng(7);
        let drained = |allocator: &TestAllocator| -> u64 {
            let pagesets = allocator.zones()[0].pagesets();
            pagesets
                .iter()
                .map(|s| s.inspect(allocator.platform(), |p| p.counters().drained_pages.iter().sum::<u64>()))
                .sum()
        };
        let drained_before = drained(&allocator);
        while !held.is_empty() {
            allocator.platform().set_cpu(rng.below(CPUS as u64) as usize);
            let victim = rng.below(held.len() as u64) as usize;
            allocator.free_pages(held.swap_remove(victim)).unwrap();
        }
        assert!(drained(&allocator) > drained_before, "the frees reached the buddy through the pagesets");
        fingerprint(&allocator)
    };
    assert_eq!(run(true), run(false));
}
