//! The `operations` target's input as libFuzzer's bytes decode into it, and back: the types
//! `arbitrary` derives, what their raw fields mean (`order_of`, `Req::request`), and the
//! encoders the seed generator writes them with. The decoding is the corpus's format: the
//! derive order and the field order must not change, or the committed seeds mean other inputs.

use arbitrary::{Arbitrary, Unstructured};
use pagealloc::types::MAX_ORDER;
use pagealloc::{AllocRequest, MigrateType, ZoneType};

use crate::encode::{encode_struct, variant, Encode};

/// Longest sequence decoded (the near-exhaustion property test runs up to 2500).
pub const MAX_OPS: usize = 2500;

/// The whole input: a machine and the operations run on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub header: Header,
    pub ops: Vec<Op>,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub machine: MachineChoice,
    /// `presets::PRESETS[preset % len]`.
    pub preset: u8,
    /// 1 + cpus % 4.
    pub cpus: u8,
}

#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum MachineChoice {
    /// `pc_layout(8 + mib % 57)`: DMA and DMA32, 8..=64 MiB.
    Pc { mib: u8 },
    /// One zone of `ZoneType::ALL[zone_type % 4]` (no Device), 1 + pages % 16384 frames
    /// (DMA at most 4096), with a reservation inside when `reserve` is non-zero.
    Single { zone_type: u8, pages: u16, reserve: u16 },
    /// Node 0: DMA and DMA32 (with an unaligned hole); node 1: Normal and Movable. CPUs:
    /// `split % (cpus + 1)` on node 0, the rest on node 1 (a node may have none).
    TwoNodes { split: u8, hole: u16 },
    /// `1 + nodes % 2` nodes, each one Normal zone of two minimum arenas and `pages % 8192`
    /// frames more, the CPUs split evenly (node 0 takes the odd one): the `pagealloc` preset
    /// cuts each node with two CPUs or more into per-CPU arenas.
    Arenas { nodes: u8, pages: u16 },
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    Kernel,
    UserMovable,
    Reclaimable,
    Atomic,
    Nowait,
    Dma32,
    Dma,
    /// Any combination: highest zone `ALL[highest_zone % 5]` (Device included), migratetype
    /// `ALL[migratetype % 6]` (the unmergeable ones included), node `node % 4`.
    Custom {
        highest_zone: u8,
        migratetype: u8,
        high_priority: bool,
        may_reclaim: bool,
        wake_kswapd: bool,
        node: Option<u8>,
    },
}

#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Order: raw % 11 below 0xF0, else 11 + raw % 16 (too large).
    Alloc {
        order: u8,
        req: Req,
    },
    /// `alloc_layout` with `size` bytes aligned to 2^(align_log2 % 32).
    AllocLayout {
        size: u32,
        align_log2: u8,
        req: Req,
    },
    /// `alloc_owned`, checked, then dropped (which frees it).
    AllocOwned {
        order: u8,
        req: Req,
    },
    Free {
        pick: u16,
    },
    FreeNewest,
    AllocBulk {
        order: u8,
        req: Req,
        count: u8,
    },
    /// Frees up to `count` held blocks from `pick` on, with `free_bulk`.
    FreeBulk {
        pick: u16,
        count: u8,
    },
    DrainLocal,
    DrainAll,
    CpuOffline {
        cpu: u8,
    },
    /// Advances the clock by `advance_ms`, then runs the current CPU's due work.
    Tick {
        advance_ms: u16,
    },
    /// Advances the clock, then runs every CPU's due work.
    TickAll {
        advance_ms: u16,
    },
    /// One vmstat pass of the current CPU, whatever the schedule.
    VmstatTick,
    /// Allocates until the first failure.
    Pressure {
        order: u8,
        req: Req,
    },
    SetCpu {
        cpu: u8,
    },
    /// Allocates a block from a second allocator of the same layout and frees it here.
    ForeignFree {
        order: u8,
        movable: bool,
    },
    Check,
}

/// The header, then operations until the data runs out or `MAX_OPS` are read.
impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let header = Header::arbitrary(u)?;
        let mut ops = Vec::new();
        while !u.is_empty() && ops.len() < MAX_OPS {
            ops.push(Op::arbitrary(u)?);
        }
        Ok(Input { header, ops })
    }

    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}

