//! Building an allocator: zones with their parameters, free memory and pagesets, then the
//! nodes' zonelists (mirrors free_area_init(), memblock_free_all(), build_zonelists() and
//! setup_zone_pageset()).

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

use super::cpu_hotplug::OnlineCpus;
use super::{periodic, Node, PageAllocator, NEXT_ALLOCATOR_ID};
use crate::buddy::BuddyCore;
use crate::builder::{AllocatorBuilder, BuildError};
use crate::frame::{FrameInfo, FrameState};
use crate::fullness::{FullnessBuckets, PageblockFree};
use crate::meta::{MetaArena, MetaArenaFull, MetaSlice, MetaSlots};
use crate::metadata_memory::MetadataMemory;
use crate::pcp::{PcpSlot, PerCpuPages};
use crate::platform::Platform;
use crate::policy::{FreePagesCount, HighMaxRule};
use crate::sizing::{BootSizing, MachineSpec};
use crate::table::{Table, FIXED_NODES, FIXED_ZONES};
use crate::types::{Pfn, ZoneType, MAX_NR_ZONES, MAX_ORDER, NR_MIGRATETYPES, PAGEBLOCK_PAGES};
use crate::zone::{Zone, ZoneParams, ZoneState};
use crate::zone_mem::ZoneMem;

impl<P: Platform> PageAllocator<P> {
    /// Builds the zones, derives their parameters and frees every managed frame into the
    /// buddy in the largest aligned blocks (as memblock_free_all() does at boot), with the
    /// tables on the heap (the `alloc` feature; [`Self::build_in`] needs none).
    ///
    /// ```
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// // One node of 2 CPUs: DMA32 below 4 GiB, Normal above, a reserved firmware range.
    /// let builder = AllocatorBuilder::new()
    ///     .node(2)
    ///     .zone(0, ZoneType::Dma32, 0x1000..0x10_0000)
    ///     .zone(0, ZoneType::Normal, 0x10_0000..0x14_0000)
    ///     .reserve(0x1000..0x1100);
    /// let allocator = PageAllocator::build(builder, TestPlatform::new(2)).unwrap();
    /// assert_eq!(allocator.counters().managed_pages(), 0x13_f000 - 0x100);
    /// ```
    #[cfg(any(feature = "alloc", test))]
    pub fn build(builder: AllocatorBuilder, platform: P) -> Result<PageAllocator<P>, BuildError> {
        Self::build_with(builder, platform, None)
    }

    /// [`Self::build`] with every table (all of [`Self::metadata_bytes`]: frame records,
    /// pageblock types and counts, pagesets, zones, nodes, per-CPU tables, the derived
    /// sizing) placed in `memory`, given for the allocator's lifetime, as a kernel carves
    /// its memmap out of early memory before it has a heap. Memory given with its physical
    /// address ([`MetadataMemory::at`]) is reserved from the description first, so the
    /// allocator never hands out its own records. Without the `alloc` feature it takes
    /// nothing from a heap (`tests/no_alloc.rs`); with it, the zonelists are `Vec`s of a few
    /// bytes (`tests/metadata_bytes.rs`). `memory` too small is
    /// [`BuildError::MetadataMemoryTooSmall`], naming all the bytes the build needs.
    ///
    /// ```
    /// use core::mem::MaybeUninit;
    /// use pagealloc::{AllocRequest, AllocatorBuilder, MetadataMemory, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let builder = AllocatorBuilder::single_zone(ZoneType::Normal, 1 << 16); // 256 MiB
    /// let bytes = PageAllocator::<TestPlatform>::metadata_bytes(&builder, 2) as usize;
    /// // In a kernel: memory from the boot allocator, with its physical address
    /// // (`MetadataMemory::at`). Here: leaked from the heap, which the allocator does not manage.
    /// let heap = Box::leak(vec![MaybeUninit::uninit(); bytes].into_boxed_slice());
    /// // SAFETY: heap memory is no frame of the described zone.
    /// let memory = unsafe { MetadataMemory::outside_managed_memory(heap) };
    /// let allocator = PageAllocator::build_in(builder, TestPlatform::new(2), memory).unwrap();
    /// let block = allocator.alloc_pages(0, AllocRequest::KERNEL).unwrap();
    /// allocator.free_pages(block).unwrap();
    /// ```
    pub fn build_in(
        builder: AllocatorBuilder,
        platform: P,
        memory: MetadataMemory,
    ) -> Result<PageAllocator<P>, BuildError> {
        Self::build_with(builder, platform, Some(memory))
    }

