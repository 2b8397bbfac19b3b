//! The `build_description` target's input as libFuzzer's bytes decode into it, and back: the
//! types `arbitrary` derives (the comments say how `machine` reads each raw field), the small
//! conversions of their variants, and the encoders the seed generator writes them with. The
//! decoding is the corpus's format: the derive order and the field order must not change, or
//! the committed seeds mean other inputs.

use arbitrary::Arbitrary;

use crate::encode::{encode_struct, variant, Encode};

pub const MAX_ZONES: usize = 4;
pub const MAX_RANGES: usize = 4;

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Description {
    /// Platform CPUs: 1 + cpus % 8.
    pub cpus: u8,
    pub layout: Layout,
    pub holes: [Option<RangeDesc>; MAX_RANGES],
    pub reserves: [Option<RangeDesc>; MAX_RANGES],
    pub nodes: Nodes,
    pub policy: PolicyDesc,
    pub tunables: Option<TunablesDesc>,
    pub llc: Option<LlcDesc>,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `AllocatorBuilder::zone` calls.
    Zones([Option<ZoneDesc>; MAX_ZONES]),
    /// `AllocatorBuilder::single_zone(ZoneType::ALL[zone_type % 5], pages)`.
    SingleZone { zone_type: u8, pages: Pages },
    /// `AllocatorBuilder::pc_layout(mib)`.
    PcLayout { mib: Mib },
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct ZoneDesc {
    /// node % 5: at most 4 nodes are declared, so 4 is always unknown.
    pub node: u8,
    /// `ZoneType::ALL[zone_type % 5]`, Device included.
    pub zone_type: u8,
    /// Start: `BASES[base % 8] + offset`.
    pub base: u8,
    pub offset: u16,
    pub pages: Pages,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// 0..=65535 frames.
    Small(u16),
    /// At least 2^32 - 1 frames: rejected, never built.
    Absurd(u64),
}

impl Pages {
    pub fn frames(self) -> u64 {
        match self {
            Pages::Small(pages) => u64::from(pages),
            Pages::Absurd(extra) => u64::from(u32::MAX).saturating_add(extra),
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mib {
    /// small % 257: up to 256 MiB, 2^16 frames.
    Small(u16),
    /// At least 2^25 MiB: a Normal zone of more than 2^32 frames, rejected.
    Absurd(u64),
}

impl Mib {
    pub fn mib(self) -> u64 {
        match self {
            Mib::Small(mib) => u64::from(mib) % 257,
            Mib::Absurd(extra) => (1u64 << 25).saturating_add(extra),
        }
    }
}

/// A hole or reservation: `anchor + start .. anchor + start + len`, clamped to `0..=u64::MAX`;
/// a negative `len` makes an inverted range.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeDesc {
    /// anchor % 12 < 4: the start of zone `anchor % 4` (0 if absent); else `BASES[anchor % 8]`.
    pub anchor: u8,
    pub start: u16,
    pub len: i32,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Nodes {
    /// No declaration: node 0 gets every CPU.
    Implicit,
    /// 1 + nodes % 4 nodes, the CPUs dealt out between them (some may get none).
    Split { nodes: u8 },
    /// `node(cpus % 9)` per entry: the sum need not match the platform.
    Declared([Option<u8>; 4]),
    /// `cpu_node_map(map[..len % 9] % 4)`: the length need not match the platform.
    CpuMap { len: u8, map: [u8; 8] },
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct PolicyDesc {
    /// `presets::PRESETS[preset % len]`.
    pub preset: u8,
    pub enabled: Option<bool>,
    /// % 6: 4 and 5 are invalid.
    pub max_cached_order: Option<u8>,
    /// % 4: 3 is invalid.
    pub thp_lists: Option<u8>,
    /// Some(None) unbounds the scale; Some(Some(v)): v % 8, 7 is invalid.
    pub batch_scale_max: Option<Option<u8>>,
    pub batch_override: Option<Override>,
    pub high_override: Option<Override>,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Override {
    Small(u16),
    Raw(u32),
}

impl Override {
    pub fn pages(self) -> u32 {
        match self {
            Override::Small(pages) => u32::from(pages),
            Override::Raw(pages) => pages,
        }
    }
}

/// Tunables inside the sysctls' accepted ranges (ints are at most i32::MAX;
/// watermark_scale_factor is 1..=3000).
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct TunablesDesc {
    pub min_free_kbytes: Option<u32>,
    pub thp: bool,
    pub watermark_scale_factor: u16,
    pub watermark_boost_factor: u32,
    pub high_fraction: HighFraction,
    pub lowmem_reserve_ratio: [u32; 5],
    /// 1 + value.
    pub stat_interval_ms: u16,
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HighFraction {
    Zero,
    /// % 16: 1..=7 are rejected.
    Small(u8),
    Raw(u32),
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlcDesc {
    pub size_kib: u32,
    pub shared_by_cpus: u8,
}

// Encoders: field by field, in declaration order, as `arbitrary`'s derive decodes.

encode_struct!(Description { cpus, layout, holes, reserves, nodes, policy, tunables, llc });

impl Encode for Layout {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Layout::Zones(zones) => variant(out, 0, 3, &[zones]),
            Layout::SingleZone { zone_type, pages } => variant(out, 1, 3, &[zone_type, pages]),
            Layout::PcLayout { mib } => variant(out, 2, 3, &[mib]),
        }
    }
}

encode_struct!(ZoneDesc { node, zone_type, base, offset, pages });

/// `Encode` for an enum of two one-field variants, `$first` declared before `$second`: the
/// sizes and overrides that are either small or raw.
macro_rules! encode_either {
    ($ty:ident, $first:ident, $second:ident) => {
        impl Encode for $ty {
            fn encode(&self, out: &mut Vec<u8>) {
                match self {
                    $ty::$first(value) => variant(out, 0, 2, &[value]),
                    $ty::$second(value) => variant(out, 1, 2, &[value]),
                }
            }
        }
    };
}

encode_either!(Pages, Small, Absurd);
encode_either!(Mib, Small, Absurd);
encode_either!(Override, Small, Raw);

encode_struct!(RangeDesc { anchor, start, len });

impl Encode for Nodes {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Nodes::Implicit => variant(out, 0, 4, &[]),
            Nodes::Split { nodes } => variant(out, 1, 4, &[nodes]),
            Nodes::Declared(declared) => variant(out, 2, 4, &[declared]),
            Nodes::CpuMap { len, map } => variant(out, 3, 4, &[len, map]),
        }
    }
}

encode_struct!(PolicyDesc {
    preset,
    enabled,
    max_cached_order,
    thp_lists,
    batch_scale_max,
    batch_override,
    high_override
});

encode_struct!(TunablesDesc {
    min_free_kbytes,
    thp,
    watermark_scale_factor,
    watermark_boost_factor,
    high_fraction,
    lowmem_reserve_ratio,
    stat_interval_ms
});

impl Encode for HighFraction {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            HighFraction::Zero => variant(out, 0, 3, &[]),
            HighFraction::Small(fraction) => variant(out, 1, 3, &[fraction]),
            HighFraction::Raw(fraction) => variant(out, 2, 3, &[fraction]),
        }
    }
}

encode_struct!(LlcDesc { size_kib, shared_by_cpus });
