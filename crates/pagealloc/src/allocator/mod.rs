//! The page allocator: zones composed with their nodes' zonelists, the policy and the
//! periodic work. Each concern is one file:
//! - `build`: building the zones, pagesets and zonelists (mirrors free_area_init() and
//!   memblock_free_all());
//! - `alloc_path`: the zonelist walk, fast and slow paths (mirrors __alloc_pages(),
//!   get_page_from_freelist(), rmqueue());
//! - `free_path`: frees (mirrors __free_pages());
//! - `drains`: explicit pageset drains (drain_local_pages(), drain_all_pages());
//! - `cpu_hotplug`: CPUs going offline and online, and which CPU runs each node's
//!   background work meanwhile;
//! - `periodic`: the work the kernel does on its own schedule (vmstat_update, kswapd);
//! - `reclaim`: background and direct reclaim through the client's [`Reclaim`] callback;
//! - `migrate`: the client's [`Migrate`] callback that moves blocks; `compact`: compaction
//!   runs through it, and direct compaction; `compact_hold`: the pages a run holds, given
//!   back however it ends; `kcompactd`: background and proactive compaction;
//! - `range`: emptying a range by isolation and migration; `range_parts`: a range over
//!   contiguous arenas, part by part; `hotplug`: memory added,
//!   offlined and onlined at run time; `contig`: contiguous runs beyond MAX_ORDER;
//! - `split`: splitting an allocated block into order-0 blocks (split_page());
//! - `stats`: counters summed over zones and CPUs;
//! - `watermarks`: watermark checks for callers outside the allocation path.

mod alloc_path;
mod build;
mod bulk_free;
mod compact;
mod compact_hold;
mod contig;
mod cpu_hotplug;
mod daemons;
mod drains;
mod exact;
mod free_path;
mod grow;
mod handles;
mod hotplug;
mod kcompactd;
mod kswapd;
mod metadata;
mod migrate;
mod periodic;
mod range;
mod range_parts;
mod reclaim;
mod records;
mod resize;
mod snapshot;
mod split;
mod stats;
mod watermarks;

use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::builder::AllocatorBuilder;
use crate::fallback::FallbackRules;
use crate::meta::MetaSlice;
use crate::platform::Platform;
use crate::policy::Policy;
use crate::sizing::{BootSizing, MachineSizing, Tunables, ZoneSizing};
use crate::types::{Pfn, ZoneType, MAX_NR_ZONES};
use crate::vmstat::{FoldTarget, GlobalVmstat};
use crate::zone::Zone;

pub use bulk_free::FREE_LOOKAHEAD_BLOCKS;
pub use contig::ContigRun;
pub use handles::{Background, Counters, Hotplug, Pagesets};
pub use metadata::MetadataParts;
pub use migrate::{Migrate, MigrateSource};
pub use periodic::DueWork;
pub use reclaim::{Reclaim, ReclaimReason, ReclaimRequest, ReclaimStats, DEF_PRIORITY, SWAP_CLUSTER_MAX};
pub use snapshot::{AllocatorStats, ZoneStats};
pub use split::SplitBlocks;

static NEXT_ALLOCATOR_ID: AtomicU32 = AtomicU32::new(1);

/// The zones a background pass may work on: up to the zone type of `index`, or every zone
/// when `index` names none (the "no limit" marks of the wake-up fields).
fn zone_limit(index: u8) -> ZoneType {
    ZoneType::from_index(usize::from(index)).unwrap_or(ZoneType::Device)
}

/// `kcompactd_highest_zone` when no wake-up limited the zones.
pub(crate) const ALL_ZONES: u8 = u8::MAX;

/// [`Node::background_cpu`]'s mark for a node whose own CPUs run its background work.
pub(crate) const OWN_CPUS: u32 = u32::MAX;