    /// Builds on the heap (`memory` none) or in `memory`, whose frames, when their address
    /// is known, are reserved first. The builder is changed in place, never moved: on a
    /// boot stack a move copies its tables.
    fn build_with(
        mut builder: AllocatorBuilder,
        platform: P,
        memory: Option<MetadataMemory>,
    ) -> Result<PageAllocator<P>, BuildError> {
        let Some(memory) = memory else {
            let described = describe(&mut builder, platform.nr_cpus())?;
            return Self::build_tables(&mut builder, described, platform, None);
        };
        if let Some(frames) = memory.frames() {
            builder.add_reservation(frames.clone());
            builder.metadata_frames = Some(frames);
        }
        let needed_bytes = Self::metadata_bytes_outlined(&builder, platform.nr_cpus());
        let described = describe(&mut builder, platform.nr_cpus())?;
        let built = Self::build_tables(&mut builder, described, platform, Some(&mut MetaArena::new(memory.bytes)));
        built.map_err(|error| match error {
            // The table that did not fit knows only the bytes up to itself.
            BuildError::MetadataMemoryTooSmall { given_bytes, .. } => {
                BuildError::MetadataMemoryTooSmall { needed_bytes, given_bytes }
            }
            error => error,
        })
    }

    /// [`Self::metadata_bytes`] in a frame of its own, popped before the build's: a boot
    /// stack holds one at a time.
    #[inline(never)]
    fn metadata_bytes_outlined(builder: &AllocatorBuilder, nr_cpus: usize) -> u64 {
        Self::metadata_bytes(builder, nr_cpus)
    }

    fn build_tables(
        builder: &mut AllocatorBuilder,
        (spec, boot_sizing): (MachineSpec, BootSizing),
        platform: P,
        mut arena: Option<&mut MetaArena>,
    ) -> Result<PageAllocator<P>, BuildError> {
        let nr_cpus = platform.nr_cpus();
        // Reserved before the zones are made, which place their own tables meanwhile.
        let mut zones = MetaSlots::new(builder.zones.len(), arena.as_deref_mut())?;
        let sink = builder.sink.take();
        for (index, layout) in builder.zones.iter().enumerate() {
            let zone_sizing = boot_sizing.zone(&spec, layout.node as usize, layout.zone_type);
            let managed_ranges = builder.managed_ranges(&layout.span);
            let state = zone_state(builder, index as u16, layout, &zone_sizing, &managed_ranges);
            let mut mem = ZoneMem::new(index as u16, (layout.span.start, layout.span.end), arena.as_deref_mut())?;
            if builder.policy.frag.beyond_linux.fullest_first {
                mem.pageblock_free = PageblockFree::new(mem.pageblock_count(), arena.as_deref_mut())?;
            }
            let mut zone = Zone::new(BuddyCore::new(state, mem));
            if builder.policy.frag.beyond_linux.fullest_first {
                let buckets = FullnessBuckets::new(zone.mem().pageblock_count(), arena.as_deref_mut())?;
                zone.buddy(&platform).lock().area.fullness = Some(buckets);
            }
            // Only when it departs from Linux's default: a simulated platform counts every
            // zone-lock hold, and the Linux presets' reproductions stay byte-identical.
            if !builder.policy.frag.merge_likely_to_tail {
                zone.buddy(&platform).lock().area.merge_likely_to_tail = false;
            }
            mark_reserved(&zone, builder, &layout.span);
            seed_free_memory(&zone, &platform, &managed_ranges);
            // Boot's frees are not events: the sink sees the allocator from here on.
            zone.core.sink = crate::buddy::SinkSlot(sink.clone());
            if builder.policy.vmstat.free_pages == FreePagesCount::PerCpuDiffs {
                zone.buddy(&platform).lock().use_free_diffs(nr_cpus, arena.as_deref_mut())?;
                zone.state().vmstat.set_percpu_drift_mark(percpu_drift_mark(&zone.state().params(), nr_cpus));
            }
            zone.pcp = build_pagesets(&zone, builder, nr_cpus, arena.as_deref_mut())?;
            zones.push(zone);
        }
        let mut zones = zones.finish();
        let nodes = build_nodes(&zones, builder, arena.as_deref_mut())?;
        mark_nofragment_zones(&mut zones, &nodes, &builder.policy.frag);
        let total_managed: u64 = zones.iter().map(|z| z.state().managed_pages()).sum();
        let cpu_node = MetaSlice::new(nr_cpus, arena.as_deref_mut(), |cpu| builder.node_of_cpu(cpu))?;
        let boot_zone_sizings = MetaSlice::new(spec.nodes.len() * MAX_NR_ZONES, arena.as_deref_mut(), |index| {
            boot_sizing.zone(&spec, index / MAX_NR_ZONES, ZoneType::ALL[index % MAX_NR_ZONES])
        })?;
        let periodic = periodic::Schedule::new(nr_cpus, builder.tunables.stat_interval_ms, arena.as_deref_mut())?;
        let cpus = OnlineCpus::new(nr_cpus, arena)?;
        let allocator = PageAllocator {
            id: NEXT_ALLOCATOR_ID.fetch_add(1, Relaxed),
            platform,
            zones,
            nodes,
            cpu_node,
            boot_sizing,
            boot_zone_sizings,
            periodic,
            vmstat: crate::vmstat::GlobalVmstat::new(builder.policy.vmstat.numa),
            tunables: core::mem::take(&mut builder.tunables),
            policy: builder.policy,
            grouping_disabled: total_managed < PAGEBLOCK_PAGES * NR_MIGRATETYPES as u64,
            sink: crate::buddy::SinkSlot(sink),
            reclaim: None,
            migrate: None,
            range_op: AtomicBool::new(false),
            cpus,
        };
        // Memory-only nodes get the CPU that runs their background work.
        allocator.assign_background_cpus();
        Ok(allocator)
    }
}

