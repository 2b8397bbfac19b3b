//! A zone: its state (identity, parameters, flags), its memory (frame records, pageblock
//! types), the zone lock over its free area, and one pageset per CPU. This file composes
//! them; `take` is the zone's own take and give-back (rmqueue(), rmqueue_buddy()), over
//! the pageset and buddy layers below; `park` is the free that parks a block in its
//! pageblock.

mod park;
mod take;

pub(crate) use take::ZoneCall;

use crate::buddy::{BuddyCore, BuddyZone};
use crate::free_area::FreeArea;
use crate::meta::MetaSlice;
use crate::pcp::PcpSlot;
use crate::platform::Platform;
use crate::types::Pfn;
use crate::watermark::WatermarkView;
use crate::zone_mem::ZoneMem;

pub use crate::zone_state::{zone_flags, ZoneParams, ZoneState};

pub struct Zone<P: Platform> {
    /// State, memory and the zone lock.
    pub(crate) core: BuddyCore<P>,
    /// One pageset per CPU (empty when pagesets are off).
    pub(crate) pcp: MetaSlice<PcpSlot<P>>,
}

impl<P: Platform> core::fmt::Debug for Zone<P> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Zone")
            .field("state", &self.core.state)
            .field("start_pfn", &self.mem().start_pfn)
            .field("end_pfn", &self.mem().end_pfn())
            .field("free_pages", &self.free_pages())
            .field("pagesets", &self.pcp.len())
            .finish()
    }
}

impl<P: Platform> Zone<P> {
    pub(crate) fn new(core: BuddyCore<P>) -> Zone<P> {
        Zone { core, pcp: MetaSlice::empty() }
    }

    /// The zone's identity, parameters and flags (mirrors the fields of struct zone that
    /// are not its free area or pagesets).
    #[inline(always)]
    pub fn state(&self) -> &ZoneState {
        &self.core.state
    }

    /// The zone's frame records and pageblock types.
    #[inline(always)]
    pub(crate) fn mem(&self) -> &ZoneMem {
        &self.core.mem
    }

    pub fn start_pfn(&self) -> Pfn {
        self.mem().start_pfn
    }

    /// The migratetype of the pageblock holding `pfn`; `None` outside the zone (mirrors
    /// get_pageblock_migratetype()).
    pub fn pageblock_type(&self, pfn: Pfn) -> Option<crate::types::MigrateType> {
        self.mem().contains(pfn).then(|| self.mem().pageblock_type(pfn))
    }

    pub fn spanned_pages(&self) -> u64 {
        self.mem().end_pfn() - self.mem().start_pfn
    }

    /// Free pages in the buddy (racy read, clamped at 0 like zone_page_state(NR_FREE_PAGES)).
    #[inline]
    pub fn free_pages(&self) -> u64 {
        self.mem().free_pages()
    }

    /// The published free count as stored, which per-CPU diffs not yet folded can put
    /// below 0 for a while (the raw `vm_stat[NR_FREE_PAGES]`).
    #[inline]
    pub fn free_pages_signed(&self) -> i64 {
        self.mem().free_pages_signed()
    }

    /// Free pages in high-order atomic reserve pageblocks (racy read).
    #[inline]
    pub fn free_highatomic_pages(&self) -> u64 {
        self.mem().free_highatomic_pages()
    }

    /// Pageblocks per migratetype (the pagetypeinfo block counts).
    pub fn pageblock_counts(&self) -> [u64; crate::types::NR_MIGRATETYPES] {
        let mut counts = [0u64; crate::types::NR_MIGRATETYPES];
        for slot in 0..self.mem().pageblock_count() {
            let start = self.mem().pageblock_start(slot).max(self.mem().start_pfn);
            counts[self.mem().pageblock_type(start).index()] += 1;
        }
        counts
    }

    /// The per-CPU pagesets, indexed by CPU.
    pub fn pagesets(&self) -> &[PcpSlot<P>] {
        &self.pcp
    }

    /// Pages other arenas' CPUs handed to this zone that no lock holder has released yet
    /// (`DrainBeyondLinux::hand_remote_frees`; racy read).
    pub fn handed_over_pages(&self) -> u32 {
        self.core.remote_frees.pending_pages()
    }

    /// Zone lock statistics.
    pub fn lock_stats(&self) -> crate::sync::LockStats {
        self.core.lock.stats()
    }

    /// The zone's buddy half, as pagesets and the free path use it.
    #[inline(always)]
    pub(crate) fn buddy<'a>(&'a self, platform: &'a P) -> BuddyZone<'a, P> {
        BuddyZone { core: &self.core, platform }
    }

    /// What the watermark check reads.
    #[inline(always)]
    pub(crate) fn watermark_view(&self) -> WatermarkView<'_> {
        WatermarkView { state: &self.core.state, mem: &self.core.mem }
    }

    /// Runs `f` with the zone lock held and the free area exposed (for views and tests).
    pub fn with_free_area<R>(&self, platform: &P, f: impl FnOnce(&FreeArea) -> R) -> R {
        let locked = self.buddy(platform).lock();
        f(&locked.area)
    }
}
