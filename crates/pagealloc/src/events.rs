//! The allocator's tracepoints as events for a subscriber (the kmem events `mm_page_alloc`,
//! `mm_page_free`, `mm_page_free_batched`, `mm_page_alloc_zone_locked`, `mm_page_pcpu_drain`
//! and `mm_page_alloc_extfrag`), and the fragmentation counters.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::request::AllocRequest;
use crate::types::{MigrateType, Pfn, PAGEBLOCK_ORDER};

/// How a fallback allocation took memory of another type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallbackKind {
    /// The whole pageblock was re-typed to the requested type.
    Claim,
    /// A block was taken, its pageblock keeps the other type (mixes the pageblock).
    Steal,
}

/// One allocation served from another migratetype's free list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtfragEvent {
    pub zone_index: u16,
    /// Head of the fallback block taken.
    pub pfn: Pfn,
    /// Order requested.
    pub order: u8,
    /// Order of the free block taken.
    pub fallback_order: u8,
    pub start_migratetype: MigrateType,
    pub fallback_migratetype: MigrateType,
    pub kind: FallbackKind,
}

impl ExtfragEvent {
    /// The seed's fragmentation metric counts fallbacks that split a pageblock.
    pub fn splits_pageblock(&self) -> bool {
        self.fallback_order < PAGEBLOCK_ORDER
    }
}

/// One page-allocator tracepoint firing, one per block, where the kernel's fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageEvent {
    /// `mm_page_alloc`: a block handed to a caller.
    Alloc { pfn: Pfn, order: u8, migratetype: MigrateType, request: AllocRequest },
    /// `mm_page_free`: a block given back, batched or not.
    Free { pfn: Pfn, order: u8 },
    /// `mm_page_free_batched`: a block of a batched free, after its `Free`.
    FreeBatched { pfn: Pfn, order: u8 },
    /// `mm_page_alloc_zone_locked`: a block taken from the buddy under the zone lock.
    /// `percpu_refill` is what the kernel prints: the order is one the pagesets cache and
    /// the type a pageset type, whether or not this take refills a pageset.
    ZoneLocked { pfn: Pfn, order: u8, migratetype: MigrateType, percpu_refill: bool },
    /// `mm_page_pcpu_drain`: a block a pageset returns to the buddy; the type is its
    /// pageblock's.
    PcpuDrain { pfn: Pfn, order: u8, migratetype: MigrateType },
}

/// Subscriber to allocator events, called like a tracepoint (some under the zone or pageset
/// lock): keep it cheap and never call back into the allocator. The calling CPU is the
/// platform's current one.
pub trait EventSink: Send + Sync {
    fn extfrag(&self, event: &ExtfragEvent);
    /// Every other tracepoint; ignored unless overridden.
    fn page(&self, _event: &PageEvent) {}
}

/// Counters of fallback behaviour per zone.
#[derive(Debug, Default)]
pub struct ExtfragCounters {
    claims: AtomicU64,
    steals: AtomicU64,
    pageblock_splits: AtomicU64,
    boosts: AtomicU64,
    /// Pageblock splits by the requested type (unmovable, movable, reclaimable).
    splits_by_start: [AtomicU64; crate::types::NR_PCP_TYPES],
    polluting: AtomicU64,
}

/// A snapshot of [`ExtfragCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtfragStats {
    pub claims: u64,
    pub steals: u64,
    /// Events with fallback_order < pageblock_order.
    pub pageblock_splits: u64,
    pub watermark_boosts: u64,
    /// `pageblock_splits` by the requested type: unmovable, movable, reclaimable (the
    /// seed's breakdown).
    pub splits_by_start: [u64; crate::types::NR_PCP_TYPES],
    /// Steals that put a movable allocation in an unmovable or reclaimable pageblock, or
    /// the reverse: the pageblock keeps its type and now mixes mobility.
    pub polluting: u64,
}

impl core::ops::AddAssign for ExtfragStats {
    fn add_assign(&mut self, other: ExtfragStats) {
        self.claims += other.claims;
        self.steals += other.steals;
        self.pageblock_splits += other.pageblock_splits;
        self.watermark_boosts += other.watermark_boosts;
        for (total, more) in self.splits_by_start.iter_mut().zip(other.splits_by_start) {
            *total += more;
        }
        self.polluting += other.polluting;
    }
}

impl ExtfragStats {
    pub fn events(&self) -> u64 {
        self.claims + self.steals
    }
}

impl ExtfragCounters {
    pub(crate) fn record(&self, event: &ExtfragEvent) {
        match event.kind {
            FallbackKind::Claim => self.claims.fetch_add(1, Relaxed),
            FallbackKind::Steal => self.steals.fetch_add(1, Relaxed),
        };
        if event.splits_pageblock() {
            self.pageblock_splits.fetch_add(1, Relaxed);
            if let Some(counter) = self.splits_by_start.get(event.start_migratetype.index()) {
                counter.fetch_add(1, Relaxed);
            }
        }
        let movable = |migratetype: crate::types::MigrateType| migratetype == crate::types::MigrateType::Movable;
        if event.kind == FallbackKind::Steal && movable(event.start_migratetype) != movable(event.fallback_migratetype)
        {
            self.polluting.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn record_boost(&self) {
        self.boosts.fetch_add(1, Relaxed);
    }

    pub fn snapshot(&self) -> ExtfragStats {
        ExtfragStats {
            claims: self.claims.load(Relaxed),
            steals: self.steals.load(Relaxed),
            pageblock_splits: self.pageblock_splits.load(Relaxed),
            watermark_boosts: self.boosts.load(Relaxed),
            splits_by_start: core::array::from_fn(|index| self.splits_by_start[index].load(Relaxed)),
            polluting: self.polluting.load(Relaxed),
        }
    }
}

/// Share one sink between the allocator and the code that reads it.
#[cfg(feature = "alloc")]
impl<T: EventSink + ?Sized> EventSink for alloc::sync::Arc<T> {
    fn extfrag(&self, event: &ExtfragEvent) {
        (**self).extfrag(event)
    }
    fn page(&self, event: &PageEvent) {
        (**self).page(event)
    }
}