/// Checks the description (cutting per-CPU arenas) and sizes the machine it describes. Out
/// of line and before the build's own frame: the description's walks and the build's
/// tables never share a boot stack.
#[inline(never)]
fn describe(builder: &mut AllocatorBuilder, nr_cpus: usize) -> Result<(MachineSpec, BootSizing), BuildError> {
    builder.validate(nr_cpus)?;
    let spec = builder.machine_spec();
    let boot_sizing = BootSizing::derive(&spec).map_err(BuildError::Sizing)?;
    Ok((spec, boot_sizing))
}

/// Zone `index`'s state: its parameters from the boot sizing, and its present pages (the
/// span less holes, the records' frames present wherever they lie) and managed pages (`managed_ranges`, the span less holes and reserves).
fn zone_state(
    builder: &AllocatorBuilder,
    index: u16,
    layout: &crate::builder::ZoneLayout,
    zone_sizing: &crate::sizing::ZoneSizing,
    managed_ranges: &[core::ops::Range<Pfn>],
) -> ZoneState {
    let mut state = ZoneState::new(index, layout.node, layout.zone_type, ZoneParams::from(zone_sizing));
    state.present_pages = AtomicU64::new((layout.span.end - layout.span.start) - builder.hole_pages(&layout.span));
    state.managed_pages = AtomicU64::new(managed_ranges.iter().map(|r| r.end - r.start).sum());
    state
}

/// Each node with its zonelist and the O(1) start per highest zone type.
fn build_nodes<P: Platform>(
    zones: &[Zone<P>],
    builder: &AllocatorBuilder,
    arena: Option<&mut MetaArena>,
) -> Result<MetaSlice<Node>, MetaArenaFull> {
    let node_cpus = &builder.node_cpus;
    MetaSlice::new(node_cpus.len(), arena, |node_id| {
        let zonelist = build_zonelist(zones, node_id as u16, node_cpus.len(), builder.arena_homes.as_deref());
        let node = Node {
            cpu_count: node_cpus[node_id],
            home: builder.arena_homes.as_deref().map_or(node_id as u16, |homes| homes[node_id]),
            // Chosen once the allocator stands (`assign_background_cpus`).
            background_cpu: AtomicU32::new(crate::allocator::OWN_CPUS),
            zonelist,
            zonelist_start: Default::default(),
            kswapd: Default::default(),
            kcompactd: Default::default(),
            reclaim: Default::default(),
            compact: crate::compaction::CompactCounters::default(),
            fragment_stalls: AtomicU64::new(0),
        };
        node.set_zonelist_starts(zones);
        node
    })
}

