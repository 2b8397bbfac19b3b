//! GFP flags as ftrace prints them (`GFP_KERNEL_ACCOUNT|__GFP_ZERO`), the bits the page
//! allocator acts on, and our request for them. The bit values are ours; the composite
//! masks follow include/linux/gfp_types.h's definitions.

use pagealloc::types::{MigrateType, ZoneType};
use pagealloc::AllocRequest;

/// The GFP bits the allocator reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gfp(u32);

impl Gfp {
    pub const DMA: Gfp = Gfp(1 << 0);
    pub const HIGHMEM: Gfp = Gfp(1 << 1);
    pub const DMA32: Gfp = Gfp(1 << 2);
    pub const MOVABLE: Gfp = Gfp(1 << 3);
    pub const RECLAIMABLE: Gfp = Gfp(1 << 4);
    pub const HIGH: Gfp = Gfp(1 << 5);
    pub const IO: Gfp = Gfp(1 << 6);
    pub const FS: Gfp = Gfp(1 << 7);
    pub const DIRECT_RECLAIM: Gfp = Gfp(1 << 8);
    pub const KSWAPD_RECLAIM: Gfp = Gfp(1 << 9);
    pub const NORETRY: Gfp = Gfp(1 << 10);
    pub const COMP: Gfp = Gfp(1 << 11);
    pub const ZERO: Gfp = Gfp(1 << 12);
    pub const NOWARN: Gfp = Gfp(1 << 13);
    pub const NOMEMALLOC: Gfp = Gfp(1 << 14);
    pub const HARDWALL: Gfp = Gfp(1 << 15);
    pub const ACCOUNT: Gfp = Gfp(1 << 16);
    pub const RECLAIM: Gfp = Gfp(Self::DIRECT_RECLAIM.0 | Self::KSWAPD_RECLAIM.0);

    pub const fn union(self, other: Gfp) -> Gfp {
        Gfp(self.0 | other.0)
    }

    pub const fn contains(self, other: Gfp) -> bool {
        self.0 & other.0 == other.0
    }

    const fn without(self, other: Gfp) -> Gfp {
        Gfp(self.0 & !other.0)
    }

