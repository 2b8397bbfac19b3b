//! Reclaim through a client callback. The allocator owns no page contents, so whatever can
//! be reclaimed (clean page cache, shrinkable caches) belongs to its clients: both
//! background reclaim (the kswapd pass of the periodic work, mirrors balance_pgdat() and
//! kswapd_shrink_node()) and direct reclaim (a caller that may reclaim, once the slow path
//! failed, mirrors try_to_free_pages() and do_try_to_free_pages()) ask the client through
//! [`Reclaim`], which frees pages back through the allocator and says how many it freed.

use super::PageAllocator;
use crate::platform::Platform;
use crate::request::WatermarkLevel;
use crate::types::ZoneType;
use crate::zone::Zone;

/// Pages one reclaim request asks for at least (SWAP_CLUSTER_MAX).
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// The first scan priority; each round that falls short lowers it by one, down to 1
/// (DEF_PRIORITY).
pub const DEF_PRIORITY: u8 = 12;

/// Who asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimReason {
    /// Background reclaim, from the allocator's periodic work (kswapd).
    Background,
    /// An allocating caller that may reclaim, after its slow path failed.
    Direct,
}

/// One request to the client (mirrors the parts of `struct scan_control` a client needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReclaimRequest {
    /// The node whose memory is short: free pages of this node's zones.
    pub node: u16,
    /// Pages wanted (nr_to_reclaim), at least [`SWAP_CLUSTER_MAX`].
    pub pages: u64,
    pub reason: ReclaimReason,
    /// Background reclaim of a watermark boost on a node that is otherwise balanced: only
    /// cheap pages, no writeback and no swap (may_writepage and may_swap off).
    pub boost_only: bool,
    /// The client may shrink its slab-like caches, not only drop clean page cache
    /// (sc.may_shrinkslab): false only for boost reclaim under the 2018 series' rule.
    pub shrink_slab: bool,
    /// [`DEF_PRIORITY`] down to 1: a client scanning lists may scan 1/2^priority of them.
    pub priority: u8,
}

/// A client that can give pages back under memory pressure. It frees them through the
/// allocator it is handed (`free_pages`, `free_bulk`), outside every allocator lock, and
/// returns how many it freed; 0 says it has nothing more at this priority.
pub trait Reclaim<P: Platform>: Send + Sync {
    fn reclaim(&self, allocator: &PageAllocator<P>, request: ReclaimRequest) -> u64;
}

/// Reclaim counters of a node (/proc/vmstat's pgsteal_kswapd, pgsteal_direct, allocstall).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimStats {
    pub pgsteal_kswapd: u64,
    pub pgsteal_direct: u64,
    /// Direct reclaim entries.
    pub allocstall: u64,
}

impl<P: Platform> PageAllocator<P> {
    /// Registers the client that reclaim asks; without one, reclaim frees nothing.
    ///
    /// ```
    /// use pagealloc::{AllocRequest, AllocatorBuilder, PageAllocator, ZoneType};
    /// use pagealloc::platform::TestPlatform;
    /// let mut allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// use std::sync::Arc;
    /// use pagealloc::allocator::{Reclaim, ReclaimRequest};
    /// /// A client with nothing to drop (a page cache would free its oldest pages).
    /// struct Empty;
    /// impl Reclaim<TestPlatform> for Empty {
    ///     fn reclaim(&self, _: &PageAllocator<TestPlatform>, _: ReclaimRequest) -> u64 {
    ///         0
    ///     }
    /// }
    /// allocator.set_reclaim(Arc::new(Empty));
    /// assert_eq!(allocator.counters().reclaim_stats(0).allocstall, 0);
    /// ```
    #[cfg(feature = "alloc")]
    pub fn set_reclaim(&mut self, client: alloc::sync::Arc<dyn Reclaim<P>>) {
        self.reclaim = Some(crate::client::Client::Shared(client));
    }

    /// [`Self::set_reclaim`] for a client that lives as long as the allocator, as a kernel
    /// without a heap gives it (no `alloc` feature needed).
    ///
    /// ```
    /// use pagealloc::allocator::{Reclaim, ReclaimRequest};
    /// use pagealloc::platform::TestPlatform;
    /// use pagealloc::{AllocatorBuilder, PageAllocator, ZoneType};
    /// struct Empty;
    /// impl Reclaim<TestPlatform> for Empty {
    ///     fn reclaim(&self, _: &PageAllocator<TestPlatform>, _: ReclaimRequest) -> u64 {
    ///         0
    ///     }
    /// }
    /// static CACHE: Empty = Empty;
    /// let mut allocator = PageAllocator::build(AllocatorBuilder::single_zone(ZoneType::Normal, 4096), TestPlatform::new(2)).unwrap();
    /// allocator.set_reclaim_static(&CACHE);
    /// assert_eq!(allocator.counters().reclaim_stats(0).pgsteal_direct, 0);
    /// ```
    pub fn set_reclaim_static(&mut self, client: &'static dyn Reclaim<P>) {
        self.reclaim = Some(crate::client::Client::Static(client));
    }