/// Per-node state: its CPUs, its zonelist and background-reclaim bookkeeping.
#[derive(Debug)]
pub struct Node {
    pub(crate) cpu_count: u32,
    /// The described node this one is: itself, or with per-CPU arenas the node the arena
    /// was cut from. Requests name described nodes.
    pub(crate) home: u16,
    /// For a node without an online CPU of its own, the CPU whose periodic work runs its
    /// kswapd and kcompactd; [`OWN_CPUS`] when the node's own CPUs run them. Set at build
    /// and whenever a CPU goes offline or online (cpu_hotplug.rs).
    pub(crate) background_cpu: AtomicU32,
    /// Zones to try, best first: this node's zones from the highest type down, then other
    /// nodes' by distance (node-ordered zonelist). Every zone of the description is listed,
    /// populated or not, so memory added to a zone empty at build is used without
    /// rebuilding the list (Linux rebuilds its zonelists then); walks skip empty zones.
    pub(crate) zonelist: crate::table::Table<u16, { crate::table::FIXED_ZONES }>,
    /// Per highest usable zone type: where in `zonelist` the first populated zone at or
    /// below it stands (`zonelist.len()` if none), so an allocation finds its preferred
    /// zone in O(1). Set at build and whenever memory goes online or offline.
    pub(crate) zonelist_start: [AtomicU16; MAX_NR_ZONES],
    /// kswapd: its wake-ups and its pass in progress.
    pub(crate) kswapd: daemons::Kswapd,
    /// kcompactd: its wake-ups and its proactive schedule.
    pub(crate) kcompactd: daemons::Kcompactd,
    /// Pages the reclaim client freed for kswapd and for direct reclaim; direct reclaims.
    pub(crate) reclaim: daemons::ReclaimCounters,
    /// Compaction counters (compact_*, pgmigrate_*).
    pub(crate) compact: crate::compaction::CompactCounters,
    /// Movable requests that waited for kswapd rather than fragment (`FragPolicy::stall_movable`).
    pub(crate) fragment_stalls: AtomicU64,
}

impl Node {
    /// The described node this one is: itself, or with per-CPU arenas the node the arena
    /// was cut from.
    pub fn home(&self) -> u16 {
        self.home
    }

    /// The zonelist from the preferred zone for `highest_zone` on (mirrors
    /// first_zones_zonelist()); empty if no zone qualifies.
    #[inline]
    pub(crate) fn zonelist_from(&self, highest_zone: ZoneType) -> &[u16] {
        // Relaxed: a walk that sees the start from before a zone was populated or emptied
        // only prefers another zone; every entry is a valid zone either way.
        // Never past the end: `set_zonelist_starts` stores at most the length.
        &self.zonelist[usize::from(self.zonelist_start[highest_zone.index()].load(Relaxed))..]
    }

    /// Points each highest zone type at the first populated zone at or below it.
    pub(crate) fn set_zonelist_starts<P: Platform>(&self, zones: &[Zone<P>]) {
        for (highest, start) in self.zonelist_start.iter().enumerate() {
            let first = self.zonelist.iter().position(|&index| {
                let zone = &zones[index as usize];
                zone.state().zone_type.index() <= highest && zone.state().is_populated()
            });
            start.store(first.unwrap_or(self.zonelist.len()) as u16, Relaxed);
        }
    }

    /// CPUs whose local memory this node is.
    pub fn cpu_count(&self) -> u32 {
        self.cpu_count
    }

    /// The CPU that runs this node's background reclaim and compaction when the node has
    /// no online CPU of its own (a memory-only node, or one whose CPUs all went offline):
    /// an online CPU of the same described node if there is one, else the nearest node's
    /// first online CPU; `None` when its own CPUs do.
    pub fn background_cpu(&self) -> Option<usize> {
        let cpu = self.background_cpu.load(Relaxed);
        (cpu != OWN_CPUS).then_some(cpu as usize)
    }
    pub fn kswapd_runs(&self) -> u64 {
        self.kswapd.runs()
    }
    /// Movable requests that waited for kswapd rather than fragment (`FragPolicy::stall_movable`).
    pub fn fragment_stalls(&self) -> u64 {
        self.fragment_stalls.load(Relaxed)
    }
}

pub struct PageAllocator<P: Platform> {
    id: u32,
    platform: P,
    zones: MetaSlice<Zone<P>>,
    nodes: MetaSlice<Node>,
    cpu_node: MetaSlice<u16>,
    /// What the build derived: min_free_kbytes and CPUs, and every zone type of every
    /// node, node-major (zones' live parameters follow memory online and offline).
    boot_sizing: BootSizing,
    boot_zone_sizings: MetaSlice<ZoneSizing>,
    tunables: Tunables,
    policy: Policy,
    /// Mobility grouping off (tiny machine): every request is treated as unmovable.
    grouping_disabled: bool,
    sink: crate::buddy::SinkSlot,
    /// The client that reclaim asks for pages ([`PageAllocator::set_reclaim`]).
    reclaim: Option<crate::client::Client<dyn Reclaim<P>>>,
    /// The client compaction asks to move blocks ([`PageAllocator::set_migrate`]).
    migrate: Option<crate::client::Client<dyn Migrate<P>>>,
    periodic: periodic::Schedule,
    /// The machine-wide vmstat counters.
    vmstat: GlobalVmstat,
    /// A range operation (offline, online, add_memory, alloc_contig) is running.
    range_op: AtomicBool,
    /// CPUs online and offline, and whether some node's work runs on a CPU not its own.
    cpus: cpu_hotplug::OnlineCpus,
}

