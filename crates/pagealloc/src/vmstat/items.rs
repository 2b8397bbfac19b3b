//! The counters vmstat keeps, named as /proc/vmstat names them.

/// A NUMA event counter (mirrors enum numa_stat_item). Every allocation counts one of hit
/// or miss and one of local or other on the zone it came from; a miss also counts foreign
/// on the zone it preferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NumaEvent {
    /// Allocated on the preferred node.
    Hit = 0,
    /// Allocated here although another node was preferred.
    Miss = 1,
    /// Preferred here but allocated on another node.
    Foreign = 2,
    /// An interleave-policy allocation that landed on its intended node. This allocator has
    /// no memory policies, so nothing counts it; it is kept for the dump's fidelity.
    InterleaveHit = 3,
    /// Allocated on the node of the allocating CPU.
    Local = 4,
    /// Allocated on another node than the allocating CPU's.
    Other = 5,
}

impl NumaEvent {
    pub const COUNT: usize = 6;
    pub const ALL: [NumaEvent; NumaEvent::COUNT] = [
        NumaEvent::Hit,
        NumaEvent::Miss,
        NumaEvent::Foreign,
        NumaEvent::InterleaveHit,
        NumaEvent::Local,
        NumaEvent::Other,
    ];

    #[inline(always)]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The /proc/vmstat line name.
    pub fn vmstat_name(self) -> &'static str {
        match self {
            NumaEvent::Hit => "numa_hit",
            NumaEvent::Miss => "numa_miss",
            NumaEvent::Foreign => "numa_foreign",
            NumaEvent::InterleaveHit => "numa_interleave",
            NumaEvent::Local => "numa_local",
            NumaEvent::Other => "numa_other",
        }
    }
}

/// Where an allocation landed relative to the preferred node and the allocating CPU's node
/// (what zone_statistics() derives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumaPlacement {
    /// The zone is on the preferred node.
    pub hit: bool,
    /// The zone is on the allocating CPU's node.
    pub local: bool,
}

impl NumaPlacement {
    /// The two events the allocating zone counts.
    #[inline(always)]
    pub fn events(self) -> [NumaEvent; 2] {
        [
            if self.hit { NumaEvent::Hit } else { NumaEvent::Miss },
            if self.local { NumaEvent::Local } else { NumaEvent::Other },
        ]
    }
}