pub fn order_of(raw: u8) -> u8 {
    if raw < 0xF0 {
        raw % (MAX_ORDER + 1)
    } else {
        MAX_ORDER + 1 + (raw & 0x0F)
    }
}

impl Req {
    pub fn request(self) -> AllocRequest {
        match self {
            Req::Kernel => AllocRequest::KERNEL,
            Req::UserMovable => AllocRequest::USER_MOVABLE,
            Req::Reclaimable => AllocRequest::RECLAIMABLE,
            Req::Atomic => AllocRequest::ATOMIC,
            Req::Nowait => AllocRequest::NOWAIT,
            Req::Dma32 => AllocRequest::DMA32,
            Req::Dma => AllocRequest::DMA,
            Req::Custom { highest_zone, migratetype, high_priority, may_reclaim, wake_kswapd, node } => AllocRequest {
                highest_zone: ZoneType::ALL[usize::from(highest_zone) % ZoneType::ALL.len()],
                migratetype: MigrateType::ALL[usize::from(migratetype) % MigrateType::ALL.len()],
                high_priority,
                may_reclaim,
                wake_kswapd,
                node: node.map(|node| u16::from(node % 4)),
                no_retry: false,
            },
        }
    }
}

// Encoders: field by field, in declaration order, as `arbitrary`'s derive decodes.

impl Encode for Input {
    fn encode(&self, out: &mut Vec<u8>) {
        let Input { header, ops } = self;
        header.encode(out);
        for op in ops {
            op.encode(out);
        }
    }
}

encode_struct!(Header { machine, preset, cpus });

impl Encode for MachineChoice {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MachineChoice::Pc { mib } => variant(out, 0, 4, &[mib]),
            MachineChoice::Single { zone_type, pages, reserve } => variant(out, 1, 4, &[zone_type, pages, reserve]),
            MachineChoice::TwoNodes { split, hole } => variant(out, 2, 4, &[split, hole]),
            MachineChoice::Arenas { nodes, pages } => variant(out, 3, 4, &[nodes, pages]),
        }
    }
}

impl Encode for Req {
    fn encode(&self, out: &mut Vec<u8>) {
        let simple = [Req::Kernel, Req::UserMovable, Req::Reclaimable, Req::Atomic, Req::Nowait, Req::Dma32, Req::Dma];
        match self {
            Req::Custom { highest_zone, migratetype, high_priority, may_reclaim, wake_kswapd, node } => {
                variant(out, 7, 8, &[highest_zone, migratetype, high_priority, may_reclaim, wake_kswapd, node]);
            }
            simple_req => variant(out, simple.iter().position(|r| r == simple_req).expect("simple request"), 8, &[]),
        }
    }
}

impl Encode for Op {
    fn encode(&self, out: &mut Vec<u8>) {
        const COUNT: usize = 17;
        match self {
            Op::Alloc { order, req } => variant(out, 0, COUNT, &[order, req]),
            Op::AllocLayout { size, align_log2, req } => variant(out, 1, COUNT, &[size, align_log2, req]),
            Op::AllocOwned { order, req } => variant(out, 2, COUNT, &[order, req]),
            Op::Free { pick } => variant(out, 3, COUNT, &[pick]),
            Op::FreeNewest => variant(out, 4, COUNT, &[]),
            Op::AllocBulk { order, req, count } => variant(out, 5, COUNT, &[order, req, count]),
            Op::FreeBulk { pick, count } => variant(out, 6, COUNT, &[pick, count]),
            Op::DrainLocal => variant(out, 7, COUNT, &[]),
            Op::DrainAll => variant(out, 8, COUNT, &[]),
            Op::CpuOffline { cpu } => variant(out, 9, COUNT, &[cpu]),
            Op::Tick { advance_ms } => variant(out, 10, COUNT, &[advance_ms]),
            Op::TickAll { advance_ms } => variant(out, 11, COUNT, &[advance_ms]),
            Op::VmstatTick => variant(out, 12, COUNT, &[]),
            Op::Pressure { order, req } => variant(out, 13, COUNT, &[order, req]),
            Op::SetCpu { cpu } => variant(out, 14, COUNT, &[cpu]),
            Op::ForeignFree { order, movable } => variant(out, 15, COUNT, &[order, movable]),
            Op::Check => variant(out, 16, COUNT, &[]),
        }
    }
}
