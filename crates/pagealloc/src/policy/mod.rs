//! Every behaviour of the two PCP seed series as a switch, and named presets that reproduce
//! each stage (see `presets`). A `Policy` is plain data: copy it, tweak one field, compare.

mod frag;
mod lru;
mod pcp;
mod vmstat;

pub use frag::{BoostRule, FallbackDesign, FragBeyondLinux, FragPolicy};
pub use lru::{LruCommit, LruConfig};
pub use pcp::{DrainBeyondLinux, DrainPolicy, FreeHighRule, FreeSizing, HighMaxRule, PcpPolicy};
pub use vmstat::{FreePagesCount, NumaStats, VmstatPolicy};

/// Allocator behaviour: the pageset switches, the vmstat switches, the configuration of
/// clients' LRU lists, and fragmentation avoidance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Policy {
    pub pcp: PcpPolicy,
    pub vmstat: VmstatPolicy,
    pub lru: LruConfig,
    pub frag: FragPolicy,
    pub arenas: ArenaRule,
}

impl Policy {
    /// The first switch set to act where it cannot, with why, or `None`. A policy with such
    /// a switch would run, and measure, without it; the builder refuses it. Switches at
    /// their neutral value (off, 0, mainline's) are never inert. Pageset switches under
    /// `pcp.enabled = false` are not checked: they describe pagesets the policy turns off.
    pub fn inert_switch(&self) -> Option<&'static str> {
        let (pcp, frag) = (&self.pcp, &self.frag);
        let drain = &pcp.drain;
        let per_cpu_arenas = self.arenas == ArenaRule::PerCpu;
        let rules: [(bool, &'static str); 7] = [
            (
                pcp.enabled && drain.beyond_linux.coalesce_runs && drain.two_pass,
                "drain.coalesce_runs needs single-pass drains, and drain.two_pass is on",
            ),
            (
                pcp.enabled && pcp.free_high_capped && pcp.free_high == FreeHighRule::Off,
                "free_high_capped caps free_high drains, and free_high is off",
            ),
            (
                pcp.enabled && pcp.thp_batch_shift != 0 && pcp.thp_lists == 0,
                "thp_batch_shift sizes the THP lists' refills, and thp_lists is 0",
            ),
            (
                pcp.enabled && drain.beyond_linux.warm_merges && !(frag.beyond_linux.fullest_first || per_cpu_arenas),
                "drain.warm_merges warms buddy-bound flushes, and with neither fullest-first \
                 placement nor per-CPU arenas there are none",
            ),
            (
                pcp.enabled && drain.beyond_linux.hand_remote_frees && !per_cpu_arenas,
                "drain.hand_remote_frees hands frees to another CPU's arena, and arenas are per node",
            ),
            (
                frag.beyond_linux.buddy_bound_free_pages != FragBeyondLinux::OFF.buddy_bound_free_pages
                    && !frag.beyond_linux.fullest_first,
                "frag.buddy_bound_free_pages belongs to fullest-first placement, which is off",
            ),
            (
                frag.beyond_linux.parked_frees && !frag.beyond_linux.fullest_first,
                "frag.parked_frees counts parked pages with fullest-first's, which is off",
            ),
        ];
        rules.into_iter().find(|&(inert, _)| inert).map(|(_, why)| why)
    }
}

/// How a machine's memory is divided among its CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArenaRule {
    /// Each node's zones serve all its CPUs, one zone lock each (Linux).
    PerNode,
    /// Beyond Linux (the `pagealloc` preset): a single-node machine's zones are cut into one
    /// arena per CPU (at most 8, and at most one per `builder::MIN_ARENA_PAGES`; more CPUs
    /// share them round robin), each arena a node of its
    /// own, as `numa=fake` cuts them. A CPU allocates from its arena first; each arena has
    /// its own zone lock; a free into another CPU's arena goes to that arena's buddy
    /// (batched on the buddy-bound list), not to a remote pageset. Multi-node
    /// descriptions keep their nodes.
    PerCpu,
}