/// NOFRAGMENT when the preferred zone is Normal and DMA32 can take fallbacks instead; on
/// several nodes only if this node has DMA32 (mirrors alloc_flags_nofragment()). Nodes are
/// described nodes: per-CPU arenas of one node are one node, and any arena's DMA32 is the
/// node's. Under defrag_mode every zone starts with NOFRAGMENT; with neither switch, none
/// does.
fn mark_nofragment_zones<P: Platform>(zones: &mut [Zone<P>], nodes: &[Node], frag: &crate::policy::FragPolicy) {
    let home = |zone: &Zone<P>| nodes[zone.state().node as usize].home;
    let single_node = nodes.iter().all(|node| node.home == nodes[0].home);
    let has_dma32 = |zones: &[Zone<P>], node: u16| {
        zones.iter().any(|z| home(z) == node && z.state().zone_type == ZoneType::Dma32 && z.state().is_populated())
    };
    for index in 0..zones.len() {
        let lowzone = zones[index].state().zone_type == ZoneType::Normal
            && (single_node || has_dma32(zones, home(&zones[index])));
        let zone = &mut zones[index];
        zone.core.state.nofragment_when_preferred = frag.defrag_mode || (frag.nofragment_lowzone && lowzone);
        zone.core.state.free_lists_match_pageblocks = frag.fallback == crate::policy::FallbackDesign::ClaimOrSteal;
    }
}

/// One pageset per CPU with the zone's batch and high bounds (policy overrides applied).
/// Before auto-tuning, high is fixed at the low-watermark share (high_min).
fn build_pagesets<P: Platform>(
    zone: &Zone<P>,
    builder: &AllocatorBuilder,
    nr_cpus: usize,
    arena: Option<&mut MetaArena>,
) -> Result<MetaSlice<PcpSlot<P>>, MetaArenaFull> {
    let policy = &builder.policy.pcp;
    // A zone empty at build gets its pagesets too: memory added later fills it (its bounds
    // follow the managed pages then).
    if !policy.enabled {
        return Ok(MetaSlice::empty());
    }
    let (batch, high_min, high_max) = pageset_bounds(zone, policy, nr_cpus);
    let free_high_batch = builder.llc.is_some_and(|llc| llc.slice_holds_batches(batch as u64));
    let home = |node: u16| builder.arena_homes.as_deref().map_or(node, |homes| homes[node as usize]);
    MetaSlice::new(nr_cpus, arena, |cpu| {
        let cpu_node = builder.node_of_cpu(cpu);
        let remote = cpu_node != zone.state().node;
        let other_node = home(cpu_node) != home(zone.state().node);
        PcpSlot::new(
            zone.state().index,
            cpu as u32,
            (remote, other_node),
            PerCpuPages::new(batch, high_min, high_max, free_high_batch),
        )
    })
}

/// A zone's pageset batch, high_min and high_max under `policy` (the derived bounds, or
/// the policy's overrides), at build and whenever memory goes online or offline.
pub(crate) fn pageset_bounds<P: Platform>(
    zone: &Zone<P>,
    policy: &crate::policy::PcpPolicy,
    nr_cpus: usize,
) -> (u32, u32, u32) {
    let bounds = zone.state().params().pcp;
    let batch = policy.batch_override.map_or(bounds.batch_pages as u32, |b| b.max(1));
    let (high_min, high_max) = match policy.high_override {
        Some(high) => (high, high),
        None if policy.autotune_high => {
            let (linux_min, linux_max) = (bounds.high_min_pages as u32, bounds.high_max_pages as u32);
            let high_max = match policy.high_max {
                HighMaxRule::Linux | HighMaxRule::SmallOrdersAtHighMin => linux_max,
                // All pagesets together at most 1/share of the zone.
                HighMaxRule::ZoneShare(share) => {
                    let share_max = zone.state().managed_pages() / u64::from(share.max(1)) / nr_cpus.max(1) as u64;
                    (share_max.min(1 << 24) as u32).max(linux_max)
                }
                HighMaxRule::HighMin => linux_min,
            };
            (linux_min, high_max)
        }
        None => (bounds.high_min_pages as u32, bounds.high_min_pages as u32),
    };
    (batch, high_min, high_max)
}