impl<P: Platform> core::fmt::Debug for PageAllocator<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PageAllocator")
            .field("id", &self.id)
            .field("zones", &self.zones)
            .field("nodes", &self.nodes)
            .field("policy", &self.policy)
            .field("grouping_disabled", &self.grouping_disabled)
            .finish_non_exhaustive()
    }
}

impl<P: Platform> PageAllocator<P> {
    pub fn builder() -> AllocatorBuilder {
        AllocatorBuilder::new()
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn platform(&self) -> &P {
        &self.platform
    }

    pub fn zones(&self) -> &[Zone<P>] {
        &self.zones
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The machine's sizing as the build derived it (a copy: the allocator keeps the
    /// zones' in its metadata).
    pub fn sizing(&self) -> MachineSizing {
        let zones = crate::table::Table::from_slice(&self.boot_zone_sizings).expect("the build's zones fit again");
        MachineSizing {
            min_free_kbytes: self.boot_sizing.min_free_kbytes,
            online_cpus: self.boot_sizing.online_cpus,
            zones,
        }
    }

    pub fn tunables(&self) -> &Tunables {
        &self.tunables
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn grouping_disabled(&self) -> bool {
        self.grouping_disabled
    }

    /// Zone holding `pfn`.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// let zone = &allocator.zones()[0];
    /// assert_eq!(allocator.zone_of_pfn(zone.start_pfn()).map(|zone| zone.state().zone_type()), Some(ZoneType::Normal));
    /// assert!(allocator.zone_of_pfn(u64::MAX >> 12).is_none());
    /// ```
    pub fn zone_of_pfn(&self, pfn: Pfn) -> Option<&Zone<P>> {
        self.zones.iter().find(|zone| zone.mem().contains(pfn))
    }

    /// The node whose memory is local to `cpu` (0 for a CPU the allocator does not know).
    #[inline]
    pub fn node_of_cpu(&self, cpu: usize) -> u16 {
        self.cpu_node.get(cpu).copied().unwrap_or(0)
    }

    /// The node an allocation for described node `home` starts from: `cpu`'s own when it is
    /// on that node, else the node's first (with per-CPU arenas, its first arena);
    /// [`crate::AllocError::NoSuchNode`] when the description has no such node.
    #[cold]
    pub(crate) fn node_for_request(&self, home: u16, cpu: usize) -> Result<u16, crate::AllocError> {
        let own = self.node_of_cpu(cpu);
        if self.nodes.get(own as usize).is_some_and(|node| node.home == home) {
            return Ok(own);
        }
        let first = self.nodes.iter().position(|node| node.home == home);
        first.map(|node| node as u16).ok_or(crate::AllocError::NoSuchNode { node: home, nodes: self.described_nodes() })
    }

    /// The described node `node` is: itself, or with per-CPU arenas the node the arena was
    /// cut from. Rules that ask whether memory is local compare these.
    #[inline]
    pub(crate) fn home_of(&self, node: u16) -> u16 {
        self.nodes[usize::from(node)].home
    }

    /// Nodes of the description (per-CPU arenas count as the node they were cut from).
    pub fn described_nodes(&self) -> u16 {
        self.nodes.iter().map(|node| node.home + 1).max().unwrap_or(1)
    }

    /// Publishes a tracepoint's event if a subscriber is set.
    #[inline(always)]
    pub(crate) fn trace_page(&self, event: impl FnOnce() -> crate::events::PageEvent) {
        self.sink.page(event);
    }

    fn fallback_rules(&self) -> FallbackRules {
        FallbackRules {
            grouping_disabled: self.grouping_disabled,
            watermark_boost_factor: self.tunables.watermark_boost_factor,
            design: self.policy.frag.fallback,
            boost: self.policy.frag.boost,
        }
    }

    /// What a zone's own take needs from the allocator.
    #[inline(always)]
    fn zone_call(&self) -> crate::zone::ZoneCall<'_, P> {
        crate::zone::ZoneCall { platform: &self.platform, global: &self.vmstat }
    }

    /// Where a zone's vmstat diffs fold.
    #[inline]
    fn fold_target<'a>(&'a self, zone: &'a Zone<P>) -> FoldTarget<'a, P> {
        FoldTarget {
            zone: &zone.state().vmstat,
            zone_index: zone.state().index,
            global: &self.vmstat,
            platform: &self.platform,
        }
    }
}