    /// The zones of `node` that have pages.
    pub(super) fn populated_zones(&self, node: u16) -> impl Iterator<Item = &Zone<P>> {
        self.zones.iter().filter(move |zone| zone.state().node == node && zone.state().managed_pages() > 0)
    }

    /// The highest zone type with pages on `node`: the classzone kswapd balances for.
    pub(super) fn highest_zone_of(&self, node: u16) -> Option<ZoneType> {
        self.populated_zones(node).map(|zone| zone.state().zone_type).max()
    }

    /// Is some zone of `node` at or above its high watermark (with its boost and the lowmem
    /// reserve against the node's highest zone)? Mirrors pgdat_balanced(), order 0. Under
    /// defrag_mode only free memory in whole free pageblocks counts (NR_FREE_PAGES_BLOCKS).
    pub(super) fn node_balanced(&self, node: u16) -> bool {
        let Some(highest_zone) = self.highest_zone_of(node) else { return true };
        if self.policy.frag.defrag_mode {
            return self
                .populated_zones(node)
                .any(|zone| self.free_pageblock_pages(zone) > zone.state().watermarks_with_boost().high_pages);
        }
        self.populated_zones(node)
            .any(|zone| self.zone_watermark_ok_safe(zone.state().index, 0, WatermarkLevel::High, highest_zone))
    }

    /// Pages the node's highest zone lacks to its boosted high watermark, at least
    /// SWAP_CLUSTER_MAX (kswapd's nr_to_reclaim).
    pub(super) fn node_shortfall(&self, node: u16) -> u64 {
        let shortfall = self.populated_zones(node).max_by_key(|zone| zone.state().zone_type).map_or(0, |zone| {
            let high = zone.state().watermarks_with_boost().high_pages;
            let free_pages = if self.policy.frag.defrag_mode {
                self.free_pageblock_pages(zone)
            } else {
                self.zone_free_pages_snapshot(zone.state().index)
            };
            high.saturating_sub(free_pages)
        });
        shortfall.max(SWAP_CLUSTER_MAX)
    }

    /// Could some zone of `node` serve `order` at its min watermark, or compaction run there
    /// (the stop test of should_continue_reclaim())?
    fn ready_for_compaction(&self, node: u16, order: u8, highest_zone: ZoneType) -> bool {
        self.populated_zones(node).filter(|zone| zone.state().zone_type <= highest_zone).any(|zone| {
            self.zone_watermark_ok(zone.state().index, order, WatermarkLevel::Min, highest_zone)
                || self.compaction_suitable(zone, order, highest_zone)
        })
    }

    /// Free pages in free blocks of pageblock order or larger.
    fn free_pageblock_pages(&self, zone: &Zone<P>) -> u64 {
        let blocks = self.free_blocks_per_order(zone);
        (crate::types::PAGEBLOCK_ORDER as usize..blocks.len()).map(|order| blocks[order] << order).sum()
    }

    /// Direct reclaim for an order-`order` request on `node`: asks the client for
    /// SWAP_CLUSTER_MAX pages (or the request's size if larger) at falling priority until
    /// it freed that many (mirrors do_try_to_free_pages()). A costly order reclaims for
    /// compaction: it goes on, a request's worth per priority, until some zone could serve
    /// it at the min watermark or compaction could run there, or a round frees nothing
    /// (mirrors should_continue_reclaim()). Returns pages freed.
    pub(super) fn direct_reclaim(&self, node: u16, order: u8, highest_zone: ZoneType) -> u64 {
        let Some(client) = self.reclaim.as_ref() else { return 0 };
        let state = &self.nodes[node as usize];
        state.reclaim.count_stall();
        let request_pages = SWAP_CLUSTER_MAX.max(1 << order);
        let mut wanted_pages = request_pages;
        let mut freed_pages = 0;
        for priority in (1..=DEF_PRIORITY).rev() {
            let pages = wanted_pages - freed_pages;
            let request = ReclaimRequest {
                node,
                pages,
                reason: ReclaimReason::Direct,
                boost_only: false,
                shrink_slab: true,
                priority,
            };
            let freed = client.reclaim(self, request);
            freed_pages += freed;
            if freed_pages >= wanted_pages {
                if order <= crate::types::COSTLY_ORDER
                    || freed == 0
                    || self.ready_for_compaction(node, order, highest_zone)
                {
                    break;
                }
                wanted_pages = freed_pages + request_pages;
            }
        }
        state.reclaim.count_direct(freed_pages);
        freed_pages
    }
}