    /// The composite masks as ftrace names them; longest first where one extends another.
    const COMPOSITES: [(&'static str, Gfp); 12] = [
        ("GFP_TRANSHUGE_LIGHT", TRANSHUGE_LIGHT),
        ("GFP_TRANSHUGE", TRANSHUGE_LIGHT.union(Gfp::DIRECT_RECLAIM)),
        ("GFP_HIGHUSER_MOVABLE", HIGHUSER.union(Gfp::MOVABLE)),
        ("GFP_HIGHUSER", HIGHUSER),
        ("GFP_USER", USER),
        ("GFP_KERNEL_ACCOUNT", KERNEL.union(Gfp::ACCOUNT)),
        ("GFP_KERNEL", KERNEL),
        ("GFP_NOFS", Gfp::RECLAIM.union(Gfp::IO)),
        ("GFP_NOIO", Gfp::RECLAIM),
        ("GFP_ATOMIC", Gfp::HIGH.union(Gfp::KSWAPD_RECLAIM)),
        ("GFP_NOWAIT", Gfp::KSWAPD_RECLAIM.union(Gfp::NOWARN)),
        ("GFP_DMA32", Gfp::DMA32),
    ];

    const SINGLE: [(&'static str, Gfp); 17] = [
        ("GFP_DMA", Gfp::DMA),
        ("__GFP_DMA", Gfp::DMA),
        ("__GFP_HIGHMEM", Gfp::HIGHMEM),
        ("__GFP_DMA32", Gfp::DMA32),
        ("__GFP_MOVABLE", Gfp::MOVABLE),
        ("__GFP_RECLAIMABLE", Gfp::RECLAIMABLE),
        ("__GFP_HIGH", Gfp::HIGH),
        ("__GFP_IO", Gfp::IO),
        ("__GFP_FS", Gfp::FS),
        ("__GFP_DIRECT_RECLAIM", Gfp::DIRECT_RECLAIM),
        ("__GFP_KSWAPD_RECLAIM", Gfp::KSWAPD_RECLAIM),
        ("__GFP_RECLAIM", Gfp::RECLAIM),
        ("__GFP_NORETRY", Gfp::NORETRY),
        ("__GFP_COMP", Gfp::COMP),
        ("__GFP_ZERO", Gfp::ZERO),
        ("__GFP_NOWARN", Gfp::NOWARN),
        ("__GFP_NOMEMALLOC", Gfp::NOMEMALLOC),
    ];

    /// Parses `A|B|C`; names without a bit the allocator reads (`__GFP_ACCOUNT`,
    /// `__GFP_HARDWALL`, `__GFP_THISNODE`, ...) and "none" add nothing.
    pub fn parse(text: &str) -> Gfp {
        text.split('|').fold(Gfp::default(), |gfp, name| {
            let bits = Self::COMPOSITES.iter().chain(Self::SINGLE.iter()).find(|(known, _)| *known == name);
            bits.map_or(gfp, |(_, bits)| gfp.union(*bits))
        })
    }

    /// Our request for these flags and the event's migratetype (mirrors gfp_zone() and the
    /// GFP bits gfp_to_alloc_flags() reads).
    pub fn request(self, migratetype: MigrateType) -> AllocRequest {
        let movable_zone = self.contains(Gfp::HIGHMEM) && self.contains(Gfp::MOVABLE);
        let highest_zone = if self.contains(Gfp::DMA) {
            ZoneType::Dma
        } else if self.contains(Gfp::DMA32) {
            ZoneType::Dma32
        } else if movable_zone && migratetype == MigrateType::Movable {
            ZoneType::Movable
        } else {
            ZoneType::Normal
        };
        AllocRequest {
            highest_zone,
            migratetype,
            high_priority: self.contains(Gfp::HIGH),
            may_reclaim: self.contains(Gfp::DIRECT_RECLAIM),
            wake_kswapd: self.contains(Gfp::KSWAPD_RECLAIM),
            no_retry: self.contains(Gfp::NORETRY),
            ..AllocRequest::KERNEL
        }
    }

    /// The flags of our request, for a trace line: its zone, type and priority bits.
    pub fn of_request(request: &AllocRequest) -> Gfp {
        let mut gfp = match request.highest_zone {
            ZoneType::Dma => Gfp::DMA,
            ZoneType::Dma32 => Gfp::DMA32,
            ZoneType::Movable => Gfp::HIGHMEM,
            _ => Gfp::default(),
        };
        let mut add = |set: bool, bits: Gfp| {
            if set {
                gfp = gfp.union(bits)
            }
        };
        add(request.migratetype == MigrateType::Movable, Gfp::MOVABLE);
        add(request.migratetype == MigrateType::Reclaimable, Gfp::RECLAIMABLE);
        add(request.high_priority, Gfp::HIGH);
        add(request.may_reclaim, Gfp::DIRECT_RECLAIM);
        add(request.wake_kswapd, Gfp::KSWAPD_RECLAIM);
        add(request.no_retry, Gfp::NORETRY);
        gfp
    }

    /// `__GFP_A|__GFP_B`, or "none".
    pub fn render(self) -> String {
        let names: Vec<&str> = Self::SINGLE
            .iter()
            .filter(|(name, bits)| name.starts_with("__") && *name != "__GFP_RECLAIM" && self.contains(*bits))
            .map(|(name, _)| *name)
            .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join("|")
        }
    }
}

const KERNEL: Gfp = Gfp::RECLAIM.union(Gfp::IO).union(Gfp::FS);
const USER: Gfp = KERNEL.union(Gfp::HARDWALL);
const HIGHUSER: Gfp = USER.union(Gfp::HIGHMEM);
const TRANSHUGE_LIGHT: Gfp =
    HIGHUSER.union(Gfp::MOVABLE).union(Gfp::COMP).union(Gfp::NOMEMALLOC).union(Gfp::NOWARN).without(Gfp::RECLAIM);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_masks_map_to_the_requests_they_mean() {
        let user = Gfp::parse("GFP_HIGHUSER_MOVABLE|__GFP_COMP").request(MigrateType::Movable);
        assert_eq!((user.highest_zone, user.may_reclaim, user.wake_kswapd), (ZoneType::Movable, true, true));
        let atomic = Gfp::parse("GFP_ATOMIC|__GFP_NOWARN").request(MigrateType::Unmovable);
        assert_eq!((atomic.high_priority, atomic.may_reclaim, atomic.wake_kswapd), (true, false, true));
        let light = Gfp::parse("GFP_TRANSHUGE_LIGHT").request(MigrateType::Movable);
        assert_eq!((light.may_reclaim, light.wake_kswapd), (false, false));
        let thp = Gfp::parse("GFP_TRANSHUGE|__GFP_NORETRY").request(MigrateType::Movable);
        assert_eq!((thp.may_reclaim, thp.no_retry), (true, true));
        assert_eq!(Gfp::parse("GFP_KERNEL|__GFP_DMA32").request(MigrateType::Unmovable).highest_zone, ZoneType::Dma32);
        assert_eq!(Gfp::parse("GFP_DMA").request(MigrateType::Unmovable).highest_zone, ZoneType::Dma);
        // __GFP_MOVABLE alone does not reach ZONE_MOVABLE; unknown names add nothing.
        assert_eq!(
            Gfp::parse("__GFP_MOVABLE|__GFP_THISNODE").request(MigrateType::Movable).highest_zone,
            ZoneType::Normal
        );
        assert_eq!(Gfp::parse("none"), Gfp::default());
    }

    #[test]
    fn our_requests_round_trip_through_the_rendered_flags() {
        for request in [
            AllocRequest::KERNEL,
            AllocRequest::USER_MOVABLE,
            AllocRequest::ATOMIC,
            AllocRequest::DMA32,
            AllocRequest::TRANSHUGE,
        ] {
            let rendered = Gfp::of_request(&request).render();
            let back = Gfp::parse(&rendered).request(request.migratetype);
            assert_eq!(
                (back.highest_zone, back.high_priority, back.may_reclaim, back.wake_kswapd, back.no_retry),
                (
                    request.highest_zone,
                    request.high_priority,
                    request.may_reclaim,
                    request.wake_kswapd,
                    request.no_retry
                ),
                "{rendered}"
            );
        }
    }
}