/// Turns the span's present reserved frames reserved: its frames are holes until the
/// build says otherwise.
fn mark_reserved<P: Platform>(zone: &Zone<P>, builder: &AllocatorBuilder, span: &core::ops::Range<Pfn>) {
    builder.for_each_reserved_run(span, |run| {
        for pfn in run {
            let frame = zone.mem().frame(pfn);
            // A frame in two reservations comes twice.
            if frame.info().state() == FrameState::Hole {
                frame.change(&[FrameState::Hole], FrameInfo::RESERVED);
            }
            debug_assert_eq!(frame.info().state(), FrameState::Reserved);
        }
    });
}

/// Frees each managed range into the buddy in maximal naturally aligned blocks.
fn seed_free_memory<P: Platform>(zone: &Zone<P>, platform: &P, ranges: &[core::ops::Range<Pfn>]) {
    let mut locked = zone.buddy(platform).lock();
    for range in ranges {
        for pfn in range.clone() {
            zone.mem().frame(pfn).change(&[FrameState::Hole], FrameInfo::INTERIOR);
        }
        let mut pfn = range.start;
        while pfn < range.end {
            let align_order = pfn.trailing_zeros().min(MAX_ORDER as u32);
            let fit_order = 63 - (range.end - pfn).leading_zeros();
            let order = align_order.min(fit_order) as u8;
            locked.free_one(pfn, order, zone.mem().pageblock_type(pfn));
            pfn += 1 << order;
        }
    }
}

/// The free count below which `zone_watermark_ok_safe` reads the exact count: the high
/// watermark plus the most the per-CPU diffs can hide, when that could exceed the gap
/// between the low and min watermarks; 0 (never) otherwise (mirrors the percpu_drift_mark
/// step of refresh_zone_stat_thresholds()).
pub(crate) fn percpu_drift_mark(params: &ZoneParams, nr_cpus: usize) -> u64 {
    let max_drift_pages = nr_cpus as u64 * u64::from(params.stat_threshold);
    let tolerate_drift_pages = params.watermarks.low_pages - params.watermarks.min_pages;
    if max_drift_pages > tolerate_drift_pages {
        params.watermarks.high_pages + max_drift_pages
    } else {
        0
    }
}

/// Node-ordered zonelist: local zones highest type first, then other nodes by distance
/// (|a - b|, ties to the lower id); zones empty at build too, for memory added later. With
/// per-CPU arenas (`homes`: each arena's described node), the arenas of the same home come
/// first, then the homes by distance.
fn build_zonelist<P: Platform>(
    zones: &[Zone<P>],
    node: u16,
    node_count: usize,
    homes: Option<&[u16]>,
) -> Table<u16, FIXED_ZONES> {
    let mut node_order: Table<u16, FIXED_NODES> =
        Table::from_fn(node_count, |other| other as u16).expect("as many nodes as the builder's");
    let home = |arena: u16| homes.map_or(arena, |homes| homes[arena as usize]);
    // Keys are distinct (the id breaks ties), so an unstable sort orders them fully.
    node_order.sort_unstable_by_key(|&other| (home(other).abs_diff(home(node)), other.abs_diff(node), other));
    let mut zonelist = Table::new();
    for &other in node_order.iter() {
        // This node's zones, highest type first (one zone per type and node).
        for zone_type in ZoneType::ALL.into_iter().rev() {
            let local = zones.iter().find(|zone| zone.state().node == other && zone.state().zone_type == zone_type);
            if let Some(zone) = local {
                zonelist.push(zone.state().index).expect("at most every zone once");
            }
        }
    }
    zonelist
}
